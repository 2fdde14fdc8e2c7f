#!/usr/bin/env bash
# Capture with the real binaries (docs/operations.md, "Capture"): slicestream-server with
# --capture-dir, 'slicestream-ctl capture start|stop|status' around a simulated scan, then
# 'slicestream-detector replay hdf5' of the file: the one-shot slice of the replayed scan has
# bit-identical pixels to the original's (the TIFFs differ only in the scan id they carry).
# Refusals: a bad label (INVALID_ARGUMENT) and a server without a capture directory
# (FAILED_PRECONDITION).
#   capture_smoke_test.sh SERVER CTL DETECTOR
set -euo pipefail

server_bin=$1
ctl_bin=$2
detector_bin=$3

work=$(mktemp -d /tmp/slicestream-capture-smoke.XXXXXX)
ctl=("$ctl_bin" --requests "ipc://$work/requests" --slices "ipc://$work/slices")
server_pid=""

source "$(dirname "$0")/smoke_support.sh"

start_server() {
  "$server_bin" --backend cpu --threads 2 --data "ipc://$work/data" --slices "ipc://$work/slices" \
    --requests "ipc://$work/requests" --slice-size 32 --preview-size 0 --stats-interval 0 "$@" \
    >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 50); do
    if "${ctl[@]}" --timeout 0.5 status >/dev/null 2>&1; then return; fi
    kill -0 "$server_pid" 2>/dev/null || fail "the server exited at start"
  done
  fail "the server does not answer"
}

stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid" || fail "the server exited with $? after SIGTERM"
  server_pid=""
}

detector=(--data "ipc://$work/data" --requests "ipc://$work/requests" --fps 0 --quiet)
slice=(slice --orientation 10,0,0,0,10,0,-5,-5,0 --size 40,40)

# Without a capture directory SetCapture is refused with the flag to use.
start_server
status=0
"${ctl[@]}" capture start >"$work/out.txt" 2>&1 || status=$?
[[ $status -eq 2 ]] && grep -q "FAILED_PRECONDITION" "$work/out.txt" && grep -q -- "--capture-dir" "$work/out.txt" \
  || fail "capture without a directory ($status): $(cat "$work/out.txt")"
"${ctl[@]}" capture status | grep -q "capture: off" || fail "capture status without a directory"
stop_server

start_server --capture-dir "$work/captures"
"${ctl[@]}" capture status | grep -q "capture: idle" || fail "capture status: idle"
status=0
"${ctl[@]}" capture start --label "../../etc" >"$work/out.txt" 2>&1 || status=$?
[[ $status -eq 2 ]] && grep -q "bad_value" "$work/out.txt" || fail "a bad label: $(cat "$work/out.txt")"
"${ctl[@]}" capture start --label smoke | grep -q "recording from the next scan" || fail "capture start"
"$detector_bin" simulate "${detector[@]}" --scan-id 61 --preset flexray --rows 48 --cols 64 \
  --projections-per-rotation 40 --frames 60 --darks 2 --flats 2 --noise >"$work/detector.txt" \
  || fail "the detector failed: $(cat "$work/detector.txt")"
"${ctl[@]}" capture stop >"$work/stop.txt" || fail "capture stop"
"${ctl[@]}" "${slice[@]}" --out "$work/original.tiff" >/dev/null || fail "slice of the original"
capture=$(ls "$work"/captures/scan-61-*-smoke.h5) || fail "no capture file: $(ls "$work/captures")"
for _ in $(seq 100); do
  "${ctl[@]}" capture status >"$work/capture.txt"
  grep -q "files finished 1, frames written 64 " "$work/capture.txt" && break
  sleep 0.1
done
grep -q "files finished 1, frames written 64 .*dropped 0" "$work/capture.txt" \
  || fail "capture status after the scan: $(cat "$work/capture.txt")"

"$detector_bin" replay hdf5 "$capture" "${detector[@]}" --scan-id 62 >"$work/replay.txt" 2>&1 \
  || fail "replay of the capture: $(cat "$work/replay.txt")"
grep -q "confirmed: the server ended scan 62 with all 64 frames" "$work/replay.txt" \
  || fail "the replay was not confirmed: $(cat "$work/replay.txt")"
"${ctl[@]}" "${slice[@]}" --out "$work/replayed.tiff" >/dev/null || fail "slice of the replay"
# Bit-exact pixels; the TIFFs' metadata differ only in the scan id (61 and 62, the same length).
python3 - "$work/original.tiff" "$work/replayed.tiff" <<'PY' || fail "the replayed scan's slice differs"
import sys
original, replayed = (open(path, "rb").read() for path in sys.argv[1:])
sys.exit(original.replace(b'"scan_id": 61', b'"scan_id": 62') != replayed)
PY
stop_server
echo "capture smoke test passed"

#!/usr/bin/env bash
# Runs the real binaries together on ipc:// endpoints in a temporary directory:
# slicestream-server, slicestream-ctl and (when built) slicestream-detector. Checks replies,
# error exit codes, a short simulated scan reconstructed and saved as images, the automatic
# residual of the cone-beam scan's central slice, refinement of a parallel-beam scan's axial slice
# switched on with 'slicestream-ctl refine' (saved by watch, residuals in status), and a clean
# drain on SIGTERM (exit status 0).
#   binaries_smoke_test.sh SERVER CTL [DETECTOR]
set -euo pipefail

server_bin=$1
ctl_bin=$2
detector_bin=${3:-}

work=$(mktemp -d /tmp/slicestream-smoke.XXXXXX)
data=ipc://$work/data
slices=ipc://$work/slices
requests=ipc://$work/requests
ctl=("$ctl_bin" --requests "$requests" --slices "$slices" --timeout 10)
server_pid=""

source "$(dirname "$0")/smoke_support.sh"

# Runs a command that must fail with the given exit status.
expect_status() {
  local expected=$1
  shift
  local status=0
  "$@" >"$work/out.txt" 2>&1 || status=$?
  [[ $status -eq $expected ]] || { cat "$work/out.txt"; fail "'$*' exited $status, expected $expected"; }
}

"$server_bin" --version | grep -q "slicestream-server" || fail "--version"

"$server_bin" --backend cpu --threads 2 --data "$data" --slices "$slices" --requests "$requests" \
  --http 127.0.0.1:0 --slice-size 64 --preview-size 16 --stats-interval 1 --log-level info >"$work/server.log" 2>&1 &
server_pid=$!

for _ in $(seq 50); do
  if "${ctl[@]}" --timeout 0.5 status >/dev/null 2>&1; then break; fi
  kill -0 "$server_pid" 2>/dev/null || fail "the server exited at start"
done
"${ctl[@]}" status >"$work/status.txt" || fail "status"
grep -q "^backend   cpu" "$work/status.txt" || { cat "$work/status.txt"; fail "status output"; }
"${ctl[@]}" status --json | grep -q '"backend": "cpu"' || fail "status --json"

# Parameters: set one half of the filter, then the other; both stick.
"${ctl[@]}" params --filter hann >/dev/null || fail "params --filter"
"${ctl[@]}" params --filter-cutoff 0.8 >"$work/params.txt" || fail "params --filter-cutoff"
grep -q "filter           hann (cutoff 0.8" "$work/params.txt" || { cat "$work/params.txt"; fail "params"; }
"${ctl[@]}" params --filter ram-lak --filter-cutoff 1 >/dev/null || fail "params reset"

# Errors: the server's answers come back with their message and exit status 2; bad arguments
# never reach it.
expect_status 2 "${ctl[@]}" remove-slice --id 77
grep -q "NOT_FOUND" "$work/out.txt" || fail "remove-slice message: $(cat "$work/out.txt")"
expect_status 2 "${ctl[@]}" slice --orientation 64,0,0,0,64,0,-32,-32,0 --size 32,32 --out "$work/x.png"
grep -q "FAILED_PRECONDITION" "$work/out.txt" || fail "slice before a scan: $(cat "$work/out.txt")"
expect_status 2 "${ctl[@]}" set-slice --id 5 --orientation 1,0,0,2,0,0,0,0,0 --size 8,8
grep -q "bad_orientation" "$work/out.txt" || fail "parallel axes: $(cat "$work/out.txt")"
expect_status 105 "${ctl[@]}" slice --orientation 1,2,3 --size 8,8 --out "$work/x.png"
expect_status 3 "$ctl_bin" --requests "ipc://$work/nobody" --timeout 0.3 status

if [[ -n $detector_bin ]]; then
  "${ctl[@]}" watch --out-dir "$work/watch" --timeout 20 --format png,tiff >"$work/watch.txt" 2>&1 &
  watch_pid=$!
  sleep 0.5
  "$detector_bin" simulate --data "$data" --requests "$requests" --fps 0 --quiet --scan-id 42 \
    --projections-per-rotation 60 --preset flexray --rows 48 --cols 64 --rotations 2 \
    --darks 2 --flats 2 >"$work/detector.txt" || fail "the detector failed"
  grep -q "confirmed: the server ended scan 42 with all 124 frames" "$work/detector.txt" \
    || { cat "$work/detector.txt"; fail "the detector's summary lacks the confirmation"; }
  # The detector returns once the server has confirmed the scan's end: no waiting here.
  "${ctl[@]}" status --json >"$work/status.json"
  grep -q '"scanState": "ended"' "$work/status.json" \
    || { cat "$work/status.json"; fail "the scan had not ended when the detector returned"; }
  grep -q '"projections_integrated": "120"' "$work/status.json" \
    || { cat "$work/status.json"; fail "not every projection was integrated"; }
  # A server that does not answer on the requests endpoint: a clear message and a non-zero
  # status before anything is sent; --no-confirm streams without asking.
  expect_status 1 "$detector_bin" simulate --data "$data" --requests "ipc://$work/nobody" \
    --confirm-timeout 0.3 --fps 0 --quiet --scan-id 43 --projections-per-rotation 4 \
    --rows 8 --cols 8 --frames 4 --darks 0 --flats 0
  grep -q "requests endpoint ipc://$work/nobody does not answer" "$work/out.txt" \
    || fail "unreachable requests endpoint: $(cat "$work/out.txt")"
  "${ctl[@]}" slice --id 2 --out "$work/axial.png" --out "$work/axial.tiff" || fail "slice --id 2"
  [[ -s $work/axial.png && -s $work/axial.tiff ]] || fail "slice images missing"
  # The whole box saved from the window, chunk by chunk: HDF5 and a TIFF stack.
  "${ctl[@]}" volume --voxel 4 --chunk-mb 0.01 --out "$work/volume.h5" >"$work/out.txt" 2>&1 \
    || fail "volume to HDF5: $(cat "$work/out.txt")"
  grep -q "wrote $work/volume.h5 (HDF5" "$work/out.txt" || fail "volume message: $(cat "$work/out.txt")"
  grep -q "volume: .* planes (100 %)" "$work/out.txt" || fail "volume progress: $(cat "$work/out.txt")"
  [[ -s $work/volume.h5 ]] || fail "volume.h5 missing"
  "${ctl[@]}" volume --size 16,16,4 --out "$work/stack" >"$work/out.txt" 2>&1 \
    || fail "volume to TIFF: $(cat "$work/out.txt")"
  [[ -s $work/stack/plane_0003.tiff ]] || fail "TIFF stack incomplete: $(ls "$work/stack")"
  # status names the scan's geometry and box.
  "${ctl[@]}" status >"$work/status0.txt"
  grep -q "last frame .* ago" "$work/status0.txt" || { cat "$work/status0.txt"; fail "status lacks the last frame"; }
  grep -q "box      \[" "$work/status0.txt" || { cat "$work/status0.txt"; fail "status lacks the box"; }
  kill -TERM "$watch_pid"
  wait "$watch_pid" || fail "watch exited with $?: $(cat "$work/watch.txt")"
  for id in 0 1 2; do
    [[ -s $work/watch/scan_42/slice_$id.png && -s $work/watch/scan_42/slice_$id.tiff ]] \
      || { cat "$work/watch.txt"; fail "watch did not write slice $id"; }
  done

  # The cone scan's central axial slice (2, in the source plane) is a fan-beam problem: its
  # data-consistency residual is checked without a request, and refinement is accepted.
  for _ in $(seq 100); do
    "${ctl[@]}" status >"$work/status1.txt"
    grep -qE "^ +2: [0-9.e+-]+ \([0-9]+ projections" "$work/status1.txt" && break
    sleep 0.1
  done
  grep -qE "^ +2: [0-9.e+-]+ \([0-9]+ projections" "$work/status1.txt" \
    || { cat "$work/status1.txt"; fail "no automatic residual of the cone scan's central slice"; }
  grep -qE "^ +0: unavailable \(not_axial\)" "$work/status1.txt" \
    || { cat "$work/status1.txt"; fail "slice 0 does not say why it has no residual"; }
  "${ctl[@]}" refine --slice 2 --iterations 5 >"$work/out.txt" 2>&1 \
    || fail "refine the cone scan's central slice: $(cat "$work/out.txt")"
  "${ctl[@]}" refine --slice 2 --off | grep -q "switched off" || fail "refine --off (cone)"

  # Refinement of the axial slice of a parallel-beam scan, switched on from the ctl.
  expect_status 2 "${ctl[@]}" refine --slice 0 --iterations 5
  grep -q "not_axial" "$work/out.txt" || fail "refine a y-z slice: $(cat "$work/out.txt")"
  expect_status 2 "${ctl[@]}" refine --slice 77
  grep -q "unknown_slice" "$work/out.txt" || fail "refine an unknown slice: $(cat "$work/out.txt")"
  # This watcher takes slices and refined slices over the fp16 topics.
  "${ctl[@]}" watch --out-dir "$work/refined" --timeout 20 --format png,tiff --no-preview --fp16 \
    >"$work/watch2.txt" 2>&1 &
  watch_pid=$!
  sleep 0.5
  # Slow enough (1.8 s) for the refinement to be switched on during the first rotation.
  "$detector_bin" simulate --data "$data" --requests "$requests" --fps 100 --quiet --scan-id 43 --preset flexray \
    --geometry parallel --projections-per-rotation 60 --rows 16 --cols 64 --rotations 3 \
    --darks 2 --flats 2 &
  detector_pid=$!
  for _ in $(seq 100); do
    "${ctl[@]}" refine --slice 2 --iterations 5 --interval 0.2 >"$work/refine.txt" 2>&1 && break
    sleep 0.05
  done
  grep -q "at most 5 fista iterations" "$work/refine.txt" || fail "refine --slice 2: $(cat "$work/refine.txt")"
  wait "$detector_pid" || fail "the parallel-beam detector failed"
  for _ in $(seq 100); do
    "${ctl[@]}" status >"$work/status2.txt"
    grep -q "residual FBP" "$work/status2.txt" && grep -q "scan      43 ended" "$work/status2.txt" \
      && break
    sleep 0.1
  done
  grep -q "residual FBP" "$work/status2.txt" || { cat "$work/status2.txt"; fail "no residual in status"; }
  for _ in $(seq 100); do
    [[ -s $work/refined/scan_43/refined_2.png && -s $work/refined/scan_43/refined_2.tiff ]] && break
    sleep 0.1
  done
  kill -TERM "$watch_pid"
  wait "$watch_pid" || fail "watch exited with $?: $(cat "$work/watch2.txt")"
  [[ -s $work/refined/scan_43/refined_2.png && -s $work/refined/scan_43/refined_2.tiff ]] \
    || { cat "$work/watch2.txt"; fail "watch did not write the refined slice"; }
  grep -q "refined slice 2: residual" "$work/watch2.txt" || { cat "$work/watch2.txt"; fail "watch output"; }
  "${ctl[@]}" refine --slice 2 --off | grep -q "switched off" || fail "refine --off"
  # reset-slices brings the defaults back (last: re-placed slices have no sinogram rows of the
  # ended scan for the residual checks above).
  "${ctl[@]}" set-slice --id 9 --orientation 64,0,0,0,64,0,-32,-32,0 --size 8,8 >/dev/null \
    || fail "set-slice 9"
  "${ctl[@]}" reset-slices >"$work/out.txt" 2>&1 || fail "reset-slices: $(cat "$work/out.txt")"
  grep -q "removed 0, 1, 2, 9; default slices 0, 1, 2 placed" "$work/out.txt" \
    || fail "reset-slices message: $(cat "$work/out.txt")"
fi

kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
server_pid=""
[[ $status -eq 0 ]] || fail "the server exited with $status after SIGTERM"
grep -q "server stopped" "$work/server.log" || fail "no drain message in the log"
# Changes of what the server reconstructs are in its log at info level, with their values.
if [[ -n $detector_bin ]]; then
  grep -qE "set_refinement \(request [0-9]+ on the requests endpoint\): ok: slice 2: at most 5 fista iterations" "$work/server.log" \
    || fail "the refinement request is not in the log: $(grep -i refine "$work/server.log")"
fi
echo "binaries smoke test passed"

#!/usr/bin/env bash
# On the GPU machine, from a bundle made by scripts/device-run that holds slicestream-server,
# slicestream-ctl and slicestream-detector: checks that the server picks the GPU by itself
# (--backend auto, the default), streams a parallel-beam FleX-ray-sized scan into it, switches on
# the refinement of the axial default slice with slicestream-ctl (Tensor Core CGLS on the GPU)
# and prints the status with its residuals; then the same with a cone-beam scan, whose central
# slice is refined as a fan-beam problem. Logs go to $OUT.
#   cd .device-bundle/<bundle> && ../../scripts/device-server-check.sh
set -uo pipefail
out=${OUT:-/tmp/device-out}
mkdir -p "$out"
cufft=$(ldconfig -p | awk '/libcufft.so.12 /{print $NF; exit}')
export LD_LIBRARY_PATH="$PWD:/usr/local/cuda/lib64:$(dirname "${cufft:-/x/x}"):${LD_LIBRARY_PATH:-}"
fail() { echo "server check: $*" >&2; exit 1; }

# One server per scan: the GPU picked by itself, a FleX-ray-sized scan streamed in, the axial
# default slice refined through slicestream-ctl (for a cone-beam scan its central slice, posed as
# a fan-beam problem), and the automatic data-consistency checks of the live slices in the status.
check_scan() {
  local geometry=$1 scan_id=$2
  ./slicestream-server >"$out/server-$geometry.log" 2>&1 &
  server=$!
  trap 'kill -TERM "$server" 2>/dev/null' EXIT
  for _ in $(seq 100); do ./slicestream-ctl status >"$out/status0.txt" 2>&1 && break; sleep 0.1; done
  grep -i "backend" "$out/status0.txt" | head -2
  expect=${EXPECT_BACKEND:-cuda}  # cpu: a dry run of this script on a machine without a GPU
  grep -qi "backend.*$expect" "$out/status0.txt" || fail "the server did not pick $expect"

  ./slicestream-detector simulate --preset flexray --geometry "$geometry" --rotations 3 --fps 100 \
    --quiet --scan-id "$scan_id" >"$out/detector-$geometry.txt" 2>&1 &
  detector=$!
  for _ in $(seq 200); do
    ./slicestream-ctl refine --slice 2 --iterations 10 --interval 0.5 >"$out/refine.txt" 2>&1 && break
    sleep 0.05
  done
  cat "$out/refine.txt"
  wait "$detector" || { cat "$out/detector-$geometry.txt"; fail "the detector failed ($geometry)"; }
  tail -2 "$out/detector-$geometry.txt"
  # The system matrix is built once (seconds on the CPU), then every refinement is quick.
  for _ in $(seq 120); do
    ./slicestream-ctl status >"$out/status-$geometry.txt" 2>&1
    grep -q "residual FBP" "$out/status-$geometry.txt" && break
    sleep 0.5
  done
  cat "$out/status-$geometry.txt"
  grep -q "residual FBP" "$out/status-$geometry.txt" ||
    fail "no refinement residuals in the status ($geometry)"
  grep -q "data consistency of the live slices" "$out/status-$geometry.txt" ||
    fail "no automatic data-consistency checks in the status ($geometry)"
  kill -TERM "$server"
  wait "$server"
  status=$?
  [ "$status" = 0 ] || { tail -5 "$out/server-$geometry.log"; fail "the server exited with $status on SIGTERM"; }
  trap - EXIT
}

check_scan parallel 7
check_scan cone 8
echo "server check: ok"

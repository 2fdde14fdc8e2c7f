#!/usr/bin/env bash
# On the GPU machine, from a bundle made by scripts/device-run that holds slicestream-server,
# slicestream-ctl and slicestream-detector: checks that the server picks the GPU by itself
# (--backend auto, the default), streams a parallel-beam FleX-ray-sized scan into it, switches on
# the refinement of the axial default slice with slicestream-ctl (Tensor Core CGLS on the GPU)
# and prints the status with its residuals. Logs go to $OUT.
#   cd .device-bundle/<bundle> && ../../scripts/device-server-check.sh
set -uo pipefail
out=${OUT:-/tmp/device-out}
mkdir -p "$out"
cufft=$(ldconfig -p | awk '/libcufft.so.12 /{print $NF; exit}')
export LD_LIBRARY_PATH="$PWD:/usr/local/cuda/lib64:$(dirname "${cufft:-/x/x}"):${LD_LIBRARY_PATH:-}"
fail() { echo "server check: $*" >&2; exit 1; }

./slicestream-server >"$out/server.log" 2>&1 &
server=$!
trap 'kill -TERM "$server" 2>/dev/null' EXIT
for _ in $(seq 100); do ./slicestream-ctl status >"$out/status0.txt" 2>&1 && break; sleep 0.1; done
grep -i "backend" "$out/status0.txt" | head -2
expect=${EXPECT_BACKEND:-cuda}  # cpu: a dry run of this script on a machine without a GPU
grep -qi "backend.*$expect" "$out/status0.txt" || fail "the server did not pick $expect"

./slicestream-detector simulate --preset flexray --geometry parallel --rotations 3 --fps 100 \
  --quiet --scan-id 7 >"$out/detector.txt" 2>&1 &
detector=$!
for _ in $(seq 200); do
  ./slicestream-ctl refine --slice 2 --iterations 10 --interval 0.5 >"$out/refine.txt" 2>&1 && break
  sleep 0.05
done
cat "$out/refine.txt"
wait "$detector" || { cat "$out/detector.txt"; fail "the detector failed"; }
tail -2 "$out/detector.txt"
# The system matrix is built once (seconds on the CPU), then every refinement is quick.
for _ in $(seq 120); do
  ./slicestream-ctl status >"$out/status.txt" 2>&1
  grep -q "residual FBP" "$out/status.txt" && break
  sleep 0.5
done
cat "$out/status.txt"
grep -q "residual FBP" "$out/status.txt" || fail "no refinement residuals in the status"
kill -TERM "$server"
wait "$server"
status=$?
[ "$status" = 0 ] || { tail -5 "$out/server.log"; fail "the server exited with $status on SIGTERM"; }
echo "server check: ok"

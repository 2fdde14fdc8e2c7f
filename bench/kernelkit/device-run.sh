#!/usr/bin/env bash
# The device call of bench/kernelkit (README.md), on the GPU machine from the main checkout's root:
# KernelKit's tuned quasi-3D runner and our cuda_bench --quick side by side, then ncu profiles of
# our Tomobank full recompute (hardware-texture path: the three launches of one timed run) and of
# KernelKit's tuned Tomobank recompute. Each step is bounded so that the whole ends within the
# budget; a step that fails or times out does not stop the others.
#
#   .device-bundle/kernelkit/device-run.sh [--cuda-bundle DIR] [--budget-s S] [--no-ncu]
#                                          [--runner-args "ARGS"]
#
# --cuda-bundle is a bundle made by scripts/device-run holding cuda_bench (default
# .device-bundle/baseline). Writes into $OUT (the run tool returns at most eight files):
# gpu.txt, kernelkit_quasi3d.json, kernelkit_quasi3d.log, cuda_bench.json, cuda_bench.log,
# ncu_tomobank.txt, side_by_side.md, steps.log.
set -uo pipefail
bundle=$(cd "$(dirname "$0")" && pwd)
cuda_bundle=.device-bundle/baseline
budget=540
ncu_on=1
runner_args=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda-bundle) cuda_bundle=$2; shift 2 ;;
    --budget-s) budget=$2; shift 2 ;;
    --no-ncu) ncu_on=0; shift ;;
    --runner-args) runner_args=$2; shift 2 ;;
    *) echo "device-run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
cuda_bundle=$(cd "$cuda_bundle" && pwd)
out=${OUT:-/tmp/device-out}
mkdir -p "$out"
started=$(date +%s)
export PYTHONUNBUFFERED=1

# step NAME CAP RESERVE COMMAND: runs COMMAND (a bash string) for at most CAP seconds and never
# into the last RESERVE seconds of the budget (kept for the steps after it).
step() {
  local name=$1 cap=$2 reserve=$3 command=$4
  local limit=$((budget - ($(date +%s) - started) - reserve))
  ((limit > cap)) && limit=$cap
  if ((limit < 10)); then
    echo "$name: skipped, no time left" | tee -a "$out/steps.log"
    return
  fi
  local t0
  t0=$(date +%s)
  timeout --kill-after=10 "$limit" bash -c "$command"
  echo "$name: exit $? after $(($(date +%s) - t0)) s (limit $limit s)" | tee -a "$out/steps.log"
}

cufft=$(ldconfig -p | awk '/libcufft.so.12 /{print $NF; exit}')
[ -n "$cufft" ] ||
  cufft=$(find /usr/local /usr/lib /opt -name 'libcufft.so.12' -print -quit 2>/dev/null)
cuda_libs="$cuda_bundle:/usr/local/cuda/lib64:$(dirname "${cufft:-/x/x}")"
ncu=$(command -v ncu)
for candidate in /opt/nvidia/nsight-compute/*/ncu; do
  [ -n "$ncu" ] || [ ! -x "$candidate" ] || ncu=$candidate
done
metrics=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct
metrics=$metrics,l1tex__t_sector_hit_rate.pct,sm__inst_issued.avg.pct_of_peak_sustained_active
runner="python3 $bundle/kernelkit_quasi3d.py --kernelkit $bundle/lib"

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
  python3 -c 'import cupy, numpy, sys
print("cupy", cupy.__version__, "numpy", numpy.__version__, "python", sys.version.split()[0])'
  echo "ncu: ${ncu:-none}"
} > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"

step kernelkit 260 200 "$runner --json $out/kernelkit_quasi3d.json $runner_args \
  > $out/kernelkit_quasi3d.log 2>&1; status=\$?; tail -25 $out/kernelkit_quasi3d.log; exit \$status"
step cuda_bench 180 100 "cd $cuda_bundle && LD_LIBRARY_PATH=$cuda_libs ./cuda_bench --quick \
  --json $out/cuda_bench.json > $out/cuda_bench.log 2>&1; status=\$?; \
  grep -A 20 'quasi-3D full recompute' $out/cuda_bench.log | head -22; exit \$status"
if [ "$ncu_on" = 1 ] && [ -n "$ncu" ]; then
  # Ours: the first two backprojection launches of cuda_bench --quick --setups tomobank are the
  # warm-up of the default storage's recompute (two launches: 900 sources, at most 480 per
  # launch); the next two are the first timed run.
  step "ncu ours" 100 45 "cd $cuda_bundle && LD_LIBRARY_PATH=$cuda_libs $ncu \
    --kernel-name regex:backproject_kernel --launch-skip 2 --launch-count 2 --set full \
    --import-source no --clock-control none --metrics $metrics ./cuda_bench --quick \
    --setups tomobank --reps 1 --json /tmp/ncu_cuda_bench.json > $out/ncu_tomobank.txt 2>&1"
  step "ncu KernelKit" 60 5 "$ncu --profile-from-start off --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section SchedulerStats --section Occupancy \
    --section LaunchStats --clock-control none --metrics $metrics $runner --profile tomobank \
    --best $out/kernelkit_quasi3d.json >> $out/ncu_tomobank.txt 2>&1"
  grep -E "^  [a-zA-Z_].*\(|Duration|dram__bytes|sector_hit_rate|inst_issued|Issue Slots Busy" \
    "$out/ncu_tomobank.txt" | head -80
fi
python3 "$bundle/side_by_side.py" "$out/kernelkit_quasi3d.json" "$out/cuda_bench.json" \
  > "$out/side_by_side.md" 2>&1
cat "$out/side_by_side.md" "$out/steps.log"

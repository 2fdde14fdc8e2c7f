#!/usr/bin/env bash
# Runs on the GPU machine inside a bundle made by scripts/device-tensorcore.sh: the gathered-kernel
# GPU tests, the 512^2 benchmark of the 16.16.16 products (cuSPARSE beside them), and an ncu
# profile of one forward gathered SpMM with per-instruction counts (SASS, CSV). Leaves
# gathered_tests.log, bench.log, bench.json, gathered_sass.csv and gathered_ncu.txt in $OUT.
# --accuracy adds the CG accuracy measurements to the benchmark (fp32 and the gathered CG).
#   cd .device-bundle/tensorcore && ../../scripts/device-profile-gathered.sh [--no-ncu] [--accuracy]
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
cuda_libs=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 2>/dev/null | tr '\n' ':')
py_libs=$(python3 -c 'import nvidia.cusparse, os; print(os.path.dirname(nvidia.cusparse.__file__) + "/lib")' 2>/dev/null || true)
jit_libs=$(python3 -c 'import nvidia.nvjitlink, os; print(os.path.dirname(nvidia.nvjitlink.__file__) + "/lib")' 2>/dev/null || true)
export LD_LIBRARY_PATH="$PWD:${cuda_libs}${py_libs}:${jit_libs}:${LD_LIBRARY_PATH:-}"
ncu_on=1
accuracy=(--no-accuracy)
for arg in "$@"; do
  case "$arg" in
    --no-ncu) ncu_on=0 ;;
    --accuracy) accuracy=() ;;
  esac
done
bench=(./tensorcore_bench --sizes 512 --shapes 16.16.16 --orderings pseudo-morton)
./tensorcore_gpu_test --gtest_filter='*Gathered*' > "$out/gathered_tests.log" 2>&1
echo "gathered GPU tests exit $?"; grep -E "OK \]|FAILED|Failure" "$out/gathered_tests.log" | head
"${bench[@]}" "${accuracy[@]}" ${BENCH_ARGS:-} --json "$out/bench.json" > "$out/bench.log" 2>&1
echo "bench exit $?"; grep -E "cuSPARSE:|gathered|CG 20" "$out/bench.log"
if [ "$ncu_on" = 1 ]; then
  ncu=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
  rm -f /tmp/gathered.ncu-rep
  "$ncu" -k regex:gathered_spmm_kernel -c 1 --set full --import-source no -o /tmp/gathered \
    "${bench[@]}" --no-accuracy --no-cg --repetitions 1 > /tmp/ncu_bench.log 2>&1
  "$ncu" -i /tmp/gathered.ncu-rep --page source --csv --print-source sass > "$out/gathered_sass.csv"
  "$ncu" -i /tmp/gathered.ncu-rep --page details > "$out/gathered_ncu.txt" 2>&1
  grep -E "Duration|Executed Instructions  |Registers Per|Issue Slots Busy|Warp Cycles Per Issued" \
    "$out/gathered_ncu.txt"
  # The passes around the gathered SpMM (operand scales, fp16 operand rows): durations.
  "$ncu" -k regex:'rows_operand|compute_scales|evaluate' -c 6 --section SpeedOfLight \
    "${bench[@]}" --no-accuracy --no-cg --repetitions 1 2>&1 | grep -E "^  [a-z_:<>]+.*\(|Duration" \
    > "$out/operand_passes.txt"
  cat "$out/operand_passes.txt"
fi

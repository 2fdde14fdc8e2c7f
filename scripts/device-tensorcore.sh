#!/usr/bin/env bash
# Builds the Tensor Core GPU tests and benchmark here (no GPU needed), bundles them into
# <main>/.device-bundle/<bundle> (ignored by git; default /work/main/.device-bundle/tensorcore, the
# checkout the device tool copies) and prints the command for the device tool's `run` (carry:
# [".device-bundle/<bundle>"]). On the device the bundle's run.sh checks the SASS for HMMA, runs
# the GPU tests (the Tensor Core tests and the expression layer's device test, which covers the
# fused CG passes) and the benchmark, and leaves logs and JSON in $OUT.
#   scripts/device-tensorcore.sh [--main DIR] [--bundle NAME] [--build-dir DIR]
#   on the device:  cd .device-bundle/<bundle> && ./run.sh [--quick] [--no-bench] [--no-tests]
# --quick runs the benchmark's accuracy table at every size and its timing tables at 512^2 only
# (tensorcore_bench --quick); BENCH_ARGS adds other benchmark arguments. Environment here: JOBS
# (default 2), BUILD_DIR (default build-device).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
build_dir=${BUILD_DIR:-build-device}
main_dir=/work/main
bundle_name=tensorcore
while [ $# -gt 0 ]; do
  case "$1" in
    --main) main_dir=$2; shift 2 ;;
    --bundle) bundle_name=$2; shift 2 ;;
    --build-dir) build_dir=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "device-tensorcore.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
bundle="$main_dir/.device-bundle/$bundle_name"

# The device machine's CPU may differ from this one: x86-64-v3 instead of native.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLICESTREAM_CUDA=ON \
  -DSLICESTREAM_CPU_ARCH=x86-64-v3 >/dev/null
cmake --build "$build_dir" -j "${JOBS:-2}" --target tensorcore_gpu_test cgls_gpu_test \
  expression_device_test tensorcore_bench

rm -rf "$bundle"
mkdir -p "$bundle"
binaries=(tests/kernels/tensorcore/tensorcore_gpu_test tests/kernels/solvers/cgls_gpu_test
          tests/kernels/expression_device_test bench/tensorcore/tensorcore_bench)
for b in "${binaries[@]}"; do cp "$build_dir/$b" "$bundle/"; done
# Non-glibc shared libraries, except cuSPARSE (160 MB) and the driver (the device's
# CUDA 13 install provides them).
for b in "${binaries[@]}"; do
  ldd "$build_dir/$b" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
    libcusparse.so*|libnvJitLink.so*|libcuda.so*) ;;
    *) cp -L "$lib" "$bundle/" ;;
  esac
done

cat > "$bundle/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs on the device machine from the bundle directory; everything it writes goes to $OUT.
#   ./run.sh [--quick] [--no-bench] [--no-tests]
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp/out}
mkdir -p "$out"
bench_args=${BENCH_ARGS:-}
run_bench=1
run_tests=1
for arg in "$@"; do
  case "$arg" in
    --quick) bench_args="--quick $bench_args" ;;
    --no-bench) run_bench=0 ;;
    --no-tests) run_tests=0 ;;
  esac
done
cuda_libs=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 2>/dev/null | tr '\n' ':')
py_libs=$(python3 -c 'import nvidia.cusparse, os; print(os.path.dirname(nvidia.cusparse.__file__) + "/lib")' 2>/dev/null || true)
jit_libs=$(python3 -c 'import nvidia.nvjitlink, os; print(os.path.dirname(nvidia.nvjitlink.__file__) + "/lib")' 2>/dev/null || true)
export LD_LIBRARY_PATH="$PWD:${cuda_libs}${py_libs}:${jit_libs}:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv > "$out/gpu.txt" 2>&1
ldd ./tensorcore_bench | grep -E "cusparse|cudart|not found" | tee "$out/ldd.txt"
{
  echo "HMMA instructions per kernel (cuobjdump -sass):"
  cuobjdump -sass ./tensorcore_bench 2>/dev/null | awk '/Function :/ {f=$3} /HMMA/ {n[f]++} END {for (k in n) print n[k], k}' | c++filt | sed 's/slicestream::tensorcore::cuda::(anonymous namespace):://' | sort -k2
  echo "HMMA shapes: $(cuobjdump -sass ./tensorcore_bench 2>/dev/null | grep -o 'HMMA\.[0-9A-Z.]*' | sort | uniq -c | tr '\n' ' ')"
  echo "HGMMA: $(cuobjdump -sass ./tensorcore_bench 2>/dev/null | grep -c HGMMA)"
} > "$out/sass.txt" 2>&1
head -30 "$out/sass.txt"
status=0
if [ "$run_tests" = 1 ]; then
  timeout "${TEST_TIMEOUT:-240}" ./expression_device_test > "$out/expression_test.log" 2>&1
  rc=$?; echo "expression_device_test exit $rc"; [ $rc = 0 ] || status=1
  grep -E "Failure|OK \]|PASSED|FAILED|SKIPPED" -A3 "$out/expression_test.log" | head -20
  timeout "${TEST_TIMEOUT:-240}" ./tensorcore_gpu_test --gtest_output=json:"$out/gpu_test.json" > "$out/gpu_test.log" 2>&1
  rc=$?; echo "tensorcore_gpu_test exit $rc"; [ $rc = 0 ] || status=1
  grep -E "FAILED|Failure|Expected|Which is|OK \]|cuSPARSE configuration|PASSED|SKIPPED|GPU vs|model k-step" "$out/gpu_test.log" | head -80
  timeout "${TEST_TIMEOUT:-240}" ./cgls_gpu_test --gtest_output=json:"$out/cgls_gpu_test.json" > "$out/cgls_gpu_test.log" 2>&1
  rc=$?; echo "cgls_gpu_test exit $rc"; [ $rc = 0 ] || status=1
  grep -E "FAILED|Failure|Expected|Which is|OK \]|PASSED|SKIPPED|320\^2 CG" "$out/cgls_gpu_test.log" | head -40
fi
if [ "$run_bench" = 1 ]; then
  timeout "${BENCH_TIMEOUT:-400}" ./tensorcore_bench --json "$out/tensorcore_bench.json" $bench_args 2>&1 | tee "$out/bench.log" | grep -v "^  blocks"
  rc=${PIPESTATUS[0]}; echo "bench exit $rc"; [ $rc = 0 ] || status=1
fi
exit $status
RUN
chmod +x "$bundle/run.sh"
du -sh "$bundle"
echo
echo "device run: carry [\".device-bundle/$bundle_name\"], command:"
echo "  cd .device-bundle/$bundle_name && ./run.sh --quick"

#!/usr/bin/env bash
# Builds the Tensor Core GPU tests and benchmark here (no GPU needed), bundles them into
# /work/main/.device-bundle/tensorcore (ignored by git) and prints the command for the device
# tool's `run` (carry: [".device-bundle/tensorcore"]). On the device the bundle's run.sh checks
# the SASS for HMMA, runs the GPU tests and the benchmark, and leaves logs and JSON in $OUT.
#   scripts/device-tensorcore.sh [bundle-dir]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin"
build_dir=${BUILD_DIR:-build-device}
bundle=${1:-/work/main/.device-bundle/tensorcore}

# The device machine's CPU may differ from this one: x86-64-v3 instead of native.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSLICESTREAM_CUDA=ON \
  -DSLICESTREAM_CPU_ARCH=x86-64-v3 >/dev/null
cmake --build "$build_dir" -j "${JOBS:-2}" --target tensorcore_gpu_test fused_expression_gpu_test \
  tensorcore_bench

rm -rf "$bundle"
mkdir -p "$bundle"
binaries=(tests/kernels/tensorcore/tensorcore_gpu_test tests/kernels/tensorcore/fused_expression_gpu_test
          bench/tensorcore/tensorcore_bench)
for b in "${binaries[@]}"; do cp "$build_dir/$b" "$bundle/"; done
# Non-glibc shared libraries, except cuSPARSE (160 MB: the device's CUDA 13 install provides it).
for b in "${binaries[@]}"; do
  ldd "$build_dir/$b" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
    libcusparse.so*|libnvJitLink.so*) ;;
    *) cp -L "$lib" "$bundle/" ;;
  esac
done

cat > "$bundle/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs on the device machine from the bundle directory; everything it writes goes to $OUT.
set -uo pipefail
cd "$(dirname "$0")"
out=${OUT:-/tmp/out}
mkdir -p "$out"
cuda_libs=$(ls -d /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 2>/dev/null | tr '\n' ':')
py_libs=$(python3 -c 'import nvidia.cusparse, os; print(os.path.dirname(nvidia.cusparse.__file__) + "/lib")' 2>/dev/null || true)
jit_libs=$(python3 -c 'import nvidia.nvjitlink, os; print(os.path.dirname(nvidia.nvjitlink.__file__) + "/lib")' 2>/dev/null || true)
export LD_LIBRARY_PATH="$PWD:${cuda_libs}${py_libs}:${jit_libs}:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv > "$out/gpu.txt" 2>&1
ldd ./tensorcore_bench | grep -E "cusparse|cudart|not found" | tee "$out/ldd.txt"
{
  echo "HMMA instructions per kernel (cuobjdump -sass):"
  cuobjdump -sass ./tensorcore_bench 2>/dev/null | awk '/Function :/ {f=$3} /HMMA/ {n[f]++} END {for (k in n) print n[k], k}' | c++filt | sed 's/slicestream::tensorcore::cuda::(anonymous namespace):://' | sort -k2
  echo "HGMMA: $(cuobjdump -sass ./tensorcore_bench 2>/dev/null | grep -c HGMMA)"
} > "$out/sass.txt" 2>&1
head -30 "$out/sass.txt"
timeout "${TEST_TIMEOUT:-240}" ./fused_expression_gpu_test > "$out/fused_test.log" 2>&1; echo "fused_expression_gpu_test exit $?"; grep -E "Failure|OK \]|PASSED|FAILED" -A3 "$out/fused_test.log" | head -20
timeout "${TEST_TIMEOUT:-240}" ./tensorcore_gpu_test --gtest_output=json:"$out/gpu_test.json" > "$out/gpu_test.log" 2>&1
echo "tensorcore_gpu_test exit $?"
grep -E "FAILED|Failure|OK \]|cuSPARSE configuration|PASSED" "$out/gpu_test.log" | head -40
timeout "${BENCH_TIMEOUT:-400}" ./tensorcore_bench --json "$out/tensorcore_bench.json" ${BENCH_ARGS:-} 2>&1 | tee "$out/bench.log" | grep -v "^  blocks"
echo "bench exit ${PIPESTATUS[0]}"
RUN
chmod +x "$bundle/run.sh"
du -sh "$bundle"
echo
echo "device run: carry [\".device-bundle/tensorcore\"], command:"
echo "  cd .device-bundle/tensorcore && ./run.sh"

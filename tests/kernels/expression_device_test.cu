// The expression layer on the device: every node type, the preprocessing expression included, is
// evaluated by a plain CUDA kernel over flat indices (Extent2D::index) and compared with the host
// evaluator. Skips where no GPU exists; CI still compiles it, which keeps the layer nvcc-clean.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <tuple>
#include <vector>

#include "kernels/cuda/expr_device_evaluate.cuh"
#include "kernels/expr/expr.hpp"
#include "kernels/expr/host_evaluate.hpp"
#include "kernels/expr/preprocess_expression.hpp"
#include "kernels/geometry.hpp"
#include "kernels/projection_map.hpp"
#include "tests/kernels/test_support.hpp"

namespace slicestream::expr {
namespace {

#define EXPECT_CUDA(call)                                           \
  do {                                                              \
    const cudaError_t status_ = (call);                             \
    ASSERT_EQ(status_, cudaSuccess) << cudaGetErrorString(status_); \
  } while (false)

bool have_device(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    *why = std::string("no usable CUDA device: ") + cudaGetErrorString(status);
    return false;
  }
  if (count == 0) {
    *why = "no CUDA device";
    return false;
  }
  return true;
}

template <class E, class C>
__global__ void evaluate_kernel(E e, C condition, Extent2D extent, float* out,
                                unsigned long long* count) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= extent.size()) return;
  const Index2D index = extent.index(i);
  out[i] = e.at(index);
  if (condition.at(index)) atomicAdd(count, 1ull);
}

template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : size_(host.size()) {
    if (cudaMalloc(&data_, size_ * sizeof(T)) != cudaSuccess) data_ = nullptr;
    if (data_ != nullptr) {
      cudaMemcpy(data_, host.data(), size_ * sizeof(T), cudaMemcpyHostToDevice);
    }
  }
  ~DeviceArray() { cudaFree(data_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  T* get() const { return data_; }
  std::vector<T> to_host() const {
    std::vector<T> host(size_);
    cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost);
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_;
};

// Evaluates (e, condition) on host and device; values must agree to `tolerance` (relative to
// the largest magnitude), counts exactly.
template <class HostE, class HostC, class DeviceE, class DeviceC>
void compare(const HostE& host_e, const HostC& host_c, const DeviceE& device_e,
             const DeviceC& device_c, Extent2D extent, double tolerance) {
  std::vector<float> host(extent.size());
  Counts<1> host_count{};
  assign_rows(host.data(), host_e, extent, 0, extent.rows, &host_count, host_c);

  DeviceArray<float> out(std::vector<float>(extent.size(), -1.0f));
  DeviceArray<unsigned long long> count(std::vector<unsigned long long>(1, 0));
  ASSERT_NE(out.get(), nullptr);
  const unsigned blocks = static_cast<unsigned>((extent.size() + 255) / 256);
  evaluate_kernel<<<blocks, 256>>>(device_e, device_c, extent, out.get(), count.get());
  EXPECT_CUDA(cudaGetLastError());
  EXPECT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> device = out.to_host();
  double scale = 0;
  for (float v : host)
    scale = std::max(scale, std::abs(static_cast<double>(v)));
  for (std::size_t i = 0; i < host.size(); ++i) {
    ASSERT_NEAR(device[i], host[i], tolerance * (scale + 1e-30)) << i;
  }
  EXPECT_EQ(count.to_host()[0], host_count[0]);
}

TEST(ExpressionDevice, ArithmeticGuardsAndGeneratorsMatchTheHost) {
  std::string why;
  if (!have_device(&why)) GTEST_SKIP() << why;
  const Extent2D extent{37, 129};
  test::RandomSource random;
  SCOPED_TRACE(random.trace());
  std::vector<float> a = random.floats(extent.size(), -3, 3);
  std::vector<float> b = random.floats(extent.size(), -3, 3);
  a[5] = NAN;
  b[77] = INFINITY;
  std::vector<std::uint16_t> c(extent.size());
  for (auto& v : c)
    v = static_cast<std::uint16_t>(random.uniform_int(0, 59999));
  DeviceArray<float> da(a), db(b);
  DeviceArray<std::uint16_t> dc(c);
  const CosineWeight cosine = make_cosine_weight(
      BeamKind::kCone, cone_vector(0.4, {{}, 100, 50, 0.5, 0.5, 1, -2}), {37, 129});
  auto build = [&](const float* pa, const float* pb, const std::uint16_t* pc) {
    const auto va = array(pa), vb = array(pb);
    return select(is_finite(va) && is_finite(vb),
                  clamp(va * vb - va / (abs(vb) + 1.0f), -4.0f, 4.0f) + sqrt(abs(va)) +
                      neg_log(max(array(pc) * 1e-4f, 1e-3f)) * generator(cosine) - min(va, vb) +
                      max(-va, square(vb)) + log(abs(va) + 2.0f),
                  0.0f);
  };
  auto condition = [](const float* pa) { return array(pa) < 0.0f || !is_finite(array(pa)); };
  compare(build(a.data(), b.data(), c.data()), condition(a.data()),
          build(da.get(), db.get(), dc.get()), condition(da.get()), extent, 2e-6);
}

TEST(ExpressionDevice, PreprocessExpressionMatchesTheHost) {
  std::string why;
  if (!have_device(&why)) GTEST_SKIP() << why;
  const Extent2D extent{24, 200};
  test::RandomSource random;
  SCOPED_TRACE(random.trace());
  std::vector<std::uint16_t> raw(extent.size());
  for (auto& v : raw)
    v = static_cast<std::uint16_t>(random.uniform_int(0, 49999));
  std::vector<float> dark(extent.size(), 100.0f), inv_gain(extent.size(), 1.0f / 40000);
  inv_gain[7] = 0;  // dead
  DeviceArray<std::uint16_t> draw(raw);
  DeviceArray<float> ddark(dark), dgain(inv_gain);
  const CosineWeight cosine = make_cosine_weight(
      BeamKind::kCone, cone_vector(1.1, {{}, 300, 200, 0.2, 0.2, 0, 0}), {24, 200});
  const auto host =
      preprocess_expression<false, true>(raw.data(), dark.data(), inv_gain.data(), 1e-6f, cosine);
  const auto device =
      preprocess_expression<false, true>(draw.get(), ddark.get(), dgain.get(), 1e-6f, cosine);
  compare(host.result, host.clamped_low, device.result, device.clamped_low, extent, 2e-6);
}

// Fused passes (stores, then per-column sums and maxima) on the device against the host.
TEST(ExpressionDevice, FusedPassesMatchTheHost) {
  std::string why;
  if (!have_device(&why)) GTEST_SKIP() << why;
  test::RandomSource random;
  SCOPED_TRACE(random.trace());
  for (int columns : {1, 3, 32, 256}) {
    const Extent2D extent{10007, columns};
    std::vector<float> r = random.floats(extent.size(), -1, 1);
    const std::vector<float> q = random.floats(extent.size(), -1, 1);
    const std::vector<float> alpha = random.floats(static_cast<std::size_t>(columns), -1, 1);
    DeviceArray<float> dr(r), dq(q), dalpha(alpha);
    DeviceArray<double> dresults(std::vector<double>(static_cast<std::size_t>(3 * columns), -1.0));
    const auto reductions = [](const float* pr, const float* pq) {
      return std::make_tuple(reduce_squared_norm(array(pr)), reduce_max_abs(array(pr)),
                             reduce_dot(array(pr), array(pq)));
    };
    const auto update = [](float* pr, const float* pq, const float* palpha) {
      return store(pr, array(pr) - per_column(palpha) * array(pq));
    };
    const auto [norm, max_abs, dot] = reductions(dr.get(), dq.get());
    cuda::evaluate_pass(fused(update(dr.get(), dq.get(), dalpha.get()), norm, max_abs, dot), extent,
                        dresults.get(), nullptr);
    EXPECT_CUDA(cudaDeviceSynchronize());
    evaluate_pass(fused(update(r.data(), q.data(), alpha.data())), extent, nullptr);
    const std::vector<float> got = dr.to_host();
    // The device may contract r - alpha * q into one FMA: values differ in the last bit (at most
    // 1.5e-7 for |r - alpha q| < 2).
    for (std::size_t i = 0; i < r.size(); ++i)
      ASSERT_NEAR(got[i], r[i], 4e-7f) << i;
    // The reductions, of the values the device stored: against the host's of the same values,
    // so that only the order of the float64 sums differs (at most n 2^-53 of the sum of the
    // terms' magnitudes, 1.1e-12 here). A dot product of +-1 values may cancel to near zero: its
    // bound is relative to that sum, not to the result.
    const std::vector<double> results = dresults.to_host();
    std::vector<double> host(results.size()), magnitude(results.size());
    const auto [host_norm, host_max_abs, host_dot] = reductions(got.data(), q.data());
    evaluate_pass(fused(host_norm, host_max_abs, host_dot), extent, host.data());
    std::vector<float> got_abs(got.size()), q_abs(q.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      got_abs[i] = std::abs(got[i]);
      q_abs[i] = std::abs(q[i]);
    }
    const auto [norm_abs, max_abs_abs, dot_abs] = reductions(got_abs.data(), q_abs.data());
    evaluate_pass(fused(norm_abs, max_abs_abs, dot_abs), extent, magnitude.data());
    for (std::size_t k = 0; k < results.size(); ++k) {
      EXPECT_NEAR(results[k], host[k], 1e-11 * magnitude[k] + 1e-30) << columns << " " << k;
    }
  }
  EXPECT_THROW(
      cuda::evaluate_pass(fused(reduce_sum(scalar(1.0f))), Extent2D{4, 257}, nullptr, nullptr),
      std::invalid_argument);
}

}  // namespace
}  // namespace slicestream::expr

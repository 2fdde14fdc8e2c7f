// The fused evaluate-and-reduce kernel against the host evaluation of the same expression
// (label gpu; a .cu file because it instantiates the kernel template).
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/tensorcore/cuda/cuda_check.hpp"
#include "kernels/tensorcore/cuda/device_buffer.hpp"
#include "kernels/tensorcore/cuda/fused_expression_kernel.cuh"
#include "tests/kernels/tensorcore/tensorcore_test_support.hpp"

namespace slicestream::tensorcore {
namespace {

using cuda::DeviceBuffer;

TEST(TensorCoreGpu, FusedPassesMatchHost) {
  if (!cuda::device_available()) GTEST_SKIP() << "no CUDA device present";
  for (int columns : {1, 3, 32}) {
    const std::size_t n = static_cast<std::size_t>(columns) * 10007;
    std::vector<float> r = testing::random_vector(n, 11), q = testing::random_vector(n, 12);
    const std::vector<float> alpha = testing::random_vector(static_cast<std::size_t>(columns), 13);
    DeviceBuffer<float> dr(r), dq(q), dalpha(alpha);
    DeviceBuffer<double> dresults(static_cast<std::size_t>(2 * columns));
    using namespace fused;
    cuda::evaluate_device(
        pass_of(assign(dr.data(), vec(dr.data()) - per_column(dalpha.data()) * vec(dq.data())),
                NoAssign{}, sum_of_squares(vec(dr.data())), max_abs(vec(dr.data()))),
        n, columns, dresults.data(), nullptr);
    std::vector<double> host(static_cast<std::size_t>(2 * columns));
    evaluate_host(
        pass_of(assign(r.data(), vec(r.data()) - per_column(alpha.data()) * vec(q.data())),
                NoAssign{}, sum_of_squares(vec(r.data())), max_abs(vec(r.data()))),
        n, columns, host.data());
    const std::vector<float> got = dr.download();
    // The device may contract r - alpha * q into one FMA: the values differ in the last bit.
    EXPECT_LT(testing::relative_error(got, r), 1e-6);
    const std::vector<double> results = dresults.download();
    for (int k = 0; k < 2 * columns; ++k) {
      EXPECT_NEAR(results[static_cast<std::size_t>(k)], host[static_cast<std::size_t>(k)],
                  1e-6 * std::abs(host[static_cast<std::size_t>(k)]));
    }
  }
}

}  // namespace
}  // namespace slicestream::tensorcore

// Helpers of the Tensor Core GPU tests: NaN-poisoned outputs, a small problem with its plain and
// gathered matrices, the GPU projector against its CPU twin and against another GPU projector.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/tensorcore/cuda/tensorcore_projector.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"
#include "tests/kernels/tensorcore/tensorcore_test_support.hpp"
#include "tests/support/bsr_projector_cpu.hpp"

namespace slicestream::tensorcore::testing {

using ::slicestream::cuda::DeviceBuffer;

// Outputs are poisoned with NaN before each run, so that unwritten elements fail.
inline std::vector<float> nan_vector(std::size_t n) {
  return std::vector<float>(n, std::numeric_limits<float>::quiet_NaN());
}

inline bool all_finite(const std::vector<float>& v) {
  for (float x : v) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

struct SmallProblem {
  ImageGrid2d grid{64, 64, 0.5};
  Geometry2d geometry = small_parallel(96, 96, 32.0);
  std::shared_ptr<CsrMatrix> a =
      std::make_shared<CsrMatrix>(build_dd_matrix(pool(), geometry, grid));

  // The plain (non-symmetric) Tensor Core matrix of this problem.
  std::shared_ptr<TensorCoreMatrix> matrix(
      WmmaShape shape, BlockOrdering ordering = BlockOrdering::kPseudoMorton) const {
    TensorCoreMatrixOptions options;
    options.shape = shape;
    options.ordering = ordering;
    return std::make_shared<TensorCoreMatrix>(
        build_tensorcore_matrix(pool(), *a, geometry, grid, options, nullptr));
  }
  // The symmetric (octant) 16.16.16 matrix, which takes the gathered products.
  std::shared_ptr<TensorCoreMatrix> gathered_matrix() const {
    TensorCoreMatrixOptions options;
    options.shape = WmmaShape::kM16N16K16;
    options.symmetric = true;
    return std::make_shared<TensorCoreMatrix>(
        build_tensorcore_matrix(pool(), geometry, grid, options));
  }
};

// Runs the GPU projector and its CPU twin on the same input; returns the relative difference.
inline double compare_forward(cuda::TensorCoreProjector& gpu, BsrProjectorCpu& cpu, int slices,
                              std::uint32_t seed) {
  const std::vector<float> image =
      random_vector(static_cast<std::size_t>(gpu.pixels() * slices), seed, -1, 1);
  DeviceBuffer<float> d_image(image);
  DeviceBuffer<float> d_sino(nan_vector(static_cast<std::size_t>(gpu.rays() * slices)));
  gpu.forward(d_image.data(), d_sino.data(), slices, nullptr);
  SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> got = d_sino.download();
  EXPECT_TRUE(all_finite(got));
  std::vector<float> want(got.size());
  cpu.forward(image.data(), want.data(), slices);
  return relative_error(got, want);
}

// Runs two GPU projectors of one problem on the same random image (values in [lo, hi]); returns
// the relative difference of their sinograms.
inline double compare_forward(cuda::TensorCoreProjector& a, cuda::TensorCoreProjector& b,
                              int slices, std::uint32_t seed, float lo, float hi) {
  const std::vector<float> image =
      random_vector(static_cast<std::size_t>(a.pixels() * slices), seed, lo, hi);
  DeviceBuffer<float> d_image(image);
  DeviceBuffer<float> d_a(nan_vector(static_cast<std::size_t>(a.rays() * slices)));
  DeviceBuffer<float> d_b(nan_vector(d_a.size()));
  a.forward(d_image.data(), d_a.data(), slices, nullptr);
  b.forward(d_image.data(), d_b.data(), slices, nullptr);
  SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
  return relative_error(d_a.download(), d_b.download());
}

inline double compare_backward(cuda::TensorCoreProjector& gpu, BsrProjectorCpu& cpu, int slices,
                               std::uint32_t seed) {
  const std::vector<float> sino =
      random_vector(static_cast<std::size_t>(gpu.rays() * slices), seed, -1, 1);
  DeviceBuffer<float> d_sino(sino);
  DeviceBuffer<float> d_image(nan_vector(static_cast<std::size_t>(gpu.pixels() * slices)));
  gpu.backward(d_sino.data(), d_image.data(), slices, nullptr);
  SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
  const std::vector<float> got = d_image.download();
  EXPECT_TRUE(all_finite(got));
  std::vector<float> want(got.size());
  cpu.backward(sino.data(), want.data(), slices);
  return relative_error(got, want);
}

}  // namespace slicestream::tensorcore::testing

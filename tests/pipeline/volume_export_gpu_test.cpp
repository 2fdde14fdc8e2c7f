// GetVolume on the CUDA backend against the CPU backend: the same scan fed to two pipelines, the
// same volume asked for in chunks of planes; the chunks agree to the backends' backprojection
// tolerance (as tests/kernels/cuda/cuda_backend_test.cpp): 1e-5 relative with exact fp32
// interpolation, 1e-3 with the default hardware-filtered texture. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>

#include "pipeline/backend/backend.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

namespace slicestream {
namespace {

std::vector<float> volume_in_chunks(Pipeline& pipeline, int nx, int ny, int nz, int chunk) {
  std::vector<float> all;
  for (int first = 0; first < nz; first += chunk) {
    const CommandReply reply = test::call(
        pipeline, GetVolumeCommand{std::nullopt, nx, ny, nz, first, std::min(chunk, nz - first)});
    EXPECT_EQ(reply.status.code, StatusCode::kOk) << reply.status.message;
    if (!reply.volume) return {};
    all.insert(all.end(), reply.volume->values.begin(), reply.volume->values.end());
  }
  return all;
}

// The volume of one scan in chunks of planes from a pipeline on `options`' backend `kind`.
std::vector<float> scan_volume(BackendKind kind, const BackendOptions& options, int chunk) {
  const test::TestScan scan = test::make_cone_scan(31, {48, 64}, 120, 150.0, 100.0);
  const auto n = static_cast<std::uint32_t>(scan.description.projections_per_rotation());
  test::RecordingSink sink;
  Pipeline pipeline(test::small_config(), make_backend(kind, options), sink);
  pipeline.start();
  test::begin_scan(pipeline, scan);
  test::feed_phantom(pipeline, scan, 0, n);
  test::end_scan(pipeline, scan, n);
  pipeline.wait_idle();
  return volume_in_chunks(pipeline, 48, 44, 20, chunk);
}

TEST(VolumeExportGpu, CudaChunksMatchTheCpuBackend) {
  const std::string unavailable = cuda_unavailable_reason();
  if (!unavailable.empty()) GTEST_SKIP() << "no usable GPU: " << unavailable;
  const std::vector<float> cpu = scan_volume(BackendKind::kCpu, BackendOptions{}, 20);
  ASSERT_EQ(cpu.size(), std::size_t{48} * 44 * 20);
  ASSERT_GT(test::max_abs(cpu), 0.0);
  for (const auto& [interpolation, tolerance] :
       {std::pair{CudaInterpolation::kExact, 1e-5}, std::pair{CudaInterpolation::kTexture, 1e-3}}) {
    SCOPED_TRACE(to_string(interpolation));
    BackendOptions options;
    options.cuda.interpolation = interpolation;
    const std::vector<float> cuda = scan_volume(BackendKind::kCuda, options, 6);
    ASSERT_EQ(cuda.size(), cpu.size());
    EXPECT_LE(test::relative_error(cuda, cpu), tolerance);
  }
}

}  // namespace
}  // namespace slicestream

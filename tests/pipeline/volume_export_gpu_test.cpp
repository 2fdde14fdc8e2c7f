// GetVolume on the CUDA backend against the CPU backend: the same scan fed to two pipelines, the
// same volume asked for in chunks of planes; the chunks agree to the backends' backprojection
// tolerance (1e-5 relative, as tests/kernels/cuda/cuda_backend_test.cpp). Skips without a GPU.
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

TEST(VolumeExportGpu, CudaChunksMatchTheCpuBackend) {
  const std::string unavailable = cuda_unavailable_reason();
  if (!unavailable.empty()) GTEST_SKIP() << "no usable GPU: " << unavailable;
  const test::TestScan scan = test::make_cone_scan(31, {48, 64}, 120, 150.0, 100.0);
  const auto n = static_cast<std::uint32_t>(scan.description.projections_per_rotation());
  std::vector<std::vector<float>> volumes;
  for (BackendKind kind : {BackendKind::kCpu, BackendKind::kCuda}) {
    test::RecordingSink sink;
    Pipeline pipeline(test::small_config(), make_backend(kind, BackendOptions{}), sink);
    pipeline.start();
    test::begin_scan(pipeline, scan);
    test::feed_phantom(pipeline, scan, 0, n);
    test::end_scan(pipeline, scan, n);
    pipeline.wait_idle();
    volumes.push_back(volume_in_chunks(pipeline, 48, 44, 20, kind == BackendKind::kCpu ? 20 : 6));
  }
  ASSERT_EQ(volumes[0].size(), std::size_t{48} * 44 * 20);
  ASSERT_EQ(volumes[1].size(), volumes[0].size());
  ASSERT_GT(test::max_abs(volumes[0]), 0.0);
  EXPECT_LE(test::relative_error(volumes[1], volumes[0]), 1e-5);
}

}  // namespace
}  // namespace slicestream

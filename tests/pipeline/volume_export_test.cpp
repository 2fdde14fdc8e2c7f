// GetVolume: a volume saved chunk of planes by chunk of planes is the same volume as in one chunk,
// each plane is the axial slice GetSlice gives at that height, and the whole matches the analytic
// phantom; chunks beyond the memory a chunk may hold, plane ranges outside the volume and requests
// before any scan are refused with a reason.
#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

using test::call;

constexpr int kNx = 40;
constexpr int kNy = 36;
constexpr int kNz = 10;

class VolumeExportTest : public ::testing::Test {
 protected:
  void start(PipelineConfig config = test::small_config()) {
    pipeline_ = std::make_unique<Pipeline>(config, test::cpu_backend(), sink_);
    pipeline_->start();
  }
  void scan() {
    test::begin_scan(*pipeline_, scan_);
    const auto n = static_cast<std::uint32_t>(scan_.description.projections_per_rotation());
    test::feed_phantom(*pipeline_, scan_, 0, n);
    test::end_scan(*pipeline_, scan_, n);
    pipeline_->wait_idle();
  }
  CommandReply chunk(int first, int count) {
    return call(*pipeline_, GetVolumeCommand{std::nullopt, kNx, kNy, kNz, first, count});
  }

  test::RecordingSink sink_;
  std::unique_ptr<Pipeline> pipeline_;
  test::TestScan scan_ = test::make_parallel_scan(21, {24, 64}, 96);
};

TEST_F(VolumeExportTest, ChunksMakeTheSameVolumeAsOneGetSliceAndThePhantom) {
  start();
  scan();
  const CommandReply whole = chunk(0, kNz);
  ASSERT_EQ(whole.status.code, StatusCode::kOk) << whole.status.message;
  ASSERT_TRUE(whole.volume.has_value());
  EXPECT_EQ(whole.volume->values.size(), std::size_t{kNx} * kNy * kNz);
  EXPECT_EQ(whole.volume->scan_id, 21u);
  EXPECT_EQ(whole.volume->projections_integrated, 96u);

  std::vector<float> chunked;
  for (const auto& [first, count] : {std::pair{0, 4}, std::pair{4, 4}, std::pair{8, 2}}) {
    const CommandReply part = chunk(first, count);
    ASSERT_EQ(part.status.code, StatusCode::kOk) << part.status.message;
    EXPECT_EQ(part.volume->first_plane, first);
    chunked.insert(chunked.end(), part.volume->values.begin(), part.volume->values.end());
  }
  EXPECT_LT(test::relative_error(chunked, whole.volume->values), 1e-6);

  // Plane z is the axial slice over the box at the plane's centre.
  const VolumeBox& box = scan_.description.volume;
  const Vec3 e = box.extent();
  const std::size_t plane = std::size_t{kNx} * kNy;
  for (int z : {0, kNz / 2, kNz - 1}) {
    const double height = box.min_mm.z + (z + 0.5) * e.z / kNz;
    GetSliceCommand slice;
    slice.orientation =
        SliceOrientation::from_axes({e.x, 0, 0}, {0, e.y, 0}, {box.min_mm.x, box.min_mm.y, height});
    slice.width = kNx;
    slice.height = kNy;
    const CommandReply reply = call(*pipeline_, slice);
    ASSERT_EQ(reply.status.code, StatusCode::kOk) << reply.status.message;
    const auto begin = whole.volume->values.begin() + static_cast<std::ptrdiff_t>(z * plane);
    const std::vector<float> from_volume(begin, begin + static_cast<std::ptrdiff_t>(plane));
    EXPECT_LT(test::relative_error(from_volume, reply.slice->values), 1e-5) << "plane " << z;
  }

  const std::vector<float> reference =
      phantom::sample(scan_.phantom, volume_grid(box, kNx, kNy, kNz), 3);
  const double error = test::relative_error(whole.volume->values, reference);
  std::printf("volume %d x %d x %d: relative error against the phantom %.4f\n", kNx, kNy, kNz,
              error);
  EXPECT_LT(error, 0.13);  // as the slices of PhantomReconstruction
}

TEST_F(VolumeExportTest, RefusalsSayWhy) {
  PipelineConfig config = test::small_config();
  config.max_slice_side = 64;  // a chunk holds at most 64^2 voxels: 2 planes of 40 x 36
  start(config);
  const CommandReply early = chunk(0, 1);
  EXPECT_EQ(early.status.code, StatusCode::kFailedPrecondition) << early.status.message;
  EXPECT_EQ(early.status.reason, "no_scan");
  scan();
  const CommandReply too_large = chunk(0, 3);
  EXPECT_EQ(too_large.status.code, StatusCode::kResourceExhausted);
  EXPECT_EQ(too_large.status.reason, "volume_chunk_too_large");
  EXPECT_NE(too_large.status.message.find("ask for at most 2 planes"), std::string::npos)
      << too_large.status.message;
  EXPECT_TRUE(chunk(0, 2).status.ok());
  const CommandReply outside = chunk(9, 2);
  EXPECT_EQ(outside.status.code, StatusCode::kInvalidArgument);
  EXPECT_EQ(outside.status.reason, "bad_plane_range");
  const CommandReply huge = call(*pipeline_, GetVolumeCommand{std::nullopt, kNx, kNy, 65, 0, 1});
  EXPECT_EQ(huge.status.code, StatusCode::kInvalidArgument);
  EXPECT_EQ(huge.status.reason, "bad_shape");
  GetVolumeCommand flat_box{VolumeBox{{0, 0, 0}, {1, 1, 0}}, 4, 4, 4, 0, 1};
  const CommandReply bad_box = call(*pipeline_, flat_box);
  EXPECT_EQ(bad_box.status.reason, "bad_volume") << bad_box.status.message;
}

}  // namespace
}  // namespace slicestream

// An analytic ellipsoid phantom (exact line integrals, kernels/phantom) through the whole
// in-process pipeline (raw uint16 frames with darks and flats -> preprocess -> filter -> sliding
// window -> publish): the published slices match the phantom in shape and absolute scale
// (attenuation per mm).
#include <gtest/gtest.h>

#include <cmath>

#include "pipeline_test_support.hpp"

namespace slicestream {
namespace {

using test::call;

struct SliceCheck {
  double relative_error;
  double centre_mean;            // reconstruction, central region
  double centre_mean_reference;  // phantom, same region
};

// Compares a published slice with the phantom sampled on the same grid. The central region (the
// middle quarter of the slice's area) measures the absolute scale away from edges.
SliceCheck check_slice(const test::TestScan& scan, const SliceImage& image) {
  const GridSpec grid = slice_grid(image.orientation, image.width, image.height);
  const std::vector<float> reference = phantom::sample(scan.phantom, grid, 3);
  SliceCheck c{test::relative_error(image.values, reference), 0, 0};
  int count = 0;
  for (int j = image.height * 3 / 8; j < image.height * 5 / 8; ++j) {
    for (int i = image.width * 3 / 8; i < image.width * 5 / 8; ++i) {
      const std::size_t k = static_cast<std::size_t>(j) * static_cast<std::size_t>(image.width) +
                            static_cast<std::size_t>(i);
      c.centre_mean += image.values[k];
      c.centre_mean_reference += reference[k];
      ++count;
    }
  }
  c.centre_mean /= count;
  c.centre_mean_reference /= count;
  return c;
}

void reconstruct_and_check(const test::TestScan& scan, double max_error) {
  test::RecordingSink sink;
  PipelineConfig config = test::small_config();
  config.default_slice_size = 64;
  Pipeline pipeline(config, test::cpu_backend(), sink);
  pipeline.start();
  test::begin_scan(pipeline, scan);
  const auto n = static_cast<std::uint32_t>(scan.description.projections_per_rotation());
  test::feed_phantom(pipeline, scan, 0, n + n / 3);  // more than a rotation: the window slides
  test::end_scan(pipeline, scan, n + n / 3);
  pipeline.wait_idle();

  const MetricsSnapshot m = pipeline.metrics();
  EXPECT_EQ(m.projections_integrated, n + n / 3);
  EXPECT_EQ(m.darks_received, 2u);
  EXPECT_EQ(m.flats_received, 2u);
  EXPECT_TRUE(m.discards.empty());
  EXPECT_EQ(m.errors, 0u);
  EXPECT_EQ(m.scans_started, 1u);
  EXPECT_EQ(m.scans_ended, 1u);
  EXPECT_EQ(sink.events_of_kind(EventKind::kScanStarted), 1u);
  EXPECT_EQ(sink.events_of_kind(EventKind::kScanEnded), 1u);
  EXPECT_EQ(sink.events_of_kind(EventKind::kError), 0u);

  // The three default slices (ids 0, 1, 2) through the centre of the box.
  for (std::uint32_t id = 0; id < 3; ++id) {
    const std::optional<SliceImage> image = sink.last_slice(id);
    ASSERT_TRUE(image.has_value()) << "slice " << id;
    EXPECT_EQ(image->projections_integrated, n + n / 3);
    EXPECT_EQ(image->scan_id, scan.description.scan_id);
    const SliceCheck c = check_slice(scan, *image);
    EXPECT_LT(c.relative_error, max_error) << "slice " << id;
    EXPECT_NEAR(c.centre_mean, c.centre_mean_reference, 0.03 * c.centre_mean_reference)
        << "slice " << id << ": absolute scale";
    std::printf("slice %u: relative error %.4f, centre mean %.5f (phantom %.5f) /mm\n", id,
                c.relative_error, c.centre_mean, c.centre_mean_reference);
  }
}

TEST(PhantomReconstruction, ParallelBeamSlicesMatchThePhantom) {
  reconstruct_and_check(test::make_parallel_scan(11, {24, 64}, 96), 0.13);
}

TEST(PhantomReconstruction, ConeBeamSlicesMatchThePhantom) {
  reconstruct_and_check(test::make_cone_scan(12, {48, 64}, 120, 150.0, 100.0), 0.13);
}

}  // namespace
}  // namespace slicestream

// When SliceRefinements starts a slice's refinement: once its window is complete and its live FBP
// image shows that window. An image that lags its window (a slice build or a rotation not shown
// yet) is looked at again; after the scan has ended the window no longer changes, so the look
// again must not wait for it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <variant>
#include <vector>

#include "pipeline/backend/cpu/cpu_backend.hpp"
#include "pipeline/metrics/event_reporter.hpp"
#include "pipeline/metrics/metrics_registry.hpp"
#include "pipeline/refinement/detector_row_selection.hpp"
#include "pipeline/refinement/slice_refinements.hpp"
#include "tests/kernels/test_support.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

namespace slicestream {
namespace {

using Clock = SliceRefinements::Clock;

struct Harness {
  CpuBackend backend;
  MetricsRegistry metrics;
  EventReporter events{metrics, [](ServerEvent&&) { return true; }};
  DetectorRowSelection rows;
  SliceRefinements refinements{RefinementLimits{}, backend, metrics, events, rows};
  std::vector<PublishItem> published;
  SliceRefinements::Publish publish = [this](PublishItem&& item) {
    published.push_back(std::move(item));
    return true;
  };

  int refined_count() const {
    int count = 0;
    for (const PublishItem& item : published)
      count += std::holds_alternative<RefinedSliceImage>(item) ? 1 : 0;
    return count;
  }
};

TEST(SliceRefinementsSchedule, AnImageThatLaggedItsFinalWindowIsRefinedOnceItCatchesUp) {
  test::RandomSource random;
  SCOPED_TRACE(random.trace());
  const test::TestScan scan = test::make_parallel_scan(7, {6, 32}, 24);
  const ScanGeometry& geometry = scan.description.geometry;
  const SetSliceCommand slice = test::axial_slice(scan.description, 1, 16);
  Harness h;
  SetRefinementCommand refine;
  refine.slice_id = 1;
  refine.iterations = 2;
  ASSERT_TRUE(h.refinements.configure(refine, &slice).ok());
  h.refinements.begin_scan(7, geometry, 0.0, {slice});
  const std::vector<int> rows = h.rows.rows();
  ASSERT_FALSE(rows.empty());
  // The whole window arrives, then the scan ends: the window changes no more.
  for (int slot = 0; slot < static_cast<int>(geometry.vectors.size()); ++slot) {
    CapturedRows captured;
    captured.rows = rows;
    captured.values =
        random.floats(rows.size() * static_cast<std::size_t>(geometry.detector.cols), 0.1, 2.0);
    h.refinements.on_projection(slot, geometry.vectors[static_cast<std::size_t>(slot)], captured);
  }
  h.refinements.end_scan();

  bool current = false;
  int reads = 0;
  const SliceRefinements::ReadFbp read_fbp = [&](std::uint32_t id, SliceImage& image) {
    ++reads;
    if (!current) return false;
    image.slice_id = id;
    image.width = slice.width;
    image.height = slice.height;
    image.scan_id = 7;
    image.values.resize(static_cast<std::size_t>(slice.width) *
                        static_cast<std::size_t>(slice.height));
    for (std::size_t i = 0; i < image.values.size(); ++i)
      image.values.data()[i] = static_cast<float>(random.uniform(0.0, 1.0));
    return true;
  };
  Clock::time_point now = Clock::now();
  h.refinements.on_tick(now, false, read_fbp, h.publish);
  EXPECT_EQ(reads, 1) << "the complete window's image was looked at";
  // The image lags (a build still running): the next look is soon, not at a window change.
  const Clock::time_point next = h.refinements.next_deadline(now);
  EXPECT_LE(std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count(), 100);
  h.refinements.on_tick(now, false, read_fbp, h.publish);
  EXPECT_EQ(reads, 1) << "not looked at again at once";
  current = true;  // the build completes
  now = next;
  h.refinements.on_tick(now, false, read_fbp, h.publish);
  EXPECT_EQ(reads, 2);
  h.refinements.finish(h.publish);
  EXPECT_EQ(h.refined_count(), 1) << "the final window's image was refined";
}

}  // namespace
}  // namespace slicestream

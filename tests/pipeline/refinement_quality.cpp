#include "tests/pipeline/refinement_quality.hpp"

#include <chrono>
#include <cmath>
#include <random>
#include <sstream>

#include "kernels/grid_spec.hpp"
#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

namespace slicestream::test {
namespace {

constexpr double kNoiselessCounts = 1e6;
constexpr int kDetectorRows = 8;
constexpr std::uint32_t kSliceId = 1;

TestScan quality_scan(const QualityCase& c) {
  const DetectorShape detector{kDetectorRows, c.size};
  TestScan scan = c.cone ? make_cone_scan(71, detector, c.views, 3.0 * c.size, 1.5 * c.size,
                                          PixelType::kUint32, 2, 2)
                         : make_parallel_scan(71, detector, c.views, PixelType::kUint32, 2, 2);
  const VolumeBox& box = scan.description.volume;
  // Shepp-Logan inside the disc every projection sees, over the box's height.
  const double r = 0.45 * (box.max_mm.x - box.min_mm.x) * (c.cone ? 0.9 : 0.7);
  const Vec3 center = box.center();
  const VolumeBox inside{{center.x - r, center.y - r, box.min_mm.z},
                         {center.x + r, center.y + r, box.max_mm.z}};
  scan.phantom = phantom::shepp_logan_3d(inside, 0.02);
  scan.dark_value = 100.0f;
  scan.flat_value =
      scan.dark_value + static_cast<float>(c.flat_counts > 0 ? c.flat_counts : kNoiselessCounts);
  return scan;
}

// The phantom's projection as counts: dark + N0 exp(-p), Poisson-distributed when noisy.
RawFrame counts_frame(const TestScan& scan, const QualityCase& c, std::uint32_t index,
                      std::mt19937& rng) {
  const ScanDescription& s = scan.description;
  std::vector<float> integrals(s.geometry.detector.pixels());
  phantom::project(scan.phantom, s.geometry.beam, s.geometry.vectors[index], s.geometry.detector,
                   integrals.data(), 2);
  const double open = scan.flat_value - scan.dark_value;
  std::vector<std::uint32_t> counts(integrals.size());
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const double expected = open * std::exp(-static_cast<double>(integrals[i]));
    const double measured =
        c.flat_counts > 0 ? static_cast<double>(std::poisson_distribution<long long>(expected)(rng))
                          : expected;
    counts[i] = static_cast<std::uint32_t>(std::lround(scan.dark_value + measured));
  }
  return make_frame(s, FrameKind::kProjection, index, counts.data(),
                    counts.size() * sizeof(std::uint32_t));
}

}  // namespace

std::string describe(const QualityCase& c) {
  std::ostringstream out;
  out << (c.cone ? "cone central slice" : "parallel") << ", " << c.views << " views, " << c.size
      << " px, ";
  if (c.flat_counts > 0) {
    out << "Poisson " << c.flat_counts << " counts";
  } else {
    out << "noiseless";
  }
  return out.str();
}

ErrorMeasures measure(const SliceValues& values, const std::vector<float>& truth) {
  double diff2 = 0, truth2 = 0;
  for (std::size_t i = 0; i < truth.size(); ++i) {
    const double d = static_cast<double>(values[i]) - truth[i];
    diff2 += d * d;
    truth2 += static_cast<double>(truth[i]) * truth[i];
  }
  return {std::sqrt(diff2 / truth2), std::sqrt(diff2 / static_cast<double>(truth.size()))};
}

QualityOutcome run_quality_case(const QualityCase& c, int iterations,
                                const RefinementSettings& settings) {
  QualityOutcome outcome;
  const TestScan scan = quality_scan(c);
  PipelineConfig config = small_config();
  config.refinement.residual_interval_s = 0;
  RecordingSink sink;
  Pipeline pipeline(config, cpu_backend(), sink);
  pipeline.start();
  const SetSliceCommand slice = axial_slice(scan.description, kSliceId, c.size);
  const CommandReply placed = call(pipeline, slice);
  if (!placed.status.ok()) {
    outcome.error = placed.status.message;
    return outcome;
  }
  // One refinement, once the window is complete (the last projection).
  const CommandReply reply =
      call(pipeline, SetRefinementCommand{kSliceId, true, iterations, 3600, settings});
  if (!reply.status.ok()) {
    outcome.error = reply.status.message;
    return outcome;
  }
  begin_scan(pipeline, scan);
  std::mt19937 rng(c.seed);
  const auto n = static_cast<std::uint32_t>(c.views);
  for (std::uint32_t i = 0; i < n; ++i)
    pipeline.submit(counts_frame(scan, c, i, rng));
  end_scan(pipeline, scan, n);
  pipeline.wait_idle();
  auto refined_of_scan = [&]() -> std::optional<RefinedSliceImage> {
    for (const RefinedSliceImage& r : sink.refined()) {
      if (r.slice.projections_integrated == n) return r;
    }
    return std::nullopt;
  };
  if (!sink.wait_for([&] { return refined_of_scan().has_value(); }, std::chrono::minutes(5))) {
    outcome.error = "no refined image within 5 minutes";
    return outcome;
  }
  pipeline.stop(true);
  const std::optional<SliceImage> fbp = sink.last_slice(kSliceId);
  if (!fbp || fbp->projections_integrated != n) {
    outcome.error = "no FBP image of the whole scan";
    return outcome;
  }
  const std::vector<float> truth =
      phantom::sample(scan.phantom, slice_grid(slice.orientation, slice.width, slice.height), 3);
  outcome.refinement = *refined_of_scan();
  outcome.fbp = measure(fbp->values, truth);
  outcome.refined = measure(outcome.refinement.slice.values, truth);
  outcome.ok = true;
  return outcome;
}

}  // namespace slicestream::test

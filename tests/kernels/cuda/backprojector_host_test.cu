// The backprojector's host side without a GPU: the launch parameters Backprojector::append builds
// for a given device (BackprojectDevice), read back from the sequence and checked against the
// projection maps evaluated in double at the targets' grid points; which path each default slice
// takes; and KernelLaunch's in-place parameters. Nothing is enqueued, so these run in CI.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/cuda/backproject_kernel.cuh"
#include "kernels/cuda/backprojector.hpp"
#include "kernels/cuda/launch_sequence.hpp"
#include "kernels/projection_map.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace slicestream {
namespace {

constexpr cuda::BackprojectDevice kDevice{132, 50u * 1024u * 1024u};

// Stand-ins for device handles: append only copies them into the launch parameters. The slots'
// centre lines lie one after another, as in the store.
struct FakeStore {
  static constexpr int kSlots = 160;
  static constexpr int kLineEntries = 11;
  std::vector<float2> centre_lines = std::vector<float2>(kSlots * kLineEntries);
  std::vector<float> targets = std::vector<float>(3);

  cuda::TextureRef slot(int p) const {
    cuda::TextureRef ref;
    ref.texture = 7;
    ref.layer = p;
    ref.mirrored = true;
    ref.centre_line = line(p);
    return ref;
  }
  const float2* line(int p) const { return centre_lines.data() + p * kLineEntries; }
};

// point(i, j, k) of the grid in world millimetres (grid_spec.hpp), in double.
void grid_point(const GridSpec& g, double i, double j, double k, double* out) {
  const double fi = (i + 0.5) / g.width;
  const double fj = (j + 0.5) / g.height;
  const double fk = (k + 0.5) / g.depth;
  out[0] = g.base.x + fi * g.x_axis.x + fj * g.y_axis.x + fk * g.z_axis.x;
  out[1] = g.base.y + fi * g.x_axis.y + fj * g.y_axis.y + fk * g.z_axis.y;
  out[2] = g.base.z + fi * g.x_axis.z + fj * g.y_axis.z + fk * g.z_axis.z;
}

double evaluate(const float* coef, const double* p) {
  return coef[0] * p[0] + coef[1] * p[1] + coef[2] * p[2] + coef[3];
}

double affine(const float* v, double i, double j, double k) {
  return v[0] + i * v[1] + j * v[2] + k * v[3];
}

template <int kRecords>
const cuda::detail::LaunchParams<kRecords>* params_of(const cuda::KernelLaunch& launch) {
  if (launch.argument_size() != sizeof(cuda::detail::LaunchParams<kRecords>)) return nullptr;
  return reinterpret_cast<const cuda::detail::LaunchParams<kRecords>*>(launch.argument_bytes());
}

// Every record's coefficients, evaluated at the corners and centre of its target, against the
// source's map evaluated in double at the same world point: the column and row on the detector
// (numerator over denominator) to 1e-4 pixels (float coefficients relative to the grid: a few
// 1e-6).
template <int kRecords>
void expect_records_match_maps(const cuda::detail::LaunchParams<kRecords>& params,
                               const std::vector<cuda::BackprojectJob>& jobs) {
  constexpr double kPixels = 1e-4;
  ASSERT_EQ(params.target_count, static_cast<int>(jobs.size()));

  for (int t = 0; t < params.target_count; ++t) {
    const cuda::detail::DeviceTarget& target = params.targets[t];
    const cuda::BackprojectJob& job = jobs[static_cast<std::size_t>(t)];
    ASSERT_EQ(target.record_end - target.record_begin, static_cast<int>(job.sources.size()));
    const GridSpec& g = job.grid;
    const double points[5][2] = {{0, 0},
                                 {g.width - 1.0, 0},
                                 {0, g.height - 1.0},
                                 {g.width - 1.0, g.height - 1.0},
                                 {0.5 * (g.width - 1), 0.5 * (g.height - 1)}};
    for (int r = target.record_begin; r < target.record_end; ++r) {
      const cuda::detail::DeviceRecord& rec = params.records[r];
      const ProjectionMap& map = job.sources[static_cast<std::size_t>(r - target.record_begin)].map;
      EXPECT_FLOAT_EQ(rec.weight, map.weight);
      EXPECT_EQ(rec.layer, r - target.record_begin);
      for (const auto& ij : points) {
        double world[3];
        grid_point(g, ij[0], ij[1], 0.0, world);
        const double den = evaluate(map.den_coef, world);
        const double col = evaluate(map.col_coef, world) / den;
        const double row = evaluate(map.row_coef, world) / den;
        const double rec_den = affine(rec.den, ij[0], ij[1], 0.0);
        EXPECT_NEAR(affine(rec.col, ij[0], ij[1], 0.0) / rec_den, col, kPixels);
        EXPECT_NEAR(affine(rec.row, ij[0], ij[1], 0.0) / rec_den, row, kPixels);
      }
    }
  }
}

std::vector<cuda::BackprojectJob> default_slice_jobs(BeamKind beam, DetectorShape detector,
                                                     int projections, FakeStore& store,
                                                     int width = 48, int height = 40) {
  const ScanGeometry geometry = test::circular_geometry(beam, detector, projections);
  const std::vector<ProjectionMap> maps = make_projection_maps(geometry);
  const VolumeBox box = test::centered_box(20.0);
  std::vector<cuda::BackprojectJob> jobs;
  int s = 0;
  for (const SliceOrientation& o : default_slices(box)) {
    cuda::BackprojectJob job;
    job.grid = slice_grid(o, width, height);
    job.data = &store.targets[static_cast<std::size_t>(s++)];
    for (int p = 0; p < projections; ++p)
      job.sources.push_back({maps[static_cast<std::size_t>(p)], store.slot(p), 1.0f});
    jobs.push_back(std::move(job));
  }
  return jobs;
}

TEST(BackprojectorHost, LaunchRecordsHoldTheMapsRelativeToEachGrid) {
  for (BeamKind beam : {BeamKind::kCone, BeamKind::kParallel}) {
    SCOPED_TRACE(to_string(beam));
    const DetectorShape detector{36, 52};
    FakeStore store;
    // 3 x 20 sources: the medium parameter block; 3 x 150: the large one.
    for (int projections : {20, 150}) {
      const std::vector<cuda::BackprojectJob> jobs =
          default_slice_jobs(beam, detector, projections, store);
      const cuda::Backprojector backprojector(beam, detector, cuda::BackprojectTuning{}, kDevice);
      cuda::LaunchSequence sequence;
      ASSERT_EQ(backprojector.append(jobs, sequence), 1);
      const cuda::KernelLaunch* launch = sequence.kernel(0);
      ASSERT_NE(launch, nullptr);
      if (const auto* batch = params_of<cuda::detail::kBatchLaunchRecords>(*launch)) {
        EXPECT_EQ(projections, 20);
        expect_records_match_maps(*batch, jobs);
      } else if (const auto* large = params_of<cuda::detail::kLargeLaunchRecords>(*launch)) {
        EXPECT_EQ(projections, 150);
        expect_records_match_maps(*large, jobs);
        // The default slices of a circular scan: both vertical slices from mirrored pairs, the
        // axial one from the centre lines (its records name the line, not the texture).
        EXPECT_EQ(large->targets[0].paired, 1);
        EXPECT_EQ(large->targets[1].paired, 1);
        EXPECT_EQ(large->targets[2].paired, 0);
        EXPECT_EQ(large->targets[2].centre_line, 1);
        const int axial = large->targets[2].record_begin;
        EXPECT_EQ(large->records[axial].source,
                  reinterpret_cast<unsigned long long>(store.line(0)));
        EXPECT_EQ(large->records[0].source, 7u);
      } else {
        FAIL() << "unexpected parameter block of " << launch->argument_size() << " bytes";
      }
    }
  }
}

// A square axial slice of even side over a window of equally spaced projections whose count pairs
// them a quarter turn apart (cone: 360 degrees, a multiple of 4; parallel: 180 degrees, even): one
// record per pair in cone beam, the first source's map and line, the partner's line partner_offset
// entries on and the direction of its quarter turn; the vertical slices as before. In parallel
// beam the backprojector keeps single lines.
TEST(BackprojectorHost, AxialSlicePairsSourcesAQuarterTurnApart) {
  for (BeamKind beam : {BeamKind::kCone, BeamKind::kParallel}) {
    SCOPED_TRACE(to_string(beam));
    const DetectorShape detector{36, 52};
    FakeStore store;
    const int projections = FakeStore::kSlots;
    const std::vector<cuda::BackprojectJob> jobs =
        default_slice_jobs(beam, detector, projections, store, 48, 48);
    EXPECT_FALSE(cuda::pairs_quarter_turns(jobs[0], detector));
    EXPECT_TRUE(cuda::pairs_quarter_turns(jobs[2], detector));
    const cuda::Backprojector backprojector(beam, detector, cuda::BackprojectTuning{}, kDevice);
    cuda::LaunchSequence sequence;
    ASSERT_EQ(backprojector.append(jobs, sequence), 1);
    const auto* params = params_of<cuda::detail::kLargeLaunchRecords>(*sequence.kernel(0));
    ASSERT_NE(params, nullptr);
    if (beam == BeamKind::kParallel) {
      EXPECT_EQ(params->targets[2].centre_line, cuda::detail::kSingleLines);
      EXPECT_EQ(params->targets[2].record_end - params->targets[2].record_begin, projections);
      continue;
    }
    // The quarter-turn target's blocks come first in the launch (they run longest).
    const cuda::detail::DeviceTarget& axial = params->targets[0];
    EXPECT_EQ(axial.centre_line, cuda::detail::kQuarterTurnPairs);
    // A quarter turn is a quarter of the window over 360 degrees, half of it over 180.
    const int run = beam == BeamKind::kCone ? projections / 4 : projections / 2;
    EXPECT_EQ(axial.partner_offset, run * FakeStore::kLineEntries);
    ASSERT_EQ(axial.record_end - axial.record_begin, projections / 2);
    // Tiles over the quadrant: 24 x 24 points, 32 x 4 threads of kQuarterTurnRows rows each.
    EXPECT_EQ(axial.tiles_x, 1);
    EXPECT_EQ(axial.tiles_y,
              (24 + 4 * cuda::detail::kQuarterTurnRows - 1) / (4 * cuda::detail::kQuarterTurnRows));
    for (int pair = 0; pair < projections / 2; ++pair) {
      const cuda::detail::DeviceRecord& rec = params->records[axial.record_begin + pair];
      const int source = pair / run * 2 * run + pair % run;
      EXPECT_EQ(rec.source, reinterpret_cast<unsigned long long>(store.line(source)));
      EXPECT_TRUE(rec.layer == 1 || rec.layer == 3) << rec.layer;
    }
    // The vertical slices keep one record per source.
    for (int t : {1, 2}) {
      EXPECT_EQ(params->targets[t].record_end - params->targets[t].record_begin, projections);
      EXPECT_EQ(params->targets[t].centre_line, cuda::detail::kNoCentreLine);
      EXPECT_EQ(params->targets[t].paired, 1);
    }
    // Spread by default: the quarter-turn target's blocks, the layout's first, are spread among
    // the vertical slices' blocks.
    EXPECT_EQ(params->spread_blocks, params->targets[1].block_begin);
    EXPECT_EQ(axial.block_begin, 0);
    cuda::BackprojectTuning first;
    first.quarter_turns = cuda::QuarterTurnPlacement::kFirst;
    cuda::LaunchSequence first_sequence;
    ASSERT_EQ(cuda::Backprojector(beam, detector, first, kDevice).append(jobs, first_sequence), 1);
    EXPECT_EQ(
        params_of<cuda::detail::kLargeLaunchRecords>(*first_sequence.kernel(0))->spread_blocks, 0);
  }
}

// A call's launches after its first start early (during the previous launch's last blocks), unless
// the tuning says otherwise; the first never does, since it follows whatever the stream ran before.
TEST(BackprojectorHost, LaunchesAfterTheFirstStartEarly) {
  const DetectorShape detector{36, 52};
  FakeStore store;
  std::vector<cuda::BackprojectJob> jobs =
      default_slice_jobs(BeamKind::kParallel, detector, FakeStore::kSlots, store);
  cuda::BackprojectJob again = jobs[0];  // the same target once more: a launch of its own
  again.accumulate = true;
  jobs.push_back(again);
  for (bool early : {true, false}) {
    cuda::BackprojectTuning tuning;
    tuning.start_launches_early = early;
    cuda::LaunchSequence sequence;
    sequence.add_fixed(&store, [](cudaStream_t) {});  // what the stream ran before
    ASSERT_EQ(
        cuda::Backprojector(BeamKind::kParallel, detector, tuning, kDevice).append(jobs, sequence),
        2);
    EXPECT_FALSE(sequence.kernel(1)->starts_early());
    EXPECT_EQ(sequence.kernel(2)->starts_early(), early);
  }
}

// Jobs that fit into one launch are not split across two; later jobs that fit whole take the room
// an earlier one leaves, but never ahead of an earlier job writing the same target.
TEST(BackprojectorHost, JobsThatFitALaunchAreNotSplit) {
  const DetectorShape detector{36, 52};
  FakeStore store;
  std::vector<cuda::BackprojectJob> slices =
      default_slice_jobs(BeamKind::kParallel, detector, FakeStore::kSlots, store);
  const auto with_sources = [](cuda::BackprojectJob job, std::size_t count) {
    const std::vector<cuda::BackprojectSource> sources = job.sources;
    job.sources.clear();
    for (std::size_t s = 0; s < count; ++s)
      job.sources.push_back(sources[s % sources.size()]);
    return job;
  };
  cuda::BackprojectJob y_again = with_sources(slices[1], 100);
  y_again.accumulate = true;
  // x 320 and y 320 records do not share a launch of 480; z (100) joins x, y's second job (100)
  // waits behind y.
  const std::vector<cuda::BackprojectJob> jobs = {with_sources(slices[0], 320),
                                                  with_sources(slices[1], 320),
                                                  with_sources(slices[2], 100), y_again};
  cuda::LaunchSequence sequence;
  ASSERT_EQ(cuda::Backprojector(BeamKind::kParallel, detector, cuda::BackprojectTuning{}, kDevice)
                .append(jobs, sequence),
            3);
  // Per launch: (target, records, accumulates).
  using Targets = std::vector<std::tuple<const float*, int, int>>;
  const auto targets_of = [&](std::size_t step) {
    const auto* params = params_of<cuda::detail::kLargeLaunchRecords>(*sequence.kernel(step));
    Targets targets;
    for (int t = 0; t < params->target_count; ++t) {
      const cuda::detail::DeviceTarget& target = params->targets[t];
      targets.emplace_back(target.data, target.record_end - target.record_begin, target.accumulate);
    }
    return targets;
  };
  EXPECT_EQ(targets_of(0), (Targets{{jobs[0].data, 320, 0}, {jobs[2].data, 100, 0}}));
  EXPECT_EQ(targets_of(1), (Targets{{jobs[1].data, 320, 0}}));
  EXPECT_EQ(targets_of(2), (Targets{{jobs[3].data, 100, 1}}));

  // Three jobs of 320 whole would take three launches, filled two: y is split, and its second
  // piece, which adds to the first launch's sums, comes last in the second launch.
  const std::vector<cuda::BackprojectJob> three = {
      with_sources(slices[0], 320), with_sources(slices[1], 320), with_sources(slices[2], 320)};
  sequence = cuda::LaunchSequence();
  ASSERT_EQ(cuda::Backprojector(BeamKind::kParallel, detector, cuda::BackprojectTuning{}, kDevice)
                .append(three, sequence),
            2);
  EXPECT_EQ(targets_of(0), (Targets{{three[0].data, 320, 0}, {three[1].data, 160, 0}}));
  EXPECT_EQ(targets_of(1), (Targets{{three[2].data, 320, 0}, {three[1].data, 160, 1}}));
}

// layout_block runs every block of the layout exactly once, the first `spread` of them evenly
// apart (each gap within one block of total / spread) and the rest in their order.
TEST(BackprojectorHost, SpreadBlocksRunEveryLayoutBlockOnce) {
  for (const auto& [spread, total] :
       std::vector<std::pair<int, int>>{{0, 7}, {1, 1}, {3, 3}, {1, 10}, {37, 1000}, {500, 777}}) {
    SCOPED_TRACE(std::to_string(spread) + " of " + std::to_string(total));
    std::vector<int> runs(total, 0);
    std::vector<int> spread_positions;
    int last_other = -1;
    for (int position = 0; position < total; ++position) {
      const int block = cuda::detail::layout_block(position, spread, total);
      ASSERT_GE(block, 0);
      ASSERT_LT(block, total);
      ++runs[block];
      if (block < spread) {
        EXPECT_EQ(block, static_cast<int>(spread_positions.size()));  // in their order
        spread_positions.push_back(position);
      } else {
        EXPECT_GT(block, last_other);
        last_other = block;
      }
    }
    for (int block = 0; block < total; ++block)
      EXPECT_EQ(runs[block], 1) << "block " << block;
    const double gap = spread > 0 ? static_cast<double>(total) / spread : 0.0;
    for (std::size_t n = 1; n < spread_positions.size(); ++n) {
      EXPECT_LE(std::abs(spread_positions[n] - spread_positions[n - 1] - gap), 1.0)
          << "between spread blocks " << n - 1 << " and " << n;
    }
  }
}

// A window whose sources do not pair a quarter turn apart (an odd count, or unequal steps)
// samples the axial slice from single lines.
TEST(BackprojectorHost, AxialSliceWithoutQuarterTurnsTakesSingleLines) {
  const DetectorShape detector{36, 52};
  FakeStore store;
  std::vector<cuda::BackprojectJob> jobs =
      default_slice_jobs(BeamKind::kCone, detector, 150, store, 48, 48);  // 360 / 4 not a step
  EXPECT_FALSE(cuda::pairs_quarter_turns(jobs[2], detector));
  jobs = default_slice_jobs(BeamKind::kCone, detector, 160, store, 48, 48);
  jobs[2].sources[7].map = jobs[2].sources[9].map;  // one source out of step
  EXPECT_FALSE(cuda::pairs_quarter_turns(jobs[2], detector));
  jobs = default_slice_jobs(BeamKind::kCone, detector, 160, store, 48, 46);  // not square
  EXPECT_FALSE(cuda::pairs_quarter_turns(jobs[2], detector));
}

struct Parameter {
  int a;
  float b;
  int c[6];
};

__global__ void parameter_kernel(Parameter) {}

TEST(KernelLaunchHost, ParametersBuiltInPlaceEqualOnesCopiedIn) {
  Parameter value;
  std::memset(&value, 0, sizeof value);
  value.a = 3;
  value.b = 0.25f;
  value.c[4] = -9;
  const cuda::KernelLaunch copied(parameter_kernel, dim3(5), dim3(64), value);
  cuda::KernelLaunch in_place = cuda::KernelLaunch::in_place(parameter_kernel, dim3(64));
  Parameter& p = in_place.parameter<Parameter>();
  EXPECT_EQ(p.a, 0);  // value-initialised
  p.a = 3;
  p.b = 0.25f;
  p.c[4] = -9;
  in_place.set_grid(dim3(5));
  ASSERT_EQ(in_place.argument_size(), copied.argument_size());
  EXPECT_EQ(std::memcmp(in_place.argument_bytes(), copied.argument_bytes(), sizeof(Parameter)), 0);
  EXPECT_EQ(in_place.grid().x, 5u);
  EXPECT_EQ(in_place.block().x, 64u);
  EXPECT_EQ(in_place.function(), copied.function());
  EXPECT_THROW(in_place.parameter<int>(), std::logic_error);
}

}  // namespace
}  // namespace slicestream

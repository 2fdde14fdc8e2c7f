// The CUDA backprojector against its CPU twin (cpu::backproject_rows) on fresh random
// projections: cone and parallel beam, both interpolations (exact: to rounding; hardware texture
// filtering with fp32 and fp16 texels and mirrored fp16 pairs: within 1e-3; the axial slices
// through the source plane from the store's centre lines), which targets the mirrored pairs
// serve two rows at a time and which the centre lines serve, every points-per-thread value, several
// block shapes, axis-aligned, oblique and one-pixel slices, slices reaching past the detector,
// volume plane ranges, several arrays behind one store, many sources (several launches and more
// records than a block stages at once), and the same target twice in one call.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/backproject_cpu.hpp"
#include "kernels/cuda/backprojector.hpp"
#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/projection_texture_store.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace slicestream {
namespace {

using cuda::BackprojectInterpolation;
using test::RandomSource;

struct Fixture {
  ScanGeometry geometry;
  std::vector<ProjectionMap> maps;
  std::vector<std::vector<float>> projections;
  std::unique_ptr<cuda::ProjectionTextureStore> store;
};

Fixture make_fixture(RandomSource& random, BeamKind beam, DetectorShape detector, int count,
                     cuda::ProjectionStorage storage) {
  Fixture f;
  f.geometry = test::circular_geometry(beam, detector, count);
  f.maps = make_projection_maps(f.geometry);
  cuda::ProjectionStoreOptions options;
  options.max_layers_per_array = 7;  // several arrays behind one store
  options.storage = storage;
  f.store = std::make_unique<cuda::ProjectionTextureStore>(0, detector, count, options);
  for (int p = 0; p < count; ++p) {
    f.projections.push_back(test::smooth_random_image(random, detector.rows, detector.cols));
    cuda::DeviceBuffer<float> d = test::to_device(f.projections.back());
    f.store->write_slot(p, d.data(), nullptr);
    SLICESTREAM_CUDA_CHECK(cudaDeviceSynchronize());
  }
  return f;
}

// Slices of every kind through a box of half-size 20 mm.
std::vector<GridSpec> test_grids(RandomSource& random) {
  const VolumeBox box = test::centered_box(20.0);
  const auto slices = default_slices(box);
  // The first two share a tiling: they form an interleaved group. The second is upside down (its
  // rows run from the top), so that from mirrored pairs its first rows are the folded ones.
  const SliceOrientation upside_down = SliceOrientation::from_axes(
      slices[1].x_axis(), -1.0 * slices[1].y_axis(), slices[1].base() + slices[1].y_axis());
  std::vector<GridSpec> grids = {slice_grid(slices[0], 45, 38), slice_grid(upside_down, 45, 38),
                                 slice_grid(slices[2], 50, 50)};
  // Oblique: random orthogonal axes through a random point near the centre.
  const Vec3 a = {random.uniform(-1, 1), random.uniform(-1, 1), random.uniform(-1, 1)};
  const Vec3 b0 = {random.uniform(-1, 1), random.uniform(-1, 1), random.uniform(-1, 1)};
  const Vec3 x = (30.0 / norm(a)) * a;
  const Vec3 b = b0 - (dot(b0, a) / dot(a, a)) * a;
  const Vec3 y = (25.0 / norm(b)) * b;
  const Vec3 centre = {random.uniform(-3, 3), random.uniform(-3, 3), random.uniform(-3, 3)};
  grids.push_back(
      slice_grid(SliceOrientation::from_axes(x, y, centre - 0.5 * x - 0.5 * y), 33, 41));
  // One-pixel slices and one reaching well past the detector (zero border).
  grids.push_back(slice_grid(slices[2], 1, 1));
  grids.push_back(slice_grid(slices[0], 1, 17));
  grids.push_back(slice_grid(slices[1], 23, 1));
  grids.push_back(slice_grid(default_slices(test::centered_box(60.0))[2], 40, 40));
  return grids;
}

std::vector<float> cpu_backproject(const Fixture& f, const GridSpec& grid,
                                   const std::vector<int>& slots, float scale,
                                   std::vector<float> initial, int plane_begin, int plane_end) {
  std::vector<cpu::ProjectionRef> refs;
  for (int s : slots) {
    refs.push_back(
        {f.projections[static_cast<std::size_t>(s)].data(), f.maps[static_cast<std::size_t>(s)]});
  }
  for (int k = plane_begin; k < plane_end; ++k) {
    cpu::backproject_rows(grid, f.geometry.detector, refs.data(), static_cast<int>(refs.size()),
                          scale, initial.data(), k, 0, grid.height);
  }
  return initial;
}

std::vector<cuda::BackprojectSource> sources_for(const Fixture& f, const std::vector<int>& slots,
                                                 float scale) {
  std::vector<cuda::BackprojectSource> sources;
  for (int s : slots) {
    sources.push_back({f.maps[static_cast<std::size_t>(s)], f.store->slot_ref(s), scale});
  }
  return sources;
}

// What each storage is read with, and how close to the fp32 CPU twin that must come: the exact
// path to rounding; hardware filtering (8-bit weights, and fp16 texels rounded to 11 bits)
// within the 1e-3 the texture path is held to.
BackprojectInterpolation interpolation_of(cuda::ProjectionStorage storage) {
  return cuda::is_texture(storage) ? BackprojectInterpolation::kTexture
                                   : BackprojectInterpolation::kExact;
}

double tolerance_of(cuda::ProjectionStorage storage) {
  return cuda::is_texture(storage) ? 1e-3 : 1e-5;
}

// `count` projections: 45 share no quarter turns; 48 pair the centre lines of sources a quarter
// turn apart for the square axial slices (pairs_quarter_turns).
void check_all_slices(BeamKind beam, cuda::ProjectionStorage storage,
                      DetectorShape detector = {33, 61}, int count = 45) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  SCOPED_TRACE(std::string("storage ") + cuda::to_string(storage) + ", detector " +
               std::to_string(detector.rows) + " x " + std::to_string(detector.cols) + ", " +
               std::to_string(count) + " projections");
  // More records than a block stages at once.
  Fixture f = make_fixture(random, beam, detector, count, storage);
  const std::vector<GridSpec> grids = test_grids(random);
  std::vector<int> slots;
  for (int s = 0; s < count; ++s)
    slots.push_back(s);
  const float scale = angular_weight(count);

  std::vector<std::vector<float>> expected;
  for (const GridSpec& g : grids) {
    expected.push_back(
        cpu_backproject(f, g, slots, scale, std::vector<float>(g.points(), 0.0f), 0, 1));
  }
  // A slice of one or a few pixels can fall where the random projections' contributions nearly
  // cancel; the texture path's rounding is relative to the values summed, not to their sum, so
  // such a slice's error is judged against the typical pixel of the first (full) slice.
  double sum_squares = 0;
  for (float v : expected[0])
    sum_squares += static_cast<double>(v) * v;
  const double typical_pixel = std::sqrt(sum_squares / static_cast<double>(expected[0].size()));
  const auto error_of = [&](const std::vector<float>& actual, std::size_t t) {
    double diff = 0;
    double norm = 0;
    for (std::size_t i = 0; i < actual.size(); ++i) {
      const double d = static_cast<double>(actual[i]) - expected[t][i];
      diff += d * d;
      norm += static_cast<double>(expected[t][i]) * expected[t][i];
    }
    const double floor = typical_pixel * typical_pixel * static_cast<double>(actual.size());
    return std::sqrt(diff / std::max(norm, floor));
  };
  const cuda::BackprojectTuning shapes[] = {
      {32, 4, 1},
      {32, 8, 2},
      {16, 16, 4},
      {64, 2, 8},
      {128, 1, 4},
      {32, 2, 16},
      {32, 4, 0},
      {32, 4, 4, BackprojectInterpolation::kTexture, cuda::TargetInterleaving::kAlways},
      {32, 4, 0, BackprojectInterpolation::kTexture, cuda::TargetInterleaving::kAutomatic,
       cuda::QuarterTurnPlacement::kFirst}};
  double worst = 0;
  for (cuda::BackprojectTuning tuning : shapes) {
    tuning.interpolation = interpolation_of(storage);
    SCOPED_TRACE(std::string(to_string(tuning.interpolation)) + " block " +
                 std::to_string(tuning.block_x) + "x" + std::to_string(tuning.block_y) +
                 " points " + std::to_string(tuning.points_per_thread) + " interleaving " +
                 cuda::to_string(tuning.interleave) + ", quarter turns " +
                 cuda::to_string(tuning.quarter_turns));
    const cuda::Backprojector backprojector(beam, detector, tuning);
    std::vector<cuda::DeviceBuffer<float>> targets;
    std::vector<cuda::BackprojectJob> jobs;
    for (const GridSpec& g : grids) {
      // Poisoned: an overwriting job must write every point.
      targets.push_back(
          test::to_device(std::vector<float>(g.points(), std::numeric_limits<float>::quiet_NaN())));
      cuda::BackprojectJob job;
      job.grid = g;
      job.data = targets.back().data();
      job.sources = sources_for(f, slots, scale);
      jobs.push_back(std::move(job));
    }
    EXPECT_EQ(backprojector.run(jobs, nullptr), 1);  // all eight targets in one launch
    for (std::size_t t = 0; t < grids.size(); ++t) {
      const std::vector<float> actual = test::to_host(targets[t].data(), grids[t].points());
      for (float v : actual)
        ASSERT_TRUE(std::isfinite(v)) << "target " << t << " unwritten";
      const double error = error_of(actual, t);
      if (grids[t].points() > 100) worst = std::max(worst, error);
      EXPECT_LE(error, tolerance_of(storage)) << "target " << t;
      // From fp32 texels, a target on the centre line is interpolated in fp32 from the lines: as
      // close to the twin as the exact path, up to the rows' mean and the twin's row rounding.
      if (storage == cuda::ProjectionStorage::kTexture &&
          cuda::maps_onto_centre_line(jobs[t], detector)) {
        EXPECT_LE(error, 1e-4) << "target " << t << " on the centre line";
      }
      // The square axial slices (targets 2 and 7) read quarter-turn pairs of lines where the
      // window pairs its sources so.
      if (cuda::is_texture(storage) && (t == 2 || t == 7)) {
        EXPECT_EQ(cuda::pairs_quarter_turns(jobs[t], detector), count % 4 == 0) << "target " << t;
      }
    }
  }
  std::printf("%s, %s: worst error vs the fp32 CPU twin %.2e\n", to_string(beam),
              cuda::to_string(storage), worst);
}

const cuda::ProjectionStorage kStorages[] = {
    cuda::ProjectionStorage::kTexture, cuda::ProjectionStorage::kTextureHalf,
    cuda::ProjectionStorage::kTextureHalfMirrored, cuda::ProjectionStorage::kLinear};

// Mirrored pairs with an odd detector height (the centre row paired with itself) and, below, an
// even one (the two centre rows stored twice).
TEST(BackprojectorCuda, ConeSlicesMatchCpu) {
  SLICESTREAM_REQUIRE_GPU();
  for (cuda::ProjectionStorage storage : kStorages)
    check_all_slices(BeamKind::kCone, storage);
  check_all_slices(BeamKind::kCone, cuda::ProjectionStorage::kTextureHalfMirrored, {32, 61});
}

TEST(BackprojectorCuda, ParallelSlicesMatchCpu) {
  SLICESTREAM_REQUIRE_GPU();
  for (cuda::ProjectionStorage storage : kStorages)
    check_all_slices(BeamKind::kParallel, storage);
  check_all_slices(BeamKind::kParallel, cuda::ProjectionStorage::kTextureHalfMirrored, {32, 61});
}

// 48 projections (cone over 360 degrees, parallel over 180) pair sources a quarter turn apart:
// in cone beam the square axial slices from quarter-turn pairs of centre lines, odd and even
// detector heights (parallel beam: the same geometry from single lines).
TEST(BackprojectorCuda, QuarterTurnPairsMatchCpu) {
  SLICESTREAM_REQUIRE_GPU();
  for (BeamKind beam : {BeamKind::kCone, BeamKind::kParallel}) {
    check_all_slices(beam, cuda::ProjectionStorage::kTexture, {33, 61}, 48);
    check_all_slices(beam, cuda::ProjectionStorage::kTextureHalfMirrored, {32, 61}, 48);
    check_all_slices(beam, cuda::ProjectionStorage::kTextureHalf, {33, 61}, 48);
  }
}

// A job of `grid`'s planes over every projection of `geometry`, with no store behind it: for the
// tests of which targets a sampling path serves.
cuda::BackprojectJob geometry_job(const ScanGeometry& geometry, const GridSpec& grid) {
  cuda::BackprojectJob job;
  job.grid = grid;
  job.plane_end = grid.depth;
  for (const ProjectionMap& map : make_projection_maps(geometry))
    job.sources.push_back({map, cuda::TextureRef{}, 1.0f});
  return job;
}

// A cone-beam scan of 24 angles onto a 33 x 61 detector whose centre lies `offset_v_mm` above the
// source plane.
ScanGeometry cone_geometry_shifted_along_v(double offset_v_mm) {
  CircularConeParams params;
  for (int p = 0; p < 24; ++p)
    params.angles_rad.push_back(0.25 * p);
  params.source_origin_mm = 200.0;
  params.origin_detector_mm = 200.0;
  params.pixel_width_mm = 2.0;
  params.pixel_height_mm = 2.0;
  params.detector_offset_v_mm = offset_v_mm;
  return make_cone_geometry({33, 61}, params);
}

// Which targets one fetch of a mirrored pair serves two rows of: vertical slices through the
// centre plane of a circular scan (either way up, any width and height), for cone and parallel
// beam and both detector parities; not an axial or oblique slice, a vertical slice off the
// centre plane, a slice whose vertical axis is its width, or any slice of a scan whose detector
// is shifted along v.
TEST(BackprojectorCuda, MirroredPairsServeVerticalSlicesThroughTheCentrePlane) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const VolumeBox box = test::centered_box(20.0);
  const auto slices = default_slices(box);
  const std::vector<GridSpec> grids = test_grids(random);
  const auto pairs = [](const ScanGeometry& geometry, const GridSpec& grid) {
    return cuda::pairs_mirrored_rows(geometry_job(geometry, grid), geometry.detector);
  };
  const SliceOrientation raised = SliceOrientation::from_axes(
      slices[0].x_axis(), slices[0].y_axis(), slices[0].base() + Vec3{0.0, 0.0, 1.3});
  const SliceOrientation sideways =
      SliceOrientation::from_axes(slices[0].y_axis(), slices[0].x_axis(), slices[0].base());
  for (const BeamKind beam : {BeamKind::kCone, BeamKind::kParallel}) {
    for (const DetectorShape detector : {DetectorShape{33, 61}, DetectorShape{32, 61}}) {
      SCOPED_TRACE(std::string(to_string(beam)) + ", " + std::to_string(detector.rows) + " rows");
      const ScanGeometry geometry = test::circular_geometry(beam, detector, 24);
      EXPECT_TRUE(pairs(geometry, grids[0]));  // slices[0], 45 x 38
      EXPECT_TRUE(pairs(geometry, grids[1]));  // slices[1] upside down
      EXPECT_TRUE(pairs(geometry, slice_grid(slices[1], 17, 1)));
      EXPECT_TRUE(pairs(geometry, slice_grid(slices[0], 64, 63)));
      EXPECT_FALSE(pairs(geometry, grids[2]));  // axial
      EXPECT_FALSE(pairs(geometry, grids[3]));  // oblique
      EXPECT_FALSE(pairs(geometry, slice_grid(raised, 45, 38)));
      EXPECT_FALSE(pairs(geometry, slice_grid(sideways, 38, 45)));
    }
  }
  EXPECT_TRUE(pairs(cone_geometry_shifted_along_v(0.0), grids[0]));
  EXPECT_FALSE(pairs(cone_geometry_shifted_along_v(0.5), grids[0]));
}

// Which targets are sampled from the centre lines: the axial slice through the source plane of a
// circular scan (any size, rotated in its plane or not, cone and parallel beam, both detector
// parities); not a vertical or oblique slice, a raised axial slice, a volume, or any slice of a
// scan whose detector is shifted along v.
TEST(BackprojectorCuda, CentreLinesServeTheAxialSliceThroughTheSourcePlane) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const VolumeBox box = test::centered_box(20.0);
  const auto slices = default_slices(box);
  const std::vector<GridSpec> grids = test_grids(random);
  const auto on_line = [](const ScanGeometry& geometry, const GridSpec& grid) {
    return cuda::maps_onto_centre_line(geometry_job(geometry, grid), geometry.detector);
  };
  const double turn = random.uniform(0.0, 6.283);
  const Vec3 x = {20.0 * std::cos(turn), 20.0 * std::sin(turn), 0.0};
  const Vec3 y = {-25.0 * std::sin(turn), 25.0 * std::cos(turn), 0.0};
  const SliceOrientation rotated = SliceOrientation::from_axes(x, y, -0.5 * x - 0.5 * y);
  const SliceOrientation raised = SliceOrientation::from_axes(
      slices[2].x_axis(), slices[2].y_axis(), slices[2].base() + Vec3{0.0, 0.0, 1.3});
  for (const BeamKind beam : {BeamKind::kCone, BeamKind::kParallel}) {
    for (const DetectorShape detector : {DetectorShape{33, 61}, DetectorShape{32, 61}}) {
      SCOPED_TRACE(std::string(to_string(beam)) + ", " + std::to_string(detector.rows) + " rows");
      const ScanGeometry geometry = test::circular_geometry(beam, detector, 24);
      EXPECT_TRUE(on_line(geometry, grids[2]));  // axial, 50 x 50
      EXPECT_TRUE(on_line(geometry, grids[4]));  // axial, one pixel
      EXPECT_TRUE(on_line(geometry, grids[7]));  // axial, reaching past the detector
      EXPECT_TRUE(on_line(geometry, slice_grid(rotated, 37, 29)));
      EXPECT_FALSE(on_line(geometry, grids[0]));  // vertical
      EXPECT_FALSE(on_line(geometry, grids[3]));  // oblique
      EXPECT_FALSE(on_line(geometry, slice_grid(raised, 45, 38)));
      EXPECT_FALSE(on_line(geometry, volume_grid(box, 9, 7, 5)));
    }
  }
  EXPECT_TRUE(on_line(cone_geometry_shifted_along_v(0.0), grids[2]));
  EXPECT_FALSE(on_line(cone_geometry_shifted_along_v(0.5), grids[2]));
}

void check_plane_ranges_and_many_sources(RandomSource& random, cuda::ProjectionStorage storage) {
  const DetectorShape detector{24, 40};
  const int count = 1000;  // more than one launch holds
  Fixture f = make_fixture(random, BeamKind::kCone, detector, count, storage);
  const GridSpec volume = volume_grid(test::centered_box(20.0), 9, 7, 5);
  const GridSpec slice = slice_grid(default_slices(test::centered_box(20.0))[1], 31, 27);
  std::vector<int> all;
  for (int s = 0; s < count; ++s)
    all.push_back(s);
  const std::vector<int> some = {3, 17, 99, 100, 449};
  const float scale = 0.01f;

  const std::vector<float> volume_initial = random.floats(volume.points(), -1.0, 1.0);
  const std::vector<float> slice_initial = random.floats(slice.points(), -1.0, 1.0);
  // volume planes [1, 4) += BP(all); slice := BP(all) then, as a second job on the same
  // target in the same call, += BP(some).
  const std::vector<float> volume_expected =
      cpu_backproject(f, volume, all, scale, volume_initial, 1, 4);
  std::vector<float> slice_expected =
      cpu_backproject(f, slice, all, scale, std::vector<float>(slice.points(), 0.0f), 0, 1);
  slice_expected = cpu_backproject(f, slice, some, scale, slice_expected, 0, 1);

  cuda::DeviceBuffer<float> volume_target = test::to_device(volume_initial);
  cuda::DeviceBuffer<float> slice_target = test::to_device(slice_initial);
  std::vector<cuda::BackprojectJob> jobs(3);
  jobs[0].grid = volume;
  jobs[0].data = volume_target.data();
  jobs[0].plane_begin = 1;
  jobs[0].plane_end = 4;
  jobs[0].accumulate = true;
  jobs[0].sources = sources_for(f, all, scale);
  jobs[1].grid = slice;
  jobs[1].data = slice_target.data();
  jobs[1].sources = sources_for(f, all, scale);
  jobs[2].grid = slice;
  jobs[2].data = slice_target.data();
  jobs[2].accumulate = true;
  jobs[2].sources = sources_for(f, some, scale);
  // Launches that start early (during the previous one's last blocks) wait for it before they
  // touch their targets: later launches add to what earlier ones wrote.
  const cuda::Stream stream;
  for (const auto& [points, early] :
       std::vector<std::pair<int, bool>>{{1, true}, {4, true}, {8, true}, {4, false}}) {
    SCOPED_TRACE("points per thread " + std::to_string(points) + (early ? ", early" : ""));
    SLICESTREAM_CUDA_CHECK(cudaMemcpy(volume_target.data(), volume_initial.data(),
                                      volume_target.bytes(), cudaMemcpyHostToDevice));
    cuda::BackprojectTuning tuning;
    tuning.points_per_thread = points;
    tuning.interpolation = interpolation_of(storage);
    tuning.start_launches_early = early;
    cuda::Backprojector backprojector(BeamKind::kCone, detector, tuning);
    EXPECT_GE(backprojector.run(jobs, stream.get()), 3);
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    EXPECT_LE(
        test::relative_error(test::to_host(volume_target.data(), volume.points()), volume_expected),
        tolerance_of(storage));
    EXPECT_LE(
        test::relative_error(test::to_host(slice_target.data(), slice.points()), slice_expected),
        tolerance_of(storage));
  }
}

TEST(BackprojectorCuda, VolumePlaneRangesAccumulateAndManySources) {
  SLICESTREAM_REQUIRE_GPU();
  RandomSource random;
  SCOPED_TRACE(random.trace());
  for (cuda::ProjectionStorage storage : kStorages) {
    SCOPED_TRACE(cuda::to_string(storage));
    check_plane_ranges_and_many_sources(random, storage);
  }
}

// The automatic points per thread: the largest of 8, 4 and 2 that keeps six blocks per
// multiprocessor, at most 4 in a launch with a target served by mirrored pairs.
TEST(BackprojectorCuda, AutomaticPointsPerThreadAreAtMostFourWithPairedTargets) {
  SLICESTREAM_REQUIRE_GPU();
  const DetectorShape detector{64, 96};
  const ScanGeometry geometry = test::circular_geometry(BeamKind::kCone, detector, 24);
  const auto slices = default_slices(test::centered_box(20.0));
  const auto job_of = [&](const SliceOrientation& slice, bool mirrored) {
    cuda::BackprojectJob job;
    job.grid = slice_grid(slice, 2048, 2048);  // blocks enough for 8 points per thread
    cuda::TextureRef texture;
    texture.mirrored = mirrored;
    for (const ProjectionMap& map : make_projection_maps(geometry))
      job.sources.push_back({map, texture, 1.0f});
    return job;
  };
  const cuda::Backprojector backprojector(BeamKind::kCone, detector);
  const auto points = [&](const std::vector<cuda::BackprojectJob>& jobs) {
    return backprojector.resolved_tuning(jobs).points_per_thread;
  };
  EXPECT_EQ(points({job_of(slices[0], false)}), 8);  // fp16 texels: not paired
  EXPECT_EQ(points({job_of(slices[0], true)}), 4);   // a vertical slice from mirrored pairs
  EXPECT_EQ(points({job_of(slices[2], true)}), 8);   // the axial slice is never paired
  EXPECT_EQ(points({job_of(slices[2], true), job_of(slices[0], true)}), 4);
}

// Automatic interleaving: on where the largest job's sources hold more detector values than the
// device's L2 cache holds fp16 values (the detector rows the slices share would not stay in L2
// otherwise), off below; a tuning that says always or never is kept.
TEST(BackprojectorCuda, TargetsAreInterleavedWhereTheirSourcesExceedTheL2Cache) {
  SLICESTREAM_REQUIRE_GPU();
  int l2_bytes = 0;
  SLICESTREAM_CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, 0));
  ASSERT_GT(l2_bytes, 0);
  const DetectorShape detector{256, 512};  // 256 KiB of fp16 values per source
  const std::size_t fitting = static_cast<std::size_t>(l2_bytes) / (detector.pixels() * 2);
  const ScanGeometry geometry =
      test::circular_geometry(BeamKind::kCone, detector, static_cast<int>(fitting) + 1);
  const std::vector<ProjectionMap> maps = make_projection_maps(geometry);
  const auto slices = default_slices(test::centered_box(20.0));
  const auto jobs_with = [&](std::size_t sources) {
    std::vector<cuda::BackprojectJob> jobs(2);
    for (std::size_t n = 0; n < jobs.size(); ++n) {
      jobs[n].grid = slice_grid(slices[n], 64, 64);
      for (std::size_t s = 0; s < sources; ++s)
        jobs[n].sources.push_back({maps[s], cuda::TextureRef{}, 1.0f});
    }
    return jobs;
  };
  const cuda::Backprojector automatic(BeamKind::kCone, detector);
  EXPECT_EQ(automatic.resolved_tuning(jobs_with(fitting)).interleave,
            cuda::TargetInterleaving::kNever);
  EXPECT_EQ(automatic.resolved_tuning(jobs_with(fitting + 1)).interleave,
            cuda::TargetInterleaving::kAlways);
  for (const auto chosen : {cuda::TargetInterleaving::kAlways, cuda::TargetInterleaving::kNever}) {
    cuda::BackprojectTuning tuning;
    tuning.interleave = chosen;
    const cuda::Backprojector backprojector(BeamKind::kCone, detector, tuning);
    EXPECT_EQ(backprojector.resolved_tuning(jobs_with(1)).interleave, chosen);
    EXPECT_EQ(backprojector.resolved_tuning(jobs_with(fitting + 1)).interleave, chosen);
  }
}

TEST(BackprojectorCuda, RejectsInvalidTuningAndJobs) {
  SLICESTREAM_REQUIRE_GPU();
  EXPECT_THROW(cuda::Backprojector(BeamKind::kParallel, {4, 4}, {32, 4, 3}), cuda::CudaError);
  EXPECT_THROW(cuda::Backprojector(BeamKind::kParallel, {4, 4}, {33, 1, 1}), cuda::CudaError);
  const cuda::Backprojector backprojector(BeamKind::kParallel, {4, 4});
  cuda::BackprojectJob job;
  job.grid = volume_grid(test::centered_box(1.0), 2, 2, 2);
  job.data = nullptr;
  EXPECT_THROW(backprojector.run({job}, nullptr), cuda::CudaError);
}

}  // namespace
}  // namespace slicestream

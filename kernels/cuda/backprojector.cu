#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cuda/backproject_kernel.cuh"
#include "kernels/cuda/backprojector.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_probe.hpp"

namespace slicestream::cuda {
namespace {

using detail::DeviceRecord;
using detail::DeviceTarget;
using detail::LaunchParams;
using detail::SampleKind;

template <int kMaxRecords>
using KernelFn = void (*)(LaunchParams<kMaxRecords>);

template <bool kCone, SampleKind kSample, int kPoints, int kMaxRecords, bool kQuarterTurns>
KernelFn<kMaxRecords> kernel_for() {
  if constexpr (kQuarterTurns) {
    return detail::backproject_quarter_turn_kernel<kCone, kSample, kPoints, kMaxRecords>;
  } else {
    return detail::backproject_kernel<kCone, kSample, kPoints, kMaxRecords>;
  }
}

template <bool kCone, SampleKind kSample, int kMaxRecords, bool kQuarterTurns>
KernelFn<kMaxRecords> pick_points(int points) {
  switch (points) {
    case 1:
      return kernel_for<kCone, kSample, 1, kMaxRecords, kQuarterTurns>();
    case 2:
      return kernel_for<kCone, kSample, 2, kMaxRecords, kQuarterTurns>();
    case 4:
      return kernel_for<kCone, kSample, 4, kMaxRecords, kQuarterTurns>();
    case 8:
      return kernel_for<kCone, kSample, 8, kMaxRecords, kQuarterTurns>();
    case 16:
      return kernel_for<kCone, kSample, 16, kMaxRecords, kQuarterTurns>();
    default:
      // validate() admits no other value; never run a kernel whose tiling differs from the host's.
      throw CudaError("backprojection: no kernel for " + std::to_string(points) +
                      " points per thread");
  }
}

template <bool kCone, int kMaxRecords, bool kQuarterTurns>
KernelFn<kMaxRecords> pick_sample(SampleKind kind, int points) {
  switch (kind) {
    case SampleKind::kTexture:
      return pick_points<kCone, SampleKind::kTexture, kMaxRecords, kQuarterTurns>(points);
    case SampleKind::kMirroredTexture:
      return pick_points<kCone, SampleKind::kMirroredTexture, kMaxRecords, kQuarterTurns>(points);
    default:
      if constexpr (kQuarterTurns) {
        throw CudaError("backprojection: quarter-turn pairs need texture interpolation");
      } else {
        return pick_points<kCone, SampleKind::kExact, kMaxRecords, false>(points);
      }
  }
}

// The kernel for a launch; one with a quarter-turn target only for cone-beam full recomputes'
// launches (takes_quarter_turns: its quarter-turn tile needs more registers, which would cost the
// per-frame launches occupancy), so only those instances exist.
template <int kMaxRecords>
KernelFn<kMaxRecords> pick_kernel(BeamKind beam, SampleKind kind, int points, bool quarter_turns) {
  if constexpr (kMaxRecords == detail::kLargeLaunchRecords) {
    if (quarter_turns && beam == BeamKind::kCone) {
      return pick_sample<true, kMaxRecords, true>(kind, points);
    }
  }
  if (quarter_turns) {
    throw CudaError(
        "backprojection: quarter-turn pairs only in cone-beam launches of the large parameter "
        "block");
  }
  return beam == BeamKind::kCone ? pick_sample<true, kMaxRecords, false>(kind, points)
                                 : pick_sample<false, kMaxRecords, false>(kind, points);
}

// Whether one fetch of a mirrored pair serves rows j and height - 1 - j of a target, and which of
// them project onto the upper half of the detector (the rows a thread fetches for).
enum class MirrorPairing { kNone, kFirstRowsUpper, kLastRowsUpper };

// How a square slice sampled from centre lines pairs its sources a quarter turn apart
// (quarter_turn_pairs): source k of every first half of a run of 2 `run` sources with source
// k + run, whose centre line lies `partner_offset` entries after k's and whose map is k's after a
// quarter turn of the slice about its centre, forwards (shift 1) or backwards (shift 3).
struct QuarterTurns {
  std::size_t run = 0;  // 0: no pairs
  int partner_offset = 0;
  std::vector<int> shifts;  // per pair

  std::size_t pairs() const { return shifts.size(); }
  // The first source of pair `pair`.
  std::size_t source_of(std::size_t pair) const { return pair / run * 2 * run + pair % run; }
};

// A part of one job that goes into one launch: records [first, first + count), one per source or,
// with quarter-turn pairs, one per pair.
struct Piece {
  const BackprojectJob* job;
  std::size_t first;
  std::size_t count;
  bool accumulate;
  MirrorPairing pairing = MirrorPairing::kNone;
  bool centre_line = false;               // sampled from the sources' centre lines
  const QuarterTurns* quarter = nullptr;  // and two of them per record
};

// The grid of a job in double: centre of point (0, 0, plane_begin) and the steps per index.
struct GridFrame {
  double origin[4];   // homogeneous: origin[3] = 1
  double step[3][4];  // per i, j, k; homogeneous 0
  // by_component[a] = (origin[a], step[0][a], step[1][a], step[2][a]): a map's coefficients
  // relative to the grid are then four multiply-adds of 4-vectors (relative_to_grid).
  double by_component[4][4];
};

GridFrame grid_frame(const BackprojectJob& job) {
  const GridSpec& g = job.grid;
  const double axes[3][3] = {{g.x_axis.x, g.x_axis.y, g.x_axis.z},
                             {g.y_axis.x, g.y_axis.y, g.y_axis.z},
                             {g.z_axis.x, g.z_axis.y, g.z_axis.z}};
  const double sizes[3] = {static_cast<double>(g.width), static_cast<double>(g.height),
                           static_cast<double>(g.depth)};
  const double base[3] = {g.base.x, g.base.y, g.base.z};
  GridFrame f{};
  for (int a = 0; a < 3; ++a) {
    for (int d = 0; d < 3; ++d)
      f.step[d][a] = axes[d][a] / sizes[d];
    f.origin[a] =
        base[a] + 0.5 * f.step[0][a] + 0.5 * f.step[1][a] + (job.plane_begin + 0.5) * f.step[2][a];
  }
  f.origin[3] = 1.0;
  for (int a = 0; a < 4; ++a) {
    f.by_component[a][0] = f.origin[a];
    for (int d = 0; d < 3; ++d)
      f.by_component[a][d + 1] = f.step[d][a];
  }
  return f;
}

double apply(const float* coef, const double* point) {
  return static_cast<double>(coef[0]) * point[0] + static_cast<double>(coef[1]) * point[1] +
         static_cast<double>(coef[2]) * point[2] + static_cast<double>(coef[3]) * point[3];
}

// Whether every source of `job` maps each point (i, j, k) of its target and the mirrored point
// (i, height - 1 - j, k) onto the same column and onto rows mirrored about the detector's centre
// row (row and rows - 1 - row), to a thousandth of a pixel, so that one fetch of a mirrored pair
// serves both: a vertical slice centred on the source plane of a circular scan whose detector is
// centred on that plane; and whether its first rows project onto the upper half of the detector
// for every source (else its last ones do). Numerators and denominator are affine in the grid
// indices, v(i, j, k) = v0 + i vi + j vj + k vk, so for a point p = (i, 0, k) and its mirror m:
// den(p) - den(m) = -J denj and col(p) - col(m) = -J colj (J = height - 1, the same at every i and
// k), and row(p) + row(m) - L (den(p) + den(m)) / 2 (L = rows - 1) is affine in i and k, as is
// the least denominator: all extreme at the corners of the grid's first row (two for a slice,
// four for a volume). The recompute of every slice move runs this for every source, so each
// source takes only the coefficients these tests need.
MirrorPairing mirror_pairing(const BackprojectJob& job, DetectorShape detector) {
  constexpr double kTolerancePixels = 1e-3;
  if (job.sources.empty()) return MirrorPairing::kNone;
  const GridFrame frame = grid_frame(job);
  const double last_i = job.grid.width - 1.0;
  const double last_j = job.grid.height - 1.0;
  const double last_k = job.plane_end - job.plane_begin - 1.0;
  const double half_last_row = 0.5 * (detector.rows - 1.0);
  // The first row's corners: i and k at their ends (one value where the grid has one).
  const int i_ends = last_i > 0.0 ? 2 : 1;
  const int k_ends = last_k > 0.0 ? 2 : 1;
  int first_rows_upper = 0;  // sources whose row 0 projects above / below the centre row
  int first_rows_lower = 0;
  for (const BackprojectSource& source : job.sources) {
    const ProjectionMap& map = source.map;
    const double den0 = apply(map.den_coef, frame.origin);
    const double den_i = apply(map.den_coef, frame.step[0]);
    const double den_j = apply(map.den_coef, frame.step[1]);
    const double den_k = last_k > 0.0 ? apply(map.den_coef, frame.step[2]) : 0.0;
    const double row0 = apply(map.row_coef, frame.origin);
    const double row_i = apply(map.row_coef, frame.step[0]);
    const double row_j = apply(map.row_coef, frame.step[1]);
    const double row_k = last_k > 0.0 ? apply(map.row_coef, frame.step[2]) : 0.0;
    const double den_step = std::abs(last_j * den_j);
    const double col_step = std::abs(last_j * apply(map.col_coef, frame.step[1]));
    for (int a = 0; a < i_ends; ++a) {
      for (int b = 0; b < k_ends; ++b) {
        const double i = a * last_i;
        const double k = b * last_k;
        const double den = den0 + i * den_i + k * den_k;  // at p
        const double den_mirror = den + last_j * den_j;   // at m
        const double least = std::min(den, den_mirror);
        if (!(least > 0.0)) return MirrorPairing::kNone;  // behind the source
        const double allowed = kTolerancePixels * least;
        if (den_step > allowed || col_step > allowed) return MirrorPairing::kNone;
        const double rows_sum = 2.0 * (row0 + i * row_i + k * row_k) + last_j * row_j -
                                half_last_row * (den + den_mirror);
        if (std::abs(rows_sum) > 2.0 * allowed) return MirrorPairing::kNone;
      }
    }
    // Point (0, 0, 0)'s offset from the centre row, times its den (> 0: its corner passed above).
    const double offset = row0 - half_last_row * den0;
    const double tolerance = kTolerancePixels * den0;
    if (offset < -tolerance) ++first_rows_upper;
    if (offset > tolerance) ++first_rows_lower;
  }
  if (first_rows_upper > 0 && first_rows_lower > 0) return MirrorPairing::kNone;
  return first_rows_lower > 0 ? MirrorPairing::kLastRowsUpper : MirrorPairing::kFirstRowsUpper;
}

// Whether a job is sampled from its sources' centre lines: texture interpolation from a store that
// keeps them, and every point on the centre line.
bool samples_centre_lines(const BackprojectJob& job, DetectorShape detector,
                          BackprojectInterpolation interp) {
  if (interp != BackprojectInterpolation::kTexture || job.sources.empty()) return false;
  for (const BackprojectSource& source : job.sources) {
    if (source.texture.centre_line == nullptr) return false;
  }
  return maps_onto_centre_line(job, detector);
}

// Column numerator and depth of a source's map at grid point (i, j) of the first plane, in double.
struct PlaneMap {
  double col[3];  // at (0, 0), per i, per j
  double den[3];

  double col_at(double i, double j) const { return col[0] + i * col[1] + j * col[2]; }
  double den_at(double i, double j) const { return den[0] + i * den[1] + j * den[2]; }
};

PlaneMap plane_map(const ProjectionMap& map, const GridFrame& frame) {
  return {{apply(map.col_coef, frame.origin), apply(map.col_coef, frame.step[0]),
           apply(map.col_coef, frame.step[1])},
          {apply(map.den_coef, frame.origin), apply(map.den_coef, frame.step[0]),
           apply(map.den_coef, frame.step[1])}};
}

// Whether b sees point (n - 1 - j, i) (shift 1) or (j, n - 1 - i) (shift 3) of an n x n grid at
// the column and depth at which a sees (i, j): to a thousandth of a pixel in the column and 1e-5 of
// the depth (the weight goes with its square). Numerators and depths are affine in the grid
// indices, so their differences are extreme at the corners; so is the column (a projective map).
bool sees_turned(const PlaneMap& a, const PlaneMap& b, double n1, int shift) {
  double num_diff = 0.0;
  double den_diff = 0.0;
  double least_den = std::numeric_limits<double>::infinity();
  double col_extent = 0.0;
  for (const double i : {0.0, n1}) {
    for (const double j : {0.0, n1}) {
      const double ti = shift == 1 ? n1 - j : j;
      const double tj = shift == 1 ? i : n1 - i;
      const double den = a.den_at(i, j);
      if (!(den > 0.0)) return false;
      least_den = std::min(least_den, den);
      col_extent = std::max(col_extent, std::abs(a.col_at(i, j) / den));
      num_diff = std::max(num_diff, std::abs(a.col_at(i, j) - b.col_at(ti, tj)));
      den_diff = std::max(den_diff, std::abs(den - b.den_at(ti, tj)));
    }
  }
  return num_diff + col_extent * den_diff <= 1e-3 * least_den && den_diff <= 1e-5 * least_den;
}

// Pairs of `job`'s sources a quarter turn apart in runs of `run` (QuarterTurns), or none.
QuarterTurns quarter_turns_in_runs(const BackprojectJob& job, std::size_t run) {
  const std::vector<BackprojectSource>& sources = job.sources;
  const std::ptrdiff_t offset = sources[run].texture.centre_line - sources[0].texture.centre_line;
  if (offset <= 0 || offset > std::numeric_limits<int>::max()) return {};
  const GridFrame frame = grid_frame(job);
  const double n1 = job.grid.width - 1.0;
  QuarterTurns pairs;
  pairs.run = run;
  pairs.partner_offset = static_cast<int>(offset);
  for (std::size_t k = 0; k < sources.size(); ++k) {
    if (k / run % 2 != 0) continue;
    const BackprojectSource& a = sources[k];
    const BackprojectSource& b = sources[k + run];
    const float weight_a = a.map.weight * a.scale;
    const float weight_b = b.map.weight * b.scale;
    if (b.texture.centre_line != a.texture.centre_line + offset ||
        !(std::abs(weight_a - weight_b) <= 1e-6f * std::abs(weight_a))) {
      return {};
    }
    const PlaneMap map_a = plane_map(a.map, frame);
    const PlaneMap map_b = plane_map(b.map, frame);
    const int shift = sees_turned(map_a, map_b, n1, 1)   ? 1
                      : sees_turned(map_a, map_b, n1, 3) ? 3
                                                         : 0;
    if (shift == 0) return {};
    pairs.shifts.push_back(shift);
  }
  return pairs;
}

// For a job sampled from centre lines (samples_centre_lines): its sources in pairs a quarter turn
// apart, so that one evaluation of a column serves two samples. Needs a square slice of even side
// (whose quarter turn about its centre maps its points onto its points) and sources in runs of
// equal angular steps: a window of N projections over 180 degrees pairs k with k + N/2, over 360
// degrees k with k + N/4. Anything else: none.
QuarterTurns quarter_turn_pairs(const BackprojectJob& job) {
  const GridSpec& g = job.grid;
  if (g.width != g.height || g.width < 2 || g.width % 2 != 0 ||
      job.plane_end - job.plane_begin != 1) {
    return {};
  }
  const std::size_t count = job.sources.size();
  for (const std::size_t run : {count / 2, count / 4}) {
    if (run == 0 || count % (2 * run) != 0) continue;
    QuarterTurns pairs = quarter_turns_in_runs(job, run);
    if (pairs.run != 0) return pairs;
  }
  return {};
}

// The pairing a job gets: from texture interpolation of mirrored pairs only.
MirrorPairing pairing_of(const BackprojectJob& job, DetectorShape detector,
                         BackprojectInterpolation interp) {
  if (interp != BackprojectInterpolation::kTexture || job.sources.empty() ||
      !job.sources.front().texture.mirrored) {
    return MirrorPairing::kNone;
  }
  return mirror_pairing(job, detector);
}

// How a launch's sources are sampled: texture interpolation from the store's texture or from its
// mirrored pairs (every source of a launch from one kind: the backend has one store).
SampleKind sample_kind(const std::vector<Piece>& pieces, BackprojectInterpolation interp) {
  if (interp == BackprojectInterpolation::kExact) return SampleKind::kExact;
  bool any = false;
  bool mirrored = false;
  for (const Piece& piece : pieces) {
    for (std::size_t s = piece.first; s < piece.first + piece.count; ++s) {
      const bool m = piece.job->sources[s].texture.mirrored;
      if (any && m != mirrored) {
        throw CudaError(
            "backprojection: sources of one launch from textures of mirrored pairs "
            "and of single texels");
      }
      any = true;
      mirrored = m;
    }
  }
  return mirrored ? SampleKind::kMirroredTexture : SampleKind::kTexture;
}

// out = (v(origin), v(step i), v(step j), v(step k)) for the affine map v with coefficients
// `coef`: apply() at the origin and each step, summed component by component (the form the
// compiler vectorises; every recompute does this for each source of each target).
void relative_to_grid(const float* coef, const GridFrame& frame, float* out) {
  double sum[4] = {0.0, 0.0, 0.0, 0.0};
  for (int a = 0; a < 4; ++a) {
    const double c = coef[a];
    for (int d = 0; d < 4; ++d)
      sum[d] += c * frame.by_component[a][d];
  }
  for (int d = 0; d < 4; ++d)
    out[d] = static_cast<float>(sum[d]);
}

DeviceRecord make_record(const BackprojectSource& source, const GridFrame& frame,
                         BackprojectInterpolation interp, bool centre_line) {
  DeviceRecord rec{};
  relative_to_grid(source.map.col_coef, frame, rec.col);
  relative_to_grid(source.map.row_coef, frame, rec.row);
  relative_to_grid(source.map.den_coef, frame, rec.den);
  rec.weight = source.map.weight * source.scale;
  rec.layer = source.texture.layer;
  if (centre_line) {
    rec.source = reinterpret_cast<unsigned long long>(source.texture.centre_line);
  } else if (interp == BackprojectInterpolation::kTexture) {
    if (source.texture.texture == 0) {
      throw CudaError("texture interpolation needs a store with texture storage");
    }
    rec.source = static_cast<unsigned long long>(source.texture.texture);
  } else {
    if (source.texture.linear == nullptr) {
      throw CudaError("exact interpolation needs a store with linear storage");
    }
    rec.source = reinterpret_cast<unsigned long long>(source.texture.linear);
  }
  return rec;
}

// Tiles of `block_y` x `points` thread rows a target of `height` rows takes: a paired target's
// threads take half as many rows, of half its height, each with its mirror row.
long long row_tiles(int height, int block_y, int points, bool paired) {
  const long long rows_per_tile =
      static_cast<long long>(block_y) * (paired ? detail::paired_rows_per_thread(points) : points);
  const long long covered = paired ? (height + 1) / 2 : height;  // rows with a thread of their own
  return (covered + rows_per_tile - 1) / rows_per_tile;
}

// Tiles of a quarter-turn target: its quadrant, kQuarterTurnRows rows per thread.
void quarter_turn_tiles(const GridSpec& g, const BackprojectTuning& tuning, int& tiles_x,
                        int& tiles_y) {
  const int half = g.width / 2;
  const int rows = tuning.block_y * detail::kQuarterTurnRows;
  tiles_x = (half + tuning.block_x - 1) / tuning.block_x;
  tiles_y = (half + rows - 1) / rows;
}

DeviceTarget make_target(const BackprojectJob& job, const BackprojectTuning& tuning,
                         MirrorPairing pairing, bool centre_line, const QuarterTurns* quarter) {
  const bool paired = pairing != MirrorPairing::kNone;
  const GridSpec& g = job.grid;
  DeviceTarget t{};
  t.data = job.data + static_cast<std::size_t>(job.plane_begin) *
                          static_cast<std::size_t>(g.width) * static_cast<std::size_t>(g.height);
  t.width = g.width;
  t.height = g.height;
  t.paired = paired ? 1 : 0;
  t.flipped = pairing == MirrorPairing::kLastRowsUpper ? 1 : 0;
  t.centre_line = centre_line ? detail::kSingleLines : detail::kNoCentreLine;
  if (quarter != nullptr) {
    t.centre_line = detail::kQuarterTurnPairs;
    t.partner_offset = quarter->partner_offset;
    quarter_turn_tiles(g, tuning, t.tiles_x, t.tiles_y);
    return t;
  }
  t.tiles_x = (g.width + tuning.block_x - 1) / tuning.block_x;
  t.tiles_y =
      static_cast<int>(row_tiles(g.height, tuning.block_y, tuning.points_per_thread, paired));
  return t;
}

void check_job(const BackprojectJob& job) {
  const GridSpec& g = job.grid;
  if (g.width <= 0 || g.height <= 0 || g.depth <= 0) {
    throw CudaError("backprojection target has an empty grid");
  }
  if (job.data == nullptr) throw CudaError("backprojection target has no device data");
  if (job.plane_begin < 0 || job.plane_end > g.depth || job.plane_begin >= job.plane_end) {
    throw CudaError("backprojection planes [" + std::to_string(job.plane_begin) + ", " +
                    std::to_string(job.plane_end) + ") are not inside [0, " +
                    std::to_string(g.depth) + ")");
  }
}

template <int kMaxRecords>
void launch(std::vector<Piece> pieces, BeamKind beam, DetectorShape detector,
            const BackprojectTuning& tuning, bool start_early, LaunchSequence& sequence) {
  // Quarter-turn targets first in the layout: their blocks run longest (four points per row and two
  // sources per record), and launched first they leave the other targets' shorter blocks to fill in
  // around them instead of running alone at the end. Spread (QuarterTurnPlacement), the kernel
  // takes them evenly through the launch instead.
  const auto others = std::stable_partition(
      pieces.begin(), pieces.end(), [](const Piece& piece) { return piece.quarter != nullptr; });
  // Pieces that add to what an earlier launch wrote last: in a launch that starts early their
  // blocks wait for the previous launch to finish before they start.
  std::stable_partition(others, pieces.end(), [](const Piece& piece) { return !piece.accumulate; });
  const SampleKind kind = sample_kind(pieces, tuning.interpolation);
  const dim3 block(static_cast<unsigned>(tuning.block_x), static_cast<unsigned>(tuning.block_y));
  KernelLaunch kernel_launch = KernelLaunch::in_place(
      pick_kernel<kMaxRecords>(beam, kind, tuning.points_per_thread, others != pieces.begin()),
      block);
  auto& params = kernel_launch.parameter<LaunchParams<kMaxRecords>>();
  params.rows = detector.rows;
  params.cols = detector.cols;
  params.target_count = static_cast<int>(pieces.size());
  long long blocks = 0;
  int records = 0;
  std::vector<long long> piece_blocks(pieces.size());
  for (std::size_t p = 0; p < pieces.size(); ++p) {
    const Piece& piece = pieces[p];
    const GridFrame frame = grid_frame(*piece.job);
    const MirrorPairing pairing =
        kind == SampleKind::kMirroredTexture ? piece.pairing : MirrorPairing::kNone;
    DeviceTarget t = make_target(*piece.job, tuning, pairing, piece.centre_line, piece.quarter);
    t.record_begin = records;
    for (std::size_t s = 0; s < piece.count; ++s) {
      if (piece.quarter != nullptr) {
        const std::size_t pair = piece.first + s;
        DeviceRecord& rec = params.records[records++];
        rec = make_record(piece.job->sources[piece.quarter->source_of(pair)], frame,
                          tuning.interpolation, true);
        rec.layer = piece.quarter->shifts[pair];
      } else {
        params.records[records++] = make_record(piece.job->sources[piece.first + s], frame,
                                                tuning.interpolation, piece.centre_line);
      }
    }
    t.record_end = records;
    t.accumulate = piece.accumulate ? 1 : 0;
    params.targets[p] = t;
    piece_blocks[p] = static_cast<long long>(t.tiles_x) * t.tiles_y *
                      (piece.job->plane_end - piece.job->plane_begin);
  }
  // Block ranges: runs of consecutive targets with the same tiling form interleaved groups.
  const bool interleave = tuning.interleave == TargetInterleaving::kAlways;
  for (std::size_t p = 0; p < pieces.size();) {
    std::size_t end = p + 1;
    const DeviceTarget& first = params.targets[p];
    while (interleave && end < pieces.size() && piece_blocks[end] == piece_blocks[p] &&
           (pieces[end].quarter != nullptr) == (pieces[p].quarter != nullptr) &&
           params.targets[end].tiles_x == first.tiles_x &&
           params.targets[end].tiles_y == first.tiles_y) {
      ++end;
    }
    for (std::size_t m = p; m < end; ++m) {
      params.targets[m].block_begin = static_cast<int>(blocks);
      params.targets[m].group_size = static_cast<int>(end - p);
    }
    blocks += piece_blocks[p] * static_cast<long long>(end - p);
    p = end;
  }
  // Spread: the quarter-turn targets' blocks, the layout's first up to the first other target's.
  const std::size_t lead = static_cast<std::size_t>(others - pieces.begin());
  if (tuning.quarter_turns == QuarterTurnPlacement::kSpread && lead > 0 && lead < pieces.size()) {
    params.spread_blocks = params.targets[lead].block_begin;
  }
  if (blocks <= 0) return;
  if (blocks > 0x7fffffffLL) throw CudaError("backprojection grid too large for one launch");
  kernel_launch.set_grid(dim3(static_cast<unsigned>(blocks)));
  kernel_launch.set_start_early(start_early);
  sequence.add(std::move(kernel_launch));
}

}  // namespace

bool pairs_quarter_turns(const BackprojectJob& job, DetectorShape detector) {
  return maps_onto_centre_line(job, detector) && quarter_turn_pairs(job).run != 0;
}

bool pairs_mirrored_rows(const BackprojectJob& job, DetectorShape detector) {
  return mirror_pairing(job, detector) != MirrorPairing::kNone;
}

// row - C = (rn - C den) / den with rn and den affine in the grid indices: both extreme at the
// corners of the planes' box, and den > 0 at the corners holds everywhere between them.
bool maps_onto_centre_line(const BackprojectJob& job, DetectorShape detector) {
  constexpr double kTolerancePixels = 1e-3;
  if (job.sources.empty()) return false;
  const GridFrame frame = grid_frame(job);
  const double last[3] = {job.grid.width - 1.0, job.grid.height - 1.0,
                          job.plane_end - job.plane_begin - 1.0};
  const double centre = 0.5 * (detector.rows - 1.0);
  int extent_bits = 0;  // the index axes along which the planes extend (a slice: two)
  for (int d = 0; d < 3; ++d)
    extent_bits |= last[d] > 0.0 ? 1 << d : 0;
  for (const BackprojectSource& source : job.sources) {
    const ProjectionMap& map = source.map;
    // off(i, j, k) = rn - centre den, and den, at the origin and per index step.
    double off[4];
    double den[4];
    off[0] = apply(map.row_coef, frame.origin) - centre * apply(map.den_coef, frame.origin);
    den[0] = apply(map.den_coef, frame.origin);
    for (int d = 0; d < 3; ++d) {
      den[d + 1] = apply(map.den_coef, frame.step[d]);
      off[d + 1] = apply(map.row_coef, frame.step[d]) - centre * den[d + 1];
    }
    for (int corner = 0; corner < 8; ++corner) {
      if ((corner & ~extent_bits) != 0) continue;  // the same as a corner with that index 0
      double o = off[0];
      double w = den[0];
      for (int d = 0; d < 3; ++d) {
        const double index = (corner >> d) & 1 ? last[d] : 0.0;
        o += index * off[d + 1];
        w += index * den[d + 1];
      }
      if (!(w > 0.0) || !(std::abs(o) <= kTolerancePixels * w)) return false;
    }
  }
  return true;
}

const char* to_string(TargetInterleaving interleaving) {
  switch (interleaving) {
    case TargetInterleaving::kAutomatic:
      return "automatic";
    case TargetInterleaving::kAlways:
      return "always";
    case TargetInterleaving::kNever:
      return "never";
  }
  return "unknown";
}

const char* to_string(QuarterTurnPlacement placement) {
  switch (placement) {
    case QuarterTurnPlacement::kSpread:
      return "spread";
    case QuarterTurnPlacement::kFirst:
      return "first";
  }
  return "unknown";
}

const char* to_string(BackprojectInterpolation interpolation) {
  switch (interpolation) {
    case BackprojectInterpolation::kTexture:
      return "texture";
    case BackprojectInterpolation::kExact:
      return "exact";
  }
  return "unknown";
}

std::string validate(const BackprojectTuning& tuning) {
  const int p = tuning.points_per_thread;
  if (p != 0 && p != 1 && p != 2 && p != 4 && p != 8 && p != 16) {
    return "points_per_thread must be 0 (automatic), 1, 2, 4, 8 or 16";
  }
  if (tuning.block_x <= 0 || tuning.block_y <= 0 || tuning.block_x * tuning.block_y > 1024) {
    return "block shape must be positive with at most 1024 threads";
  }
  if ((tuning.block_x * tuning.block_y) % 32 != 0) {
    return "block shape must be a multiple of 32 threads";
  }
  return {};
}

BackprojectDevice current_backproject_device() {
  return {current_device_multiprocessors(), current_device_l2_bytes()};
}

Backprojector::Backprojector(BeamKind beam, DetectorShape detector, const BackprojectTuning& tuning)
    : Backprojector(beam, detector, tuning, current_backproject_device()) {}

Backprojector::Backprojector(BeamKind beam, DetectorShape detector, const BackprojectTuning& tuning,
                             BackprojectDevice device)
    : beam_(beam), detector_(detector), tuning_(tuning), device_(device) {
  const std::string problem = validate(tuning);
  if (!problem.empty()) throw CudaError("invalid backprojection tuning: " + problem);
}

namespace {

// Blocks that all of `jobs` take in launches of tuning `t` (points_per_thread resolved), tiled as
// their launches tile them (make_target).
long long blocks_of(const std::vector<BackprojectJob>& jobs,
                    const std::vector<MirrorPairing>& pairings,
                    const std::vector<QuarterTurns>& quarters, const BackprojectTuning& t) {
  long long blocks = 0;
  for (std::size_t n = 0; n < jobs.size(); ++n) {
    const QuarterTurns* quarter = quarters[n].run != 0 ? &quarters[n] : nullptr;
    const DeviceTarget target = make_target(jobs[n], t, pairings[n], false, quarter);
    blocks += static_cast<long long>(target.tiles_x) * target.tiles_y *
              (jobs[n].plane_end - jobs[n].plane_begin);
  }
  return blocks;
}

// The tuning with points_per_thread resolved for jobs paired as `pairings` says. Many points per
// thread amortise the per-source set-up (docs/performance.md), but too few blocks leave
// multiprocessors idle: take the largest that keeps six blocks per multiprocessor. A launch with
// a paired target takes at most 4 (two rows and their mirror rows per paired thread): in
// bench/cuda's tuning search its kernels ran slower with 8 in every set-up, and unpaired targets
// about as fast with 4 as with 8.
BackprojectTuning resolve_points(BackprojectTuning t, const std::vector<BackprojectJob>& jobs,
                                 const std::vector<MirrorPairing>& pairings,
                                 const std::vector<QuarterTurns>& quarters, int multiprocessors) {
  if (t.points_per_thread != 0) return t;
  const long long wanted = 6LL * multiprocessors;
  const bool any_paired = std::any_of(pairings.begin(), pairings.end(), [](MirrorPairing pairing) {
    return pairing != MirrorPairing::kNone;
  });
  for (int points : {8, 4, 2}) {
    if (any_paired && points > 4) continue;
    t.points_per_thread = points;
    if (blocks_of(jobs, pairings, quarters, t) >= wanted) return t;
  }
  t.points_per_thread = 1;
  return t;
}

// The tuning with the interleaving resolved: automatic interleaves where the job with the most
// sources (the window the launches read) holds more detector values than the L2 cache holds fp16
// values.
BackprojectTuning resolve_interleaving(BackprojectTuning t, const std::vector<BackprojectJob>& jobs,
                                       DetectorShape detector, std::size_t l2_bytes) {
  if (t.interleave != TargetInterleaving::kAutomatic) return t;
  std::size_t sources = 0;
  for (const BackprojectJob& job : jobs)
    sources = std::max(sources, job.sources.size());
  t.interleave = sources * detector.pixels() * 2 > l2_bytes ? TargetInterleaving::kAlways
                                                            : TargetInterleaving::kNever;
  return t;
}

// How each job is sampled: from centre lines, from mirrored pairs two rows at a time (its
// pairing), or one fetch per point.
struct JobPaths {
  std::vector<MirrorPairing> pairings;
  std::vector<bool> centre_lines;
  std::vector<QuarterTurns> quarters;  // of centre-line jobs
};

// Records [first, first + count) of job `job` in one launch.
struct PlannedPiece {
  std::size_t job;
  std::size_t first;
  std::size_t count;
};
using LaunchPlan = std::vector<std::vector<PlannedPiece>>;

// Which launch takes which records of `jobs` (records[n] of job n), at most max_records and
// kMaxTargetsPerLaunch targets per launch, never two pieces on one target in one launch (they
// would race). Filling (keep_whole false): every launch filled up, a job split where it reaches
// the end of one. keep_whole: a job that fits into one launch is not split across two (its later
// piece would add to what the earlier launch wrote, so it would have to wait for that launch
// instead of starting during its last blocks); later jobs that fit take the room it leaves, each
// ahead of it only if no job from it on before them writes the same target (each target's jobs keep
// their order). Jobs larger than a launch are split either way.
LaunchPlan plan_launches(const std::vector<BackprojectJob>& jobs,
                         const std::vector<std::size_t>& records, std::size_t max_records,
                         bool keep_whole) {
  LaunchPlan plan(1);
  std::size_t used = 0;
  const auto next_launch = [&]() {
    if (plan.back().empty()) return;
    plan.emplace_back();
    used = 0;
  };
  const auto full = [&]() {
    return plan.back().size() == static_cast<std::size_t>(detail::kMaxTargetsPerLaunch);
  };
  const auto writes_same_target = [&](std::size_t n) {
    return std::any_of(plan.back().begin(), plan.back().end(),
                       [&](const PlannedPiece& p) { return jobs[p.job].data == jobs[n].data; });
  };
  const auto add = [&](std::size_t n, std::size_t first, std::size_t count) {
    plan.back().push_back({n, first, count});
    used += count;
  };
  std::vector<bool> placed(jobs.size(), false);
  const auto fill_with_later = [&](std::size_t n) {
    for (std::size_t m = n + 1; m < jobs.size() && !full(); ++m) {
      if (placed[m] || records[m] == 0 || used + records[m] > max_records ||
          writes_same_target(m)) {
        continue;
      }
      const auto from = jobs.begin() + static_cast<std::ptrdiff_t>(n);
      const auto to = jobs.begin() + static_cast<std::ptrdiff_t>(m);
      if (std::any_of(from, to, [&](const BackprojectJob& j) { return j.data == jobs[m].data; })) {
        continue;
      }
      add(m, 0, records[m]);
      placed[m] = true;
    }
  };
  for (std::size_t n = 0; n < jobs.size(); ++n) {
    if (placed[n]) continue;
    if (records[n] == 0) {
      if (jobs[n].accumulate) continue;  // += 0
      if (full() || writes_same_target(n)) next_launch();
      add(n, 0, 0);
      continue;
    }
    if (keep_whole && records[n] <= max_records && used + records[n] > max_records) {
      fill_with_later(n);
      next_launch();
    }
    for (std::size_t first = 0; first < records[n];) {
      if (full() || used == max_records || writes_same_target(n)) next_launch();
      const std::size_t count = std::min(records[n] - first, max_records - used);
      add(n, first, count);
      first += count;
    }
  }
  if (plan.back().empty()) plan.pop_back();
  return plan;
}

// Records per launch for `jobs`: per-frame updates (few sources) take the kernel with the small
// parameter block (launching it copies ~1 KB of parameters instead of ~31 KB), batched updates the
// medium one, full recomputes the large one.
std::size_t records_per_launch(const std::vector<BackprojectJob>& jobs) {
  std::size_t total_sources = 0;
  for (const BackprojectJob& job : jobs)
    total_sources += job.sources.size();
  const bool one_launch = jobs.size() <= static_cast<std::size_t>(detail::kMaxTargetsPerLaunch);
  if (one_launch && total_sources <= static_cast<std::size_t>(detail::kSmallLaunchRecords)) {
    return detail::kSmallLaunchRecords;
  }
  if (one_launch && total_sources <= static_cast<std::size_t>(detail::kBatchLaunchRecords)) {
    return detail::kBatchLaunchRecords;
  }
  return detail::kLargeLaunchRecords;
}

// Whether launches of `max_records` records take quarter-turn pairs: in cone beam, where the pair
// shares each sample's depth, reciprocal and weight, and in the large launches only (pick_kernel).
// In parallel beam a sample costs a multiply-add and a load, and the pairs' longer blocks cost the
// launch more than they save (docs/performance.md).
bool takes_quarter_turns(BeamKind beam, std::size_t max_records) {
  return beam == BeamKind::kCone &&
         max_records == static_cast<std::size_t>(detail::kLargeLaunchRecords);
}

// The paths of `jobs`; quarter-turn pairs where `quarter_turns`.
JobPaths paths_of(const std::vector<BackprojectJob>& jobs, DetectorShape detector,
                  BackprojectInterpolation interp, bool quarter_turns) {
  JobPaths paths;
  for (const BackprojectJob& job : jobs) {
    const bool line = samples_centre_lines(job, detector, interp);
    paths.centre_lines.push_back(line);
    paths.pairings.push_back(line ? MirrorPairing::kNone : pairing_of(job, detector, interp));
    paths.quarters.push_back(line && quarter_turns ? quarter_turn_pairs(job) : QuarterTurns{});
  }
  return paths;
}

// `tuning` resolved for `jobs` (points per thread, interleaving).
BackprojectTuning resolve_tuning(const BackprojectTuning& tuning,
                                 const std::vector<BackprojectJob>& jobs, const JobPaths& paths,
                                 DetectorShape detector, BackprojectDevice device) {
  return resolve_interleaving(
      resolve_points(tuning, jobs, paths.pairings, paths.quarters, device.multiprocessors), jobs,
      detector, device.l2_bytes);
}

}  // namespace

BackprojectTuning Backprojector::resolved_tuning(const std::vector<BackprojectJob>& jobs) const {
  const JobPaths paths = paths_of(jobs, detector_, tuning_.interpolation,
                                  takes_quarter_turns(beam_, records_per_launch(jobs)));
  return resolve_tuning(tuning_, jobs, paths, detector_, device_);
}

int Backprojector::run(const std::vector<BackprojectJob>& jobs, cudaStream_t stream) const {
  LaunchSequence sequence;
  const int launches = append(jobs, sequence);
  sequence.enqueue(stream);
  return launches;
}

int Backprojector::append(const std::vector<BackprojectJob>& jobs, LaunchSequence& sequence) const {
  for (const BackprojectJob& job : jobs)
    check_job(job);
  const std::size_t max_records = records_per_launch(jobs);
  const JobPaths paths =
      paths_of(jobs, detector_, tuning_.interpolation, takes_quarter_turns(beam_, max_records));
  const BackprojectTuning tuning = resolve_tuning(tuning_, jobs, paths, detector_, device_);

  std::vector<std::size_t> records(jobs.size());
  for (std::size_t n = 0; n < jobs.size(); ++n)
    records[n] = paths.quarters[n].run != 0 ? paths.quarters[n].pairs() : jobs[n].sources.size();
  // Jobs kept whole where that takes no more launches than filling every launch.
  LaunchPlan plan = plan_launches(jobs, records, max_records, true);
  if (plan.size() > 1) {
    LaunchPlan filled = plan_launches(jobs, records, max_records, false);
    if (filled.size() < plan.size()) plan = std::move(filled);
  }

  const std::size_t kernels_before = sequence.kernel_count();
  for (const std::vector<PlannedPiece>& planned : plan) {
    std::vector<Piece> pieces;
    for (const PlannedPiece& pp : planned) {
      const BackprojectJob& job = jobs[pp.job];
      if (job.sources.empty()) {
        pieces.push_back({&job, 0, 0, false});  // zeroes the target
        continue;
      }
      const QuarterTurns* quarter =
          paths.quarters[pp.job].run != 0 ? &paths.quarters[pp.job] : nullptr;
      // Only the first piece of a job may overwrite; later pieces add to it.
      pieces.push_back({&job, pp.first, pp.count, job.accumulate || pp.first > 0,
                        paths.pairings[pp.job], paths.centre_lines[pp.job], quarter});
    }
    // The first launch waits for whatever the stream ran before (the store's writes); later ones
    // follow one of this call's launches, so they may start during its last blocks and wait for it
    // only to touch their targets.
    const bool early = sequence.kernel_count() > kernels_before && tuning.start_launches_early;
    switch (max_records) {
      case detail::kSmallLaunchRecords:
        launch<detail::kSmallLaunchRecords>(pieces, beam_, detector_, tuning, early, sequence);
        break;
      case detail::kBatchLaunchRecords:
        launch<detail::kBatchLaunchRecords>(pieces, beam_, detector_, tuning, early, sequence);
        break;
      default:
        launch<detail::kLargeLaunchRecords>(pieces, beam_, detector_, tuning, early, sequence);
        break;
    }
  }
  return static_cast<int>(plan.size());
}

}  // namespace slicestream::cuda

#include <algorithm>
#include <string>

#include "kernels/cuda/backproject_kernel.cuh"
#include "kernels/cuda/backprojector.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_probe.hpp"

namespace slicestream::cuda {
namespace {

using detail::DeviceRecord;
using detail::DeviceTarget;
using detail::LaunchParams;

template <int kMaxRecords>
using KernelFn = void (*)(LaunchParams<kMaxRecords>);

template <bool kCone, BackprojectInterpolation kInterp, int kMaxRecords>
KernelFn<kMaxRecords> pick_points(int points) {
  switch (points) {
    case 1:
      return detail::backproject_kernel<kCone, kInterp, 1, kMaxRecords>;
    case 2:
      return detail::backproject_kernel<kCone, kInterp, 2, kMaxRecords>;
    case 4:
      return detail::backproject_kernel<kCone, kInterp, 4, kMaxRecords>;
    case 8:
      return detail::backproject_kernel<kCone, kInterp, 8, kMaxRecords>;
    case 16:
      return detail::backproject_kernel<kCone, kInterp, 16, kMaxRecords>;
    default:
      // validate() admits no other value; never run a kernel whose tiling differs from the host's.
      throw CudaError("backprojection: no kernel for " + std::to_string(points) +
                      " points per thread");
  }
}

template <bool kCone, int kMaxRecords>
KernelFn<kMaxRecords> pick_interpolation(BackprojectInterpolation interp, int points) {
  if (interp == BackprojectInterpolation::kTexture) {
    return pick_points<kCone, BackprojectInterpolation::kTexture, kMaxRecords>(points);
  }
  return pick_points<kCone, BackprojectInterpolation::kExact, kMaxRecords>(points);
}

template <int kMaxRecords>
KernelFn<kMaxRecords> pick_kernel(BeamKind beam, const BackprojectTuning& tuning) {
  return beam == BeamKind::kCone
             ? pick_interpolation<true, kMaxRecords>(tuning.interpolation, tuning.points_per_thread)
             : pick_interpolation<false, kMaxRecords>(tuning.interpolation,
                                                      tuning.points_per_thread);
}

// A part of one job that goes into one launch: sources [first, first + count).
struct Piece {
  const BackprojectJob* job;
  std::size_t first;
  std::size_t count;
  bool accumulate;
};

// The grid of a job in double: centre of point (0, 0, plane_begin) and the steps per index.
struct GridFrame {
  double origin[4];   // homogeneous: origin[3] = 1
  double step[3][4];  // per i, j, k; homogeneous 0
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
  return f;
}

double apply(const float* coef, const double* point) {
  return static_cast<double>(coef[0]) * point[0] + static_cast<double>(coef[1]) * point[1] +
         static_cast<double>(coef[2]) * point[2] + static_cast<double>(coef[3]) * point[3];
}

void relative_to_grid(const float* coef, const GridFrame& frame, float* out) {
  out[0] = static_cast<float>(apply(coef, frame.origin));
  for (int d = 0; d < 3; ++d)
    out[d + 1] = static_cast<float>(apply(coef, frame.step[d]));
}

DeviceRecord make_record(const BackprojectSource& source, const GridFrame& frame,
                         BackprojectInterpolation interp) {
  DeviceRecord rec{};
  relative_to_grid(source.map.col_coef, frame, rec.col);
  relative_to_grid(source.map.row_coef, frame, rec.row);
  relative_to_grid(source.map.den_coef, frame, rec.den);
  rec.weight = source.map.weight * source.scale;
  rec.layer = source.texture.layer;
  if (interp == BackprojectInterpolation::kTexture) {
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

DeviceTarget make_target(const BackprojectJob& job, const BackprojectTuning& tuning) {
  const GridSpec& g = job.grid;
  DeviceTarget t{};
  t.data = job.data + static_cast<std::size_t>(job.plane_begin) *
                          static_cast<std::size_t>(g.width) * static_cast<std::size_t>(g.height);
  t.width = g.width;
  t.height = g.height;
  t.tiles_x = (g.width + tuning.block_x - 1) / tuning.block_x;
  const int rows_per_tile = tuning.block_y * tuning.points_per_thread;
  t.tiles_y = (g.height + rows_per_tile - 1) / rows_per_tile;
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
void launch(const std::vector<Piece>& pieces, BeamKind beam, DetectorShape detector,
            const BackprojectTuning& tuning, LaunchSequence& sequence) {
  LaunchParams<kMaxRecords> params{};
  params.rows = detector.rows;
  params.cols = detector.cols;
  params.target_count = static_cast<int>(pieces.size());
  long long blocks = 0;
  int records = 0;
  std::vector<long long> piece_blocks(pieces.size());
  for (std::size_t p = 0; p < pieces.size(); ++p) {
    const Piece& piece = pieces[p];
    DeviceTarget t = make_target(*piece.job, tuning);
    const GridFrame frame = grid_frame(*piece.job);
    t.record_begin = records;
    for (std::size_t s = 0; s < piece.count; ++s) {
      params.records[records++] =
          make_record(piece.job->sources[piece.first + s], frame, tuning.interpolation);
    }
    t.record_end = records;
    t.accumulate = piece.accumulate ? 1 : 0;
    params.targets[p] = t;
    piece_blocks[p] = static_cast<long long>(t.tiles_x) * t.tiles_y *
                      (piece.job->plane_end - piece.job->plane_begin);
  }
  // Block ranges: runs of consecutive targets with the same tiling form interleaved groups.
  for (std::size_t p = 0; p < pieces.size();) {
    std::size_t end = p + 1;
    const DeviceTarget& first = params.targets[p];
    while (tuning.interleave_targets && end < pieces.size() &&
           piece_blocks[end] == piece_blocks[p] && params.targets[end].tiles_x == first.tiles_x &&
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
  if (blocks <= 0) return;
  if (blocks > 0x7fffffffLL) throw CudaError("backprojection grid too large for one launch");
  const dim3 block(static_cast<unsigned>(tuning.block_x), static_cast<unsigned>(tuning.block_y));
  sequence.add(KernelLaunch(pick_kernel<kMaxRecords>(beam, tuning),
                            dim3(static_cast<unsigned>(blocks)), block, params));
}

}  // namespace

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

Backprojector::Backprojector(BeamKind beam, DetectorShape detector, const BackprojectTuning& tuning)
    : beam_(beam), detector_(detector), tuning_(tuning) {
  const std::string problem = validate(tuning);
  if (!problem.empty()) throw CudaError("invalid backprojection tuning: " + problem);
  multiprocessors_ = current_device_multiprocessors();
}

BackprojectTuning Backprojector::resolved_tuning(const std::vector<BackprojectJob>& jobs) const {
  BackprojectTuning t = tuning_;
  if (t.points_per_thread != 0) return t;
  // Many points per thread amortise the per-source set-up (docs/performance.md), but too few
  // blocks leave multiprocessors idle: take the largest that keeps six blocks per multiprocessor.
  const long long wanted = 6LL * multiprocessors_;
  for (int points : {8, 4, 2}) {
    long long blocks = 0;
    for (const BackprojectJob& job : jobs) {
      const long long rows = static_cast<long long>(t.block_y) * points;
      blocks += ((job.grid.width + t.block_x - 1) / t.block_x) *
                ((job.grid.height + rows - 1) / rows) * (job.plane_end - job.plane_begin);
    }
    if (blocks >= wanted) {
      t.points_per_thread = points;
      return t;
    }
  }
  t.points_per_thread = 1;
  return t;
}

int Backprojector::run(const std::vector<BackprojectJob>& jobs, cudaStream_t stream) const {
  LaunchSequence sequence;
  const int launches = append(jobs, sequence);
  sequence.enqueue(stream);
  return launches;
}

int Backprojector::append(const std::vector<BackprojectJob>& jobs, LaunchSequence& sequence) const {
  const BackprojectTuning tuning = resolved_tuning(jobs);
  std::size_t total_sources = 0;
  for (const BackprojectJob& job : jobs) {
    check_job(job);
    total_sources += job.sources.size();
  }
  // Per-frame updates (few sources) take the kernel with the small parameter block: launching
  // it copies ~1 KB of parameters instead of ~31 KB; batched updates the medium one.
  const bool one_launch = jobs.size() <= static_cast<std::size_t>(detail::kMaxTargetsPerLaunch);
  std::size_t max_records = detail::kLargeLaunchRecords;
  if (one_launch && total_sources <= static_cast<std::size_t>(detail::kSmallLaunchRecords)) {
    max_records = detail::kSmallLaunchRecords;
  } else if (one_launch && total_sources <= static_cast<std::size_t>(detail::kBatchLaunchRecords)) {
    max_records = detail::kBatchLaunchRecords;
  }

  int launches = 0;
  std::vector<Piece> pieces;
  std::size_t records = 0;
  auto flush = [&]() {
    if (pieces.empty()) return;
    switch (max_records) {
      case detail::kSmallLaunchRecords:
        launch<detail::kSmallLaunchRecords>(pieces, beam_, detector_, tuning, sequence);
        break;
      case detail::kBatchLaunchRecords:
        launch<detail::kBatchLaunchRecords>(pieces, beam_, detector_, tuning, sequence);
        break;
      default:
        launch<detail::kLargeLaunchRecords>(pieces, beam_, detector_, tuning, sequence);
        break;
    }
    ++launches;
    pieces.clear();
    records = 0;
  };
  // Two pieces writing the same target in one launch would race: the second waits.
  auto writes_same_target = [&](const BackprojectJob& job) {
    return std::any_of(pieces.begin(), pieces.end(),
                       [&](const Piece& piece) { return piece.job->data == job.data; });
  };
  for (const BackprojectJob& job : jobs) {
    if (job.sources.empty()) {
      if (job.accumulate) continue;  // += 0
      if (pieces.size() == static_cast<std::size_t>(detail::kMaxTargetsPerLaunch) ||
          writes_same_target(job)) {
        flush();
      }
      pieces.push_back({&job, 0, 0, false});
      continue;
    }
    std::size_t first = 0;
    while (first < job.sources.size()) {
      if (pieces.size() == static_cast<std::size_t>(detail::kMaxTargetsPerLaunch) ||
          records == max_records || writes_same_target(job)) {
        flush();
      }
      const std::size_t count = std::min(job.sources.size() - first, max_records - records);
      // Only the first piece of a job may overwrite; later pieces add to it.
      pieces.push_back({&job, first, count, job.accumulate || first > 0});
      records += count;
      first += count;
    }
  }
  flush();
  return launches;
}

}  // namespace slicestream::cuda

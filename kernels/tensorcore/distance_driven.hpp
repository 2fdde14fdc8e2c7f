// Distance-driven projection (De Man & Basu 2002/2004) of a 2D pixel image, parallel and fan
// beam, as an enumeration of the system-matrix weights of one projection. The sparse-matrix
// builder and the matrix-free CPU reference both call it, so they cannot disagree.
//
// Per projection a driving axis is chosen from the central ray: image rows (slabs along y) when
// the ray is closer to the y axis, image columns otherwise. In each slab the detector-bin
// boundaries are mapped onto the slab's centre line and overlapped with the pixel boundaries;
// pixel p gets weight  overlap / (mapped bin width) * (slab thickness / |cos|)  in ray bin b: the
// bin-averaged chord length (mm). A projection exactly at 45 degrees uses the mean of both driving
// axes, which keeps the weights equivariant under the 8 symmetries of the square grid.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kernels/tensorcore/geometry_2d.hpp"

namespace slicestream::tensorcore {

class DistanceDrivenProjection {
 public:
  DistanceDrivenProjection(const Geometry2d& geometry, const ImageGrid2d& grid, int projection)
      : grid_(grid), bins_(geometry.bins), parallel_(geometry.beam == BeamKind::kParallel) {
    const ProjectionVector2d& v = geometry.vectors[static_cast<std::size_t>(projection)];
    source_or_ray_ = v.source_or_ray;
    first_boundary_ = v.detector_center - (bins_ / 2.0) * v.u;
    u_ = v.u;
    const Vec2 central = parallel_ ? v.source_or_ray : v.detector_center - v.source_or_ray;
    const double ax = std::abs(central.x);
    const double ay = std::abs(central.y);
    const double tie = 1e-12 * (ax + ay);
    if (std::abs(ax - ay) <= tie) {
      drive_rows_ = drive_columns_ = true;
    } else {
      drive_rows_ = ay > ax;
      drive_columns_ = !drive_rows_;
    }
  }

  // Calls emit(bin, pixel, weight_mm) for every non-zero weight. Weights of a 45-degree projection
  // come twice per pixel and bin (once per driving axis, each halved); summing them is the caller's
  // choice (accumulating callers need not care).
  template <class Emit>
  void enumerate(Emit&& emit) const {
    const double share = drive_rows_ && drive_columns_ ? 0.5 : 1.0;
    if (drive_rows_) enumerate_axis(false, share, emit);
    if (drive_columns_) enumerate_axis(true, share, emit);
  }

 private:
  // swap == false: slabs are image rows (slab coordinate y, along x); true: image columns.
  template <class Emit>
  void enumerate_axis(bool swap, double share, Emit& emit) const {
    auto slab_of = [swap](Vec2 p) { return swap ? p.x : p.y; };
    auto along_of = [swap](Vec2 p) { return swap ? p.y : p.x; };
    const double px = grid_.pixel_mm;
    const int slabs = swap ? grid_.width : grid_.height;
    const int along_count = swap ? grid_.height : grid_.width;
    const double along_origin = -0.5 * along_count * px;
    const double slab_origin = -0.5 * slabs * px;

    // Path length through one slab per bin: slab thickness / |direction . slab normal| for the
    // ray through the bin centre.
    std::vector<double> path_mm(static_cast<std::size_t>(bins_));
    for (int b = 0; b < bins_; ++b) {
      const Vec2 dir = direction(first_boundary_ + (b + 0.5) * u_);
      const double len = std::sqrt(dot(dir, dir));
      path_mm[static_cast<std::size_t>(b)] = share * px * len / std::abs(slab_of(dir));
    }
    for (int b = 0; b <= bins_; ++b) {
      const Vec2 dir = direction(first_boundary_ + static_cast<double>(b) * u_);
      if (std::abs(slab_of(dir)) <= 1e-9 * std::sqrt(dot(dir, dir))) {
        throw std::invalid_argument(
            "distance-driven projection: a ray is parallel to the image slabs (fan too wide)");
      }
    }

    std::vector<double> mapped(static_cast<std::size_t>(bins_) + 1);
    for (int slab = 0; slab < slabs; ++slab) {
      const double line = slab_origin + (slab + 0.5) * px;
      for (int b = 0; b <= bins_; ++b) {
        const Vec2 point = first_boundary_ + static_cast<double>(b) * u_;
        const Vec2 dir = direction(point);
        mapped[static_cast<std::size_t>(b)] =
            along_of(point) + (line - slab_of(point)) * along_of(dir) / slab_of(dir);
      }
      const bool reversed = mapped[static_cast<std::size_t>(bins_)] < mapped[0];
      // Sorted boundary k of the merge is mapped[reversed ? bins - k : k].
      auto boundary = [&](int k) {
        return mapped[static_cast<std::size_t>(reversed ? bins_ - k : k)];
      };
      // First bin whose upper boundary passes the first pixel boundary.
      int k = 0;
      {
        int lo = 0, hi = bins_;
        while (lo < hi) {
          const int mid = (lo + hi) / 2;
          if (boundary(mid + 1) <= along_origin) {
            lo = mid + 1;
          } else {
            hi = mid;
          }
        }
        k = lo;
      }
      if (k >= bins_) continue;
      int j = static_cast<int>(std::floor((boundary(k) - along_origin) / px));
      j = std::max(j, 0);
      while (j < along_count && k < bins_) {
        const double pixel_lo = along_origin + j * px;
        const double pixel_hi = pixel_lo + px;
        const double bin_lo = boundary(k);
        const double bin_hi = boundary(k + 1);
        const double overlap = std::min(pixel_hi, bin_hi) - std::max(pixel_lo, bin_lo);
        // Overlaps below 1e-9 pixel are rounding noise where boundaries coincide.
        if (overlap > 1e-9 * px && bin_hi > bin_lo) {
          const int bin = reversed ? bins_ - 1 - k : k;
          const long long pixel = swap ? static_cast<long long>(j) * grid_.width + slab
                                       : static_cast<long long>(slab) * grid_.width + j;
          emit(bin, pixel, overlap / (bin_hi - bin_lo) * path_mm[static_cast<std::size_t>(bin)]);
        }
        if (pixel_hi < bin_hi) {
          ++j;
        } else {
          ++k;
        }
      }
    }
  }

  Vec2 direction(Vec2 detector_point) const {
    return parallel_ ? source_or_ray_ : detector_point - source_or_ray_;
  }

  ImageGrid2d grid_;
  int bins_;
  bool parallel_;
  Vec2 source_or_ray_;
  Vec2 first_boundary_;
  Vec2 u_;
  bool drive_rows_ = true;
  bool drive_columns_ = false;
};

}  // namespace slicestream::tensorcore

#include "kernels/tensorcore/square_symmetry.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace slicestream::tensorcore {

namespace {

constexpr double kBinTolerance = 1e-6;  // in bins

// Detector coordinate (in bins, 0 at the first boundary) where the ray of projection v through
// point p meets the detector.
double bin_coordinate(BeamKind beam, int bins, const ProjectionVector2d& v, Vec2 p) {
  const Vec2 first = v.detector_center - (bins / 2.0) * v.u;
  if (beam == BeamKind::kParallel) {
    // p + s r = first + t u  =>  t = cross(p - first, r) / cross(u, r)
    return cross(p - first, v.source_or_ray) / cross(v.u, v.source_or_ray);
  }
  const Vec2 dir = p - v.source_or_ray;
  return cross(v.source_or_ray - first, dir) / cross(v.u, dir);
}

// The projection of `geometry` that `g` maps projection k onto, with whether its bins run
// backwards; -1 if none matches.
int matching_projection(const Geometry2d& geometry, const SquareSymmetry& g, int k,
                        bool* reversed) {
  const ProjectionVector2d& v = geometry.vectors[static_cast<std::size_t>(k)];
  const int bins = geometry.bins;
  const Vec2 first = v.detector_center - (bins / 2.0) * v.u;
  const Vec2 moved_ray = apply(g, v.source_or_ray);
  const Vec2 moved_first = apply(g, first);
  const Vec2 moved_last = apply(g, first + static_cast<double>(bins) * v.u);
  const double source_scale = std::sqrt(dot(v.source_or_ray, v.source_or_ray)) + 1;
  for (int c = 0; c < geometry.angles(); ++c) {
    const ProjectionVector2d& w = geometry.vectors[static_cast<std::size_t>(c)];
    if (geometry.beam == BeamKind::kParallel) {
      const double r_len =
          std::sqrt(dot(w.source_or_ray, w.source_or_ray) * dot(moved_ray, moved_ray));
      if (std::abs(cross(moved_ray, w.source_or_ray)) > 1e-9 * r_len) continue;
    } else {
      const Vec2 d = moved_ray - w.source_or_ray;
      if (std::sqrt(dot(d, d)) > 1e-9 * source_scale) continue;
    }
    const double t0 = bin_coordinate(geometry.beam, bins, w, moved_first);
    const double t1 = bin_coordinate(geometry.beam, bins, w, moved_last);
    bool match = false;
    if (std::abs(t0) < kBinTolerance && std::abs(t1 - bins) < kBinTolerance) {
      *reversed = false;
      match = true;
    } else if (std::abs(t0 - bins) < kBinTolerance && std::abs(t1) < kBinTolerance) {
      *reversed = true;
      match = true;
    }
    if (!match) continue;
    // Every boundary must land on a boundary (fan beams map bins projectively).
    for (int m = 1; m < bins && match; ++m) {
      const double t =
          bin_coordinate(geometry.beam, bins, w, apply(g, first + static_cast<double>(m) * v.u));
      const double expected = *reversed ? bins - m : m;
      match = std::abs(t - expected) < kBinTolerance;
    }
    if (match) return c;
  }
  return -1;
}

// Doubled, centred pixel coordinates: integers, odd for an even width.
struct Doubled {
  long long x, y;
};
Doubled doubled_of(long long pixel, int width) {
  const long long row = pixel / width;
  const long long col = pixel % width;
  return {2 * col + 1 - width, 2 * row + 1 - width};
}
long long pixel_of(Doubled d, int width) {
  return (d.y + width - 1) / 2 * width + (d.x + width - 1) / 2;
}
Doubled apply(const SquareSymmetry& g, Doubled p) {
  return {g.xx * p.x + g.xy * p.y, g.yx * p.x + g.yy * p.y};
}

std::string build(const Geometry2d& geometry, const ImageGrid2d& grid, SymmetryPlan* plan) {
  std::string problem = validate_geometry_2d(geometry);
  if (problem.empty()) problem = validate_grid_2d(grid);
  if (!problem.empty()) return problem;
  if (grid.width != grid.height) {
    return "the 8-fold symmetry needs a square image (got " + std::to_string(grid.width) + " x " +
           std::to_string(grid.height) + ")";
  }
  for (int k = 0; k < geometry.angles(); ++k) {
    const double offset = axis_offset_mm(geometry, k);
    const double bin_mm = std::sqrt(dot(geometry.vectors[static_cast<std::size_t>(k)].u,
                                        geometry.vectors[static_cast<std::size_t>(k)].u));
    if (std::abs(offset) > kBinTolerance * bin_mm) {
      std::ostringstream out;
      out << "projection " << k << " has a detector offset of " << offset
          << " mm; the 8-fold symmetry needs the rotation axis on the detector centre (offset 0)";
      return out.str();
    }
  }
  const int width = grid.width;
  const long long pixels = grid.pixels();
  const int bins = geometry.bins;
  if (plan != nullptr) {
    plan->width = width;
    plan->rays = geometry.rays();
  }
  for (int gi = 0; gi < kSymmetryCount; ++gi) {
    const SquareSymmetry& g = kSquareSymmetries[static_cast<std::size_t>(gi)];
    std::vector<std::int32_t>* rays =
        plan != nullptr ? &plan->ray_image[static_cast<std::size_t>(gi)] : nullptr;
    if (rays != nullptr) rays->assign(static_cast<std::size_t>(geometry.rays()), -1);
    for (int k = 0; k < geometry.angles(); ++k) {
      bool reversed = false;
      const int c = matching_projection(geometry, g, k, &reversed);
      if (c < 0) {
        std::ostringstream out;
        out << "the angle set is not invariant under the 8 symmetries of the square: symmetry "
            << gi << " maps projection " << k
            << " onto no projection of the scan (use angles uniform over 180 or 360 degrees, a "
               "count divisible by 4, starting at 0)";
        return out.str();
      }
      if (rays == nullptr) continue;
      for (int j = 0; j < bins; ++j) {
        (*rays)[static_cast<std::size_t>(k) * bins + j] = static_cast<std::int32_t>(
            static_cast<long long>(c) * bins + (reversed ? bins - 1 - j : j));
      }
    }
  }
  if (plan == nullptr) return {};

  plan->column_factor.assign(static_cast<std::size_t>(pixels), 0.0f);
  plan->octant_pixels.clear();
  for (long long p = 0; p < pixels; ++p) {
    const Doubled d = doubled_of(p, width);
    if (d.y < 0 || d.y > d.x) continue;
    int fixing = 0;
    for (const SquareSymmetry& g : kSquareSymmetries) {
      const Doubled m = apply(g, d);
      if (m.x == d.x && m.y == d.y) ++fixing;
    }
    plan->column_factor[static_cast<std::size_t>(p)] = 1.0f / static_cast<float>(fixing);
    plan->octant_pixels.push_back(static_cast<std::int32_t>(p));
  }
  for (int gi = 0; gi < kSymmetryCount; ++gi) {
    std::vector<std::int32_t>& images = plan->pixel_image[static_cast<std::size_t>(gi)];
    images.resize(plan->octant_pixels.size());
    for (std::size_t i = 0; i < plan->octant_pixels.size(); ++i) {
      const Doubled m = apply(kSquareSymmetries[static_cast<std::size_t>(gi)],
                              doubled_of(plan->octant_pixels[i], width));
      images[i] = static_cast<std::int32_t>(pixel_of(m, width));
    }
  }
  return {};
}

}  // namespace

std::string check_symmetry(const Geometry2d& geometry, const ImageGrid2d& grid) {
  return build(geometry, grid, nullptr);
}

SymmetryPlan make_symmetry_plan(const Geometry2d& geometry, const ImageGrid2d& grid) {
  SymmetryPlan plan;
  const std::string problem = build(geometry, grid, &plan);
  if (!problem.empty()) throw std::invalid_argument("8-fold symmetry: " + problem);
  return plan;
}

}  // namespace slicestream::tensorcore

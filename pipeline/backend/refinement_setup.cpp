#include "pipeline/backend/refinement_setup.hpp"

#include <cmath>
#include <cstdint>
#include <thread>

#include "kernels/solvers/cgls_workspace.hpp"
#include "kernels/solvers/fista.hpp"

namespace slicestream {
namespace {

bool same(const tensorcore::Vec2& a, const tensorcore::Vec2& b) {
  return a.x == b.x && a.y == b.y;
}

// The width of one bin where its rays cross the slice: the bin itself for parallel beam; for a
// fan, its shadow at the slice centre (the frame's origin), smaller by R / D.
double bin_at_slice_mm(BeamKind beam, const tensorcore::ProjectionVector2d& v) {
  const double bin_mm = std::sqrt(tensorcore::dot(v.u, v.u));
  if (beam != BeamKind::kCone || !(bin_mm > 0)) return bin_mm;
  const double source_center = std::sqrt(tensorcore::dot(v.source_or_ray, v.source_or_ray));
  const double source_detector =
      std::abs(tensorcore::cross((1 / bin_mm) * v.u, v.detector_center - v.source_or_ray));
  return source_detector > 0 ? bin_mm * source_center / source_detector : bin_mm;
}

}  // namespace

bool operator==(const RefinementSetup& a, const RefinementSetup& b) {
  const tensorcore::Geometry2d& g = a.geometry;
  const tensorcore::Geometry2d& h = b.geometry;
  if (g.beam != h.beam || g.bins != h.bins || g.vectors.size() != h.vectors.size()) return false;
  if (a.grid.width != b.grid.width || a.grid.height != b.grid.height ||
      a.grid.pixel_mm != b.grid.pixel_mm) {
    return false;
  }
  for (std::size_t i = 0; i < g.vectors.size(); ++i) {
    const tensorcore::ProjectionVector2d& v = g.vectors[i];
    const tensorcore::ProjectionVector2d& w = h.vectors[i];
    if (!same(v.source_or_ray, w.source_or_ray) || !same(v.detector_center, w.detector_center) ||
        !same(v.u, w.u)) {
      return false;
    }
  }
  return true;
}

double estimated_matrix_nonzeros(const RefinementSetup& setup) {
  constexpr double kMeanFootprint = 4.0 / 3.14159265358979323846;  // mean |cos| + |sin|
  double bins_per_pixel = 0;
  for (const tensorcore::ProjectionVector2d& v : setup.geometry.vectors) {
    const double bin_mm = bin_at_slice_mm(setup.geometry.beam, v);
    bins_per_pixel += bin_mm > 0 ? 1 + kMeanFootprint * setup.grid.pixel_mm / bin_mm : 1;
  }
  return static_cast<double>(setup.grid.pixels()) * bins_per_pixel;
}

std::size_t estimated_matrix_bytes(const RefinementSetup& setup) {
  return static_cast<std::size_t>(estimated_matrix_nonzeros(setup) *
                                  (sizeof(float) + sizeof(std::int32_t)));
}

std::size_t estimated_cpu_refiner_bytes(const RefinementSetup& setup) {
  const long long rays = setup.geometry.rays();
  const long long pixels = setup.grid.pixels();
  const std::size_t row_pointers = (static_cast<std::size_t>(rays) + 1) * sizeof(std::int64_t);
  return estimated_matrix_bytes(setup) + row_pointers +
         solvers::cgls_workspace_bytes({rays, pixels, 1, 0}) +
         solvers::fista_workspace_bytes({rays, pixels, 1, 0}) +
         static_cast<std::size_t>(rays) * sizeof(float);
}

std::size_t estimated_cuda_refiner_bytes(const RefinementSetup& setup) {
  const long long rays = setup.geometry.rays();
  const long long pixels = setup.grid.pixels();
  const std::size_t operands = static_cast<std::size_t>(rays) * kCudaOperandBytesPerRay +
                               static_cast<std::size_t>(pixels) * kCudaOperandBytesPerPixel;
  const std::size_t vectors = static_cast<std::size_t>(2 * rays + pixels) * sizeof(float);
  return estimated_matrix_bytes(setup) + operands +
         solvers::cgls_gpu_workspace_bytes({rays, pixels, 1, kCudaRefinerIterations}) +
         solvers::fista_workspace_bytes({rays, pixels, 1, 0}) + vectors;
}

int refiner_build_threads() {
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  return hardware > 1 ? hardware / 2 : 1;
}

}  // namespace slicestream

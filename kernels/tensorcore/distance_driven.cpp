#include "kernels/tensorcore/distance_driven.hpp"

#include <stdexcept>
#include <string>

#include "kernels/tensorcore/parallel_for.hpp"

namespace slicestream::tensorcore {

namespace {

void check(const Geometry2d& geometry, const ImageGrid2d& grid) {
  std::string problem = validate_geometry_2d(geometry);
  if (problem.empty()) problem = validate_grid_2d(grid);
  if (!problem.empty()) throw std::invalid_argument("distance-driven projector: " + problem);
}

}  // namespace

void dd_forward_cpu(const Geometry2d& geometry, const ImageGrid2d& grid, const float* image,
                    float* sinogram) {
  check(geometry, grid);
  const int bins = geometry.bins;
  parallel_for(geometry.angles(), [&](long long a, int) {
    std::vector<double> rays(static_cast<std::size_t>(bins), 0.0);
    DistanceDrivenProjection(geometry, grid, static_cast<int>(a))
        .enumerate([&](int bin, long long pixel, double w) {
          rays[static_cast<std::size_t>(bin)] += w * image[pixel];
        });
    float* out = sinogram + a * bins;
    for (int b = 0; b < bins; ++b)
      out[b] = static_cast<float>(rays[static_cast<std::size_t>(b)]);
  });
}

void dd_backward_cpu(const Geometry2d& geometry, const ImageGrid2d& grid, const float* sinogram,
                     float* image) {
  check(geometry, grid);
  const int bins = geometry.bins;
  const std::size_t pixels = static_cast<std::size_t>(grid.pixels());
  std::vector<std::vector<double>> partial(static_cast<std::size_t>(worker_count()));
  parallel_for(geometry.angles(), [&](long long a, int worker) {
    std::vector<double>& acc = partial[static_cast<std::size_t>(worker)];
    if (acc.empty()) acc.assign(pixels, 0.0);
    const float* rays = sinogram + a * bins;
    DistanceDrivenProjection(geometry, grid, static_cast<int>(a))
        .enumerate([&](int bin, long long pixel, double w) {
          acc[static_cast<std::size_t>(pixel)] += w * rays[bin];
        });
  });
  for (std::size_t p = 0; p < pixels; ++p) {
    double sum = 0;
    for (const std::vector<double>& acc : partial) {
      if (!acc.empty()) sum += acc[p];
    }
    image[p] = static_cast<float>(sum);
  }
}

}  // namespace slicestream::tensorcore

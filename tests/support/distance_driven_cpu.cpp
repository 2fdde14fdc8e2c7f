#include "tests/support/distance_driven_cpu.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace slicestream::tensorcore {

namespace {

void check(const Geometry2d& geometry, const ImageGrid2d& grid) {
  std::string problem = validate_geometry_2d(geometry);
  if (problem.empty()) problem = validate_grid_2d(grid);
  if (!problem.empty()) throw std::invalid_argument("distance-driven projector: " + problem);
}

}  // namespace

void dd_forward_cpu(Executor& executor, const Geometry2d& geometry, const ImageGrid2d& grid,
                    const float* image, float* sinogram) {
  check(geometry, grid);
  const int bins = geometry.bins;
  executor.parallel_for(static_cast<std::size_t>(geometry.angles()), 1,
                        [&](std::size_t begin, std::size_t end, int) {
                          std::vector<double> rays(static_cast<std::size_t>(bins));
                          for (std::size_t a = begin; a < end; ++a) {
                            std::fill(rays.begin(), rays.end(), 0.0);
                            DistanceDrivenProjection(geometry, grid, static_cast<int>(a))
                                .enumerate([&](int bin, long long pixel, double w) {
                                  rays[static_cast<std::size_t>(bin)] += w * image[pixel];
                                });
                            float* out = sinogram + a * static_cast<std::size_t>(bins);
                            for (int b = 0; b < bins; ++b)
                              out[b] = static_cast<float>(rays[static_cast<std::size_t>(b)]);
                          }
                        });
}

// Every participant sums into its own image; the partial images are added at the end.
void dd_backward_cpu(Executor& executor, const Geometry2d& geometry, const ImageGrid2d& grid,
                     const float* sinogram, float* image) {
  check(geometry, grid);
  const int bins = geometry.bins;
  const std::size_t pixels = static_cast<std::size_t>(grid.pixels());
  std::vector<std::vector<double>> partial(static_cast<std::size_t>(executor.max_participants()));
  executor.parallel_for(static_cast<std::size_t>(geometry.angles()), 1,
                        [&](std::size_t begin, std::size_t end, int participant) {
                          std::vector<double>& acc = partial[static_cast<std::size_t>(participant)];
                          if (acc.empty()) acc.assign(pixels, 0.0);
                          for (std::size_t a = begin; a < end; ++a) {
                            const float* rays = sinogram + a * static_cast<std::size_t>(bins);
                            DistanceDrivenProjection(geometry, grid, static_cast<int>(a))
                                .enumerate([&](int bin, long long pixel, double w) {
                                  acc[static_cast<std::size_t>(pixel)] += w * rays[bin];
                                });
                          }
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

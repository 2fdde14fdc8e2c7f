#include "clients/common/volume_planes.hpp"

#include <cstddef>

#include "clients/common/client_error.hpp"

namespace slicestream::client {

std::array<Plane, 3> central_planes(int size_x, int size_y, int size_z,
                                    const std::vector<float>& values) {
  const auto nx = static_cast<std::size_t>(size_x);
  const auto ny = static_cast<std::size_t>(size_y);
  const auto nz = static_cast<std::size_t>(size_z);
  if (size_x <= 0 || size_y <= 0 || size_z <= 0 || values.size() != nx * ny * nz) {
    throw ClientError("preview volume of " + std::to_string(values.size()) + " values is not " +
                      std::to_string(size_x) + " x " + std::to_string(size_y) + " x " +
                      std::to_string(size_z));
  }
  auto at = [&](std::size_t x, std::size_t y, std::size_t z) {
    return values[(z * ny + y) * nx + x];
  };
  Plane xy{"xy", size_x, size_y, std::vector<float>(nx * ny)};
  Plane xz{"xz", size_x, size_z, std::vector<float>(nx * nz)};
  Plane yz{"yz", size_y, size_z, std::vector<float>(ny * nz)};
  for (std::size_t y = 0; y < ny; ++y) {
    for (std::size_t x = 0; x < nx; ++x)
      xy.values[y * nx + x] = at(x, y, nz / 2);
  }
  for (std::size_t z = 0; z < nz; ++z) {
    for (std::size_t x = 0; x < nx; ++x)
      xz.values[z * nx + x] = at(x, ny / 2, z);
    for (std::size_t y = 0; y < ny; ++y)
      yz.values[z * ny + y] = at(nx / 2, y, z);
  }
  return {std::move(xy), std::move(xz), std::move(yz)};
}

}  // namespace slicestream::client

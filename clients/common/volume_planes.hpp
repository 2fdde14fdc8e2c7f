// The three central planes of a preview volume (x fastest, z slowest), as slice images with row 0
// at the bottom: xy at the middle z, xz at the middle y, yz at the middle x.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace slicestream::client {

struct Plane {
  std::string name;  // "xy", "xz", "yz"
  int width = 0;
  int height = 0;
  std::vector<float> values;
};

std::array<Plane, 3> central_planes(int size_x, int size_y, int size_z,
                                    const std::vector<float>& values);

}  // namespace slicestream::client

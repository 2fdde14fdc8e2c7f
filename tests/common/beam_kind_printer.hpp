// gtest prints a BeamKind parameter (in test listings and failure messages) by its name instead
// of its bytes. gtest finds PrintTo by argument-dependent lookup, so it lives in BeamKind's
// namespace; production code prints with to_string.
#pragma once

#include <ostream>

#include "kernels/geometry.hpp"

namespace slicestream {

inline void PrintTo(BeamKind beam, std::ostream* out) {
  *out << to_string(beam);
}

}  // namespace slicestream

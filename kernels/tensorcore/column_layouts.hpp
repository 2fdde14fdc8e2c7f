// Column renumbering that may depend on the ray: with ray-direction ("sheared") blocks every
// angular sector of the scan has its own layout of the pixels, so that 16 consecutive columns
// follow that sector's rays. The matrix's mapped column space is the concatenation of the layouts
// (each padded to a multiple of 16); the image is replicated into every layout before a forward
// product and the layouts are summed after a transposed one. A single layout is the plain case.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/tensorcore/index_mapping.hpp"

namespace slicestream::tensorcore {

struct ColumnLayouts {
  std::vector<IndexMapping> layouts;
  std::vector<long long> offset;         // first mapped column of each layout
  std::vector<std::uint8_t> ray_layout;  // per ray (original index): its layout; empty: layout 0
  long long mapped_size = 0;

  int layout_of_ray(long long ray) const {
    return ray_layout.empty() ? 0 : ray_layout[static_cast<std::size_t>(ray)];
  }
  long long pixels() const { return layouts.empty() ? 0 : layouts.front().size(); }
};

// Lays out `layouts` one after the other, each starting at a multiple of `alignment`.
ColumnLayouts make_column_layouts(std::vector<IndexMapping> layouts,
                                  std::vector<std::uint8_t> ray_layout, int alignment = 16);
ColumnLayouts single_layout(IndexMapping layout, int alignment = 16);

}  // namespace slicestream::tensorcore

#include "kernels/tensorcore/column_layouts.hpp"

#include <stdexcept>

namespace slicestream::tensorcore {

ColumnLayouts make_column_layouts(std::vector<IndexMapping> layouts,
                                  std::vector<std::uint8_t> ray_layout, int alignment) {
  if (layouts.empty() || layouts.size() > 256) {
    throw std::invalid_argument("column layouts: need 1 to 256 layouts");
  }
  ColumnLayouts out;
  long long next = 0;
  for (const IndexMapping& layout : layouts) {
    if (layout.size() != layouts.front().size()) {
      throw std::invalid_argument("column layouts: layouts of different pixel counts");
    }
    out.offset.push_back(next);
    next += (layout.mapped_size() + alignment - 1) / alignment * alignment;
  }
  if (next > 0x7fffffffLL) throw std::invalid_argument("column layouts: more than 2^31 columns");
  for (std::uint8_t l : ray_layout) {
    if (l >= layouts.size()) throw std::invalid_argument("column layouts: ray layout out of range");
  }
  out.layouts = std::move(layouts);
  out.ray_layout = std::move(ray_layout);
  out.mapped_size = next;
  return out;
}

ColumnLayouts single_layout(IndexMapping layout, int alignment) {
  std::vector<IndexMapping> layouts;
  layouts.push_back(std::move(layout));
  return make_column_layouts(std::move(layouts), {}, alignment);
}

}  // namespace slicestream::tensorcore

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

void replicate_columns(const ColumnLayouts& layouts, const float* image, float* out, int columns) {
  for (long long i = 0; i < layouts.mapped_size * columns; ++i)
    out[i] = 0;
  for (std::size_t l = 0; l < layouts.layouts.size(); ++l) {
    const IndexMapping& layout = layouts.layouts[l];
    for (long long p = 0; p < layout.size(); ++p) {
      const long long slot = layouts.offset[l] + layout.to_mapped[static_cast<std::size_t>(p)];
      for (int c = 0; c < columns; ++c)
        out[slot * columns + c] = image[p * columns + c];
    }
  }
}

void sum_columns(const ColumnLayouts& layouts, const float* in, float* image, int columns) {
  const long long pixels = layouts.pixels();
  for (long long i = 0; i < pixels * columns; ++i)
    image[i] = 0;
  for (std::size_t l = 0; l < layouts.layouts.size(); ++l) {
    const IndexMapping& layout = layouts.layouts[l];
    for (long long p = 0; p < pixels; ++p) {
      const long long slot = layouts.offset[l] + layout.to_mapped[static_cast<std::size_t>(p)];
      for (int c = 0; c < columns; ++c)
        image[p * columns + c] += in[slot * columns + c];
    }
  }
}

}  // namespace slicestream::tensorcore

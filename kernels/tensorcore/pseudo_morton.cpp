#include "kernels/tensorcore/pseudo_morton.hpp"

#include <stdexcept>
#include <vector>

namespace slicestream::tensorcore {

namespace {

bool power_of_two(int v) {
  return v > 0 && (v & (v - 1)) == 0;
}
std::int64_t round_up(std::int64_t v, std::int64_t m) {
  return (v + m - 1) / m * m;
}

}  // namespace

std::int64_t pseudo_morton_index(std::int64_t x, std::int64_t y, std::int64_t padded_extent_y,
                                 PseudoMortonParams p) {
  const std::int64_t bx = p.bx;
  const std::int64_t by = p.by;
  const std::int64_t tx = x % bx;
  const std::int64_t ty = y % by;
  const std::int64_t block_x = x / bx;
  const std::int64_t block_y = y / by;
  const std::int64_t t2x = block_x % bx;
  const std::int64_t t2y = block_y % by;
  const std::int64_t b2x = block_x / bx;
  const std::int64_t b2y = block_y / by;
  const std::int64_t i1 = (t2x * by + t2y) + (b2x * (padded_extent_y / (by * by)) + b2y) * bx * by;
  return (tx * by + ty) + i1 * bx * by;
}

IndexMapping make_pseudo_morton_mapping(int extent_x, int extent_y, PseudoMortonParams p) {
  if (!power_of_two(p.bx) || !power_of_two(p.by)) {
    throw std::invalid_argument("pseudo-Morton block sizes must be powers of two");
  }
  if (extent_x <= 0 || extent_y <= 0) {
    throw std::invalid_argument("pseudo-Morton mapping needs a non-empty index space");
  }
  const std::int64_t padded_x = round_up(extent_x, static_cast<std::int64_t>(p.bx) * p.bx);
  const std::int64_t padded_y = round_up(extent_y, static_cast<std::int64_t>(p.by) * p.by);
  std::vector<std::int32_t> slots(static_cast<std::size_t>(extent_x) *
                                  static_cast<std::size_t>(extent_y));
  for (int y = 0; y < extent_y; ++y) {
    for (int x = 0; x < extent_x; ++x) {
      slots[static_cast<std::size_t>(y) * static_cast<std::size_t>(extent_x) +
            static_cast<std::size_t>(x)] =
          static_cast<std::int32_t>(pseudo_morton_index(x, y, padded_y, p));
    }
  }
  return mapping_from_slots(std::move(slots), padded_x * padded_y);
}

}  // namespace slicestream::tensorcore

// The pseudo-Morton mapping of the paper (Alg. 2): a two-level tiling of a 2D index space
// (x fastest, original index = y * extent_x + x) with tiles of bx x by elements inside tiles of
// bx x by tiles; the lowest log2(bx) + log2(by) bits are not Morton-interleaved (paper §3.3).
// Applied to matrix columns (x = image column, y = image row) and rows (x = detector bin,
// y = projection). With bx = 4, by = 2 (the paper's choice), 8 consecutive slots are 4 x 2
// elements, 16 are 4 x 4, 32 are 8 x 4.
#pragma once

#include <cstdint>

#include "kernels/tensorcore/index_mapping.hpp"

namespace slicestream::tensorcore {

struct PseudoMortonParams {
  int bx = 4;  // powers of two
  int by = 2;
};

// Alg. 2 for one coordinate pair of an extent padded to multiples of bx^2 and by^2:
// padded_extent_y is the padded height (the paper's W when applied along columns).
std::int64_t pseudo_morton_index(std::int64_t x, std::int64_t y, std::int64_t padded_extent_y,
                                 PseudoMortonParams params);

// The mapping of an extent_x x extent_y index space; the mapped space is the padded extent.
// Throws std::invalid_argument for block sizes that are not powers of two.
IndexMapping make_pseudo_morton_mapping(int extent_x, int extent_y, PseudoMortonParams params = {});

}  // namespace slicestream::tensorcore

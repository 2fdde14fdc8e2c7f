// Blocks that follow the ray directions (an ordering denser than pseudo-Morton). The projections
// are split into angular sectors by the direction of their central ray; each sector gets its own
// pixel layout in which 16 consecutive columns are a tile of tile_across x tile_along pixels in
// coordinates sheared along the sector's central direction, so that a tile lies along the rays of
// that sector. Rows are grouped per sector into tiles of bins x projections (one block row each).
// Tiles are ordered along a Morton curve for locality between neighbouring blocks.
//
// The stored blocks are fuller than with pseudo-Morton (bench/tensorcore prints the fill for every
// size; docs/performance.md, Table 3).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/tensorcore/column_layouts.hpp"
#include "kernels/tensorcore/geometry_2d.hpp"
#include "kernels/tensorcore/index_mapping.hpp"

namespace slicestream::tensorcore {

struct RayShearedParams {
  int sectors = 8;
  int tile_across = 2;  // pixels across the rays; tile_across * tile_along == 16
  int tile_along = 8;
  int row_tile_bins = 2;  // row_tile_bins * row_tile_projections == block rows
  int row_tile_projections = 4;
};

// Parameters for a block height (8, 16 or 32 rows): the best found per height.
RayShearedParams ray_sheared_params(int block_rows);

// Sector of each projection (0 .. sectors-1), from its central ray direction modulo 180 degrees.
std::vector<int> projection_sectors(const Geometry2d& geometry, int sectors);

// Rows: sectors one after another, each padded to whole tiles; a multiple of 32 per sector.
IndexMapping ray_sheared_row_mapping(const Geometry2d& geometry, const RayShearedParams& params);
// Columns: one sheared layout per sector; ray_layout set from the projections' sectors.
ColumnLayouts ray_sheared_columns(const Geometry2d& geometry, const ImageGrid2d& grid,
                                  const RayShearedParams& params);

}  // namespace slicestream::tensorcore

// CPU twin of the voxel-driven backprojector: bilinear interpolation on the detector, FDK
// distance weighting, any GridSpec (oblique slices, preview volumes), cone and parallel beam.
#pragma once

#include "kernels/frame_view.hpp"
#include "kernels/grid_spec.hpp"
#include "kernels/projection_map.hpp"

namespace slicestream::cpu {

// One filtered projection (rows x cols floats, row-major) and where it was taken.
struct ProjectionRef {
  const float* data;
  ProjectionMap map;
};

// For plane k and rows j in [row_begin, row_end) of `grid`, for every i:
//   target[(k * height + j) * width + i] += scale * sum_p p.map.weight * bilinear(p, col, row) / den^2
// Samples outside the detector read 0 (like a texture with a zero border). Points with den <= 0
// (behind the source) contribute nothing.
void backproject_rows(const GridSpec& grid, DetectorShape detector, const ProjectionRef* projections,
                      int count, float scale, float* target, int plane, int row_begin,
                      int row_end);

}  // namespace slicestream::cpu

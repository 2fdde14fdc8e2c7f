// CPU twins of the Tensor Core projector's operand kernels (kernels/tensorcore/cuda/
// projector_operand_kernels.cuh): the row renumbering, the column layouts' copies and the 8-fold
// symmetry's transforms, which the CPU twin of the projector (bsr_projector_cpu.hpp) runs around
// its products and the tests check against the definitions.
#pragma once

#include "kernels/tensorcore/column_layouts.hpp"
#include "kernels/tensorcore/index_mapping.hpp"
#include "kernels/tensorcore/square_symmetry.hpp"

namespace slicestream::tensorcore {

// `columns` values per index, row-major. map: out[slot] = in[original] (padding slots get 0);
// unmap: out[original] = in[slot].
void map_rows(const IndexMapping& mapping, const float* in, float* out, int columns);
void unmap_rows(const IndexMapping& mapping, const float* in, float* out, int columns);

// `columns` values per pixel, row-major. replicate: out (mapped_size rows) holds the image in
// every layout, padding 0. sum: out[p] = sum over layouts of in[offset + slot(p)].
void replicate_columns(const ColumnLayouts& layouts, const float* image, float* out, int columns);
void sum_columns(const ColumnLayouts& layouts, const float* in, float* image, int columns);

// The 8-fold symmetry's gather and inverse transforms. `slices` images; the octant operand has
// 8 * slices columns, column s * 8 + g holding slice s under symmetry g. All row-major.
//   gather:  x_oct[q, 8s+g] = image[g q, s]            (image: pixels x slices; q over all pixels,
//                                                        rows outside O set to 0)
//   combine: y[r, s] = sum_g y_oct[g^-1 r, 8s+g]       (forward: the paper's inverse transform
//                                                        and summation)
//   spread:  z[r, 8s+g] = y[g r, s]                    (adjoint of combine)
//   scatter: image[p, s] = sum_{g, q: g q = p} s_oct[q, 8s+g]   (adjoint of gather)
void symmetric_gather(const SymmetryPlan& plan, const float* image, float* x_oct, int slices);
void symmetric_combine(const SymmetryPlan& plan, const float* y_oct, float* y, int slices);
void symmetric_spread(const SymmetryPlan& plan, const float* y, float* z, int slices);
void symmetric_scatter(const SymmetryPlan& plan, const float* s_oct, float* image, int slices);

}  // namespace slicestream::tensorcore

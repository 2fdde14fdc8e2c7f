// CPU twin of the gathered symmetric kernel (kernels/tensorcore/cuda/gathered_spmm.hpp), exact
// (double) sums over the grouped blocks (kernels/tensorcore/grouped_blocks.hpp): for every g and
// block row i of `blocks`,
//   out[target[g * rows + i], s] += value_scale * sum_k block[i, k] in[source[g * cols + k], s]
// (entries -1 skipped). in and out are row-major with `slices` columns; out is accumulated into.
#pragma once

#include <cstdint>

#include "kernels/executor.hpp"
#include "kernels/tensorcore/grouped_blocks.hpp"

namespace slicestream::tensorcore {

void gathered_product_cpu(Executor& executor, const GroupedBlocks& blocks,
                          const std::int32_t* source, const std::int32_t* target, const float* in,
                          float* out, int slices);

}  // namespace slicestream::tensorcore

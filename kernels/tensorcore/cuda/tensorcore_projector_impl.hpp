// The state of a TensorCoreProjector (tensorcore_projector.hpp), shared by the files that
// implement it: the upload of the matrix and its index maps (tensorcore_projector_upload.cu), the
// column-form products (tensorcore_projector.cu) and the gathered products
// (tensorcore_projector_gathered.cu).
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/cuda/device_buffer.hpp"
#include "kernels/tensorcore/cuda/bsr_spmm.hpp"
#include "kernels/tensorcore/cuda/gathered_spmm.hpp"
#include "kernels/tensorcore/cuda/tensorcore_projector.hpp"

namespace slicestream::tensorcore::cuda {

using ::slicestream::cuda::DeviceBuffer;

struct TensorCoreProjector::Impl {
  std::shared_ptr<const TensorCoreMatrix> m;
  TensorCoreProjectorOptions options;
  bool symmetric = false;
  int per_slice = 1;
  int layouts = 1;
  DeviceBuffer<std::uint16_t> blocks;
  DeviceBuffer<int> row_ptr, col_index, col_ptr, col_blocks, col_block_rows;
  DeviceBuffer<int> col_source, row_source, ray_slot, pixel_slots, octant_image, ray_image;
  DeviceBuffer<unsigned char> transform_mask;
  // Gathered symmetric products: A_oct's and A_oct^T's grouped blocks and the two tables.
  struct DeviceGroupedBlocks {
    DeviceBuffer<std::uint16_t> blocks;
    DeviceBuffer<int> group_chunk, chunk_tile, chunk_block;
    DeviceBuffer<std::uint64_t> chunk_mask;
    int groups = 0;
    void upload_from(const GroupedBlocks& g);
    std::size_t bytes() const {
      return blocks.bytes() + group_chunk.bytes() + chunk_tile.bytes() + chunk_block.bytes() +
             chunk_mask.bytes();
    }
    void describe(GatheredSpmmArgs& a) const;
  };
  bool gathered_available = false;
  DeviceGroupedBlocks gathered_fwd, gathered_bwd;
  DeviceBuffer<int> ray_of_row, pixel_of_col;
  GatheredSpmmArgs gathered_forward_args, gathered_backward_args;
  bool last_forward_gathered = false;
  bool last_backward_gathered = false;
  // Work space: grown to the largest call so far, never shrunk (forward and backward need
  // different sizes, and reallocating, whose cudaFree synchronises the device, every call would
  // serialise every CGLS iteration).
  DeviceBuffer<std::uint16_t> x_half, y_half;
  DeviceBuffer<float> y_out, x_out, operand_scale, column_scale;
  DeviceBuffer<double> reduce;
  BsrForwardArgs forward_args;
  BsrTransposedArgs transposed_args;
  enum class Call { kNone, kForward, kBackward };
  Call last_call = Call::kNone;  // what repeat_last_product repeats

  void upload_matrix();
  void upload_gathered();
  template <typename T>
  static void ensure(DeviceBuffer<T>& buffer, std::size_t count) {
    if (buffer.size() < count) buffer.resize(count);
  }
  void prepare_scales(const float* input, long long rows, int slices, const float* max_abs,
                      int columns, int per_slice_columns, int lo, cudaStream_t stream);
  bool fast = false;  // set_fast_products: fp16 operands for now despite compensated_operands
  // Operands travel compensated (hi + lo columns) in this direction.
  bool compensated(bool backward) const {
    return options.compensated_operands && !fast && (!backward || options.compensate_backward);
  }
  bool gathered(int slices, bool backward) const {
    const int real = slices * (compensated(backward) ? 2 : 1);
    return gathered_available && options.gathered_symmetry && options.split_accumulation &&
           real >= 16 && real <= 64;
  }
  // Gathered products: columns and the compensating columns' offset.
  int gathered_columns(int slices, bool backward) const {
    const int real = slices * (compensated(backward) ? 2 : 1);
    return real <= 32 ? 32 : 64;  // the kernel's column counts
  }
  int gathered_lo(int slices, bool backward) const { return compensated(backward) ? slices : 0; }
  void run_gathered(const float* in, long long in_rows, float* out, long long out_rows, int slices,
                    bool backward, const float* max_abs, DeviceBuffer<std::uint16_t>& operand,
                    GatheredSpmmArgs& a, cudaStream_t stream);
  void forward_gathered(const float* image, float* sinogram, int slices, cudaStream_t stream,
                        const float* max_abs);
  void backward_gathered(const float* sinogram, float* image, int slices, cudaStream_t stream,
                         const float* max_abs);
  int real_columns(int slices) const { return slices * per_slice; }
  int lo_offset(int slices, bool backward) const {
    return compensated(backward) ? real_columns(slices) : 0;
  }
  int product_values(int slices, bool backward) const {
    return real_columns(slices) * (compensated(backward) ? 2 : 1);
  }
};

}  // namespace slicestream::tensorcore::cuda

// The Tensor Core projector on the GPU: the fp16 BSR matrix of a TensorCoreMatrix uploaded once,
// and forward / back projection of several slices through the WMMA kernels (paper Fig. 2; with
// the 8-fold symmetry Fig. 5): renumber and convert the operands to fp16 (per-column power-of-two
// scaling), one SpMM, renumber the result back (and for the symmetry, transform and sum).
// Images are pixels x slices and sinograms rays x slices, fp32, row-major, in device memory.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>

#include "kernels/solvers/cuda/device_projection_operator.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"

namespace slicestream::tensorcore::cuda {

// How a TensorCoreProjector computes, fixed when it is constructed.
struct TensorCoreProjectorOptions {
  // Compensated operands: every fp16 operand column travels as two, hi = fp16(v) and
  // lo = fp16(v - hi) scaled by 2^12 (about 22 significant bits), at twice the columns of the
  // products; the matrix stays fp16. This removes the operand part of the CG error
  // (docs/performance.md, "CG accuracy"), with split accumulation (below) on.
  bool compensated_operands = false;
  // With compensated operands: compensate the back projection's operands too (false: only the
  // forward operand, in CGLS the search direction, where the rounding costs accuracy; the back
  // projection then runs at the fp16 cost, docs/performance.md).
  bool compensate_backward = true;
  // Split accumulation: the WMMA kernels add each group of kMmaChainBlocks blocks' MMA chain to
  // an fp32 sum instead of accumulating a whole row or column in one chain, whose truncation
  // inside every MMA biases the sums (kernels/tensorcore/mma_accumulation.hpp). Off only to
  // measure that effect (the accuracy benchmark and tests).
  bool split_accumulation = true;
  // Gathered symmetric products (kernels/tensorcore/symmetric_gather.hpp): a symmetric 16.16.16
  // matrix with one column layout projects 16 to 64 product columns (slices, doubled when
  // compensated) with one column per slice (padded to 32 or 64), reading operands through the
  // symmetry and adding results where it sends them, instead of 8 columns per slice. Off, or with
  // split accumulation off (the gathered kernels always split): the column form.
  bool gathered_symmetry = true;
  // Persistent CTAs of the gathered kernel (0: its default, GatheredSpmmArgs::ctas); the
  // benchmark's tuning sweep sets it.
  int gathered_ctas = 0;
};

class TensorCoreProjector final : public solvers::cuda::DeviceProjectionOperator {
 public:
  explicit TensorCoreProjector(std::shared_ptr<const TensorCoreMatrix> matrix,
                               const TensorCoreProjectorOptions& options = {});
  ~TensorCoreProjector() override;
  TensorCoreProjector(const TensorCoreProjector&) = delete;
  TensorCoreProjector& operator=(const TensorCoreProjector&) = delete;

  long long rays() const override;
  long long pixels() const override;
  // Any slice count up to 256 product columns (8 per slice with the symmetry's column form; the
  // gathered products take up to 64) works: columns are padded to the fragment width with zeros.
  // Throws std::invalid_argument beyond.
  void forward(const float* image, float* sinogram, int slices, cudaStream_t stream,
               const float* max_abs = nullptr) override;
  void backward(const float* sinogram, float* image, int slices, cudaStream_t stream,
                const float* max_abs = nullptr) override;

  // With compensated operands: fp16 operands instead from the next call on (`fast` true), until
  // set back; CGLS's relaxed precision (solvers::CglsOptions::accurate_iterations) uses it. No
  // effect without compensated operands.
  void set_fast_products(bool fast) override;

  // Whether forward (and backward, `backward` true) of `slices` slices take the gathered
  // products.
  bool uses_gathered_products(int slices, bool backward = false) const;

  // Product columns of the column-form SpMM for `slices` slices (symmetry, compensation, padding
  // included); the gathered products use one per slice (uses_gathered_products).
  int forward_columns(int slices) const;
  int transposed_columns(int slices) const;
  // Blocks and indices held on the device.
  std::size_t matrix_device_bytes() const;
  // Everything held on the device: the matrix, the index maps and the operand work space (which
  // grows to the largest call so far and is never shrunk).
  std::size_t device_bytes() const;
  // Allocates the work space of forward and backward for up to `slices` slices now, so that later
  // calls of that size allocate nothing.
  void reserve_operands(int slices);
  const TensorCoreMatrix& matrix() const;

  // The sparse product of the last forward or backward once more, alone: no operand conversion
  // and no renumbering of the result, on the operands that call left in the work space (what the
  // product kernel costs by itself, for the benchmark). Its result goes where that call's product
  // went: into the work space (column form), or added once more to that call's output (gathered
  // products), which must still be allocated. Throws std::logic_error before the first call.
  void repeat_last_product(cudaStream_t stream);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace slicestream::tensorcore::cuda

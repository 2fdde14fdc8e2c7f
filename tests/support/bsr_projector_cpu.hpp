// The CPU twin of the Tensor Core projector: the same fp16 blocks, renumbering, symmetry
// transforms and fp16 operand rounding (per-column power-of-two scaling,
// kernels/tensorcore/operand_scaling.hpp) as the CUDA path, with exact accumulation. Tests compare
// the GPU against it, and CGLS over it predicts the accuracy of the mixed-precision solver.
#pragma once

#include <memory>
#include <vector>

#include "kernels/executor.hpp"
#include "kernels/solvers/projection_operator.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"
#include "tests/support/mma_accumulation_model.hpp"

namespace slicestream::tensorcore {

struct BsrProjectorCpuOptions {
  // Each fp16 operand column travels as two, hi = fp16(v) and lo = fp16(v - hi) (scaled by
  // 2^12), giving about 22 significant bits (the GPU projector's option of that name).
  bool compensated = false;
  // Exact sums by default; MmaAccumulation{true, ...} models the tensor cores' accumulation.
  MmaAccumulation accumulation;
  // With `compensated`: the back projection's operands too (false: the forward operand only).
  bool compensate_backward = true;
};

class BsrProjectorCpu : public solvers::ProjectionOperator {
 public:
  // `executor` (the products' threads) must outlive the projector.
  BsrProjectorCpu(std::shared_ptr<const TensorCoreMatrix> matrix, Executor& executor,
                  const BsrProjectorCpuOptions& options = {});

  long long rays() const override { return matrix_->geometry.rays(); }
  long long pixels() const override { return matrix_->grid.pixels(); }
  void forward(const float* image, float* sinogram, int columns) override;
  void backward(const float* sinogram, float* image, int columns) override;
  // As the GPU projector's: fp16 operands while fast, even when compensated.
  void set_fast_products(bool fast) override { fast_ = fast; }

 private:
  void forward_plain(const float* image, float* sinogram, int columns);
  void backward_plain(const float* sinogram, float* image, int columns);

  // Rounds `rows` x `columns` values to fp16 operands, columns hi then lo when `compensate`,
  // into operands_ (rows x operand_columns); writes per-operand-column factors that undo the
  // scaling.
  int make_operands(const float* values, long long rows, int columns, bool compensate,
                    std::vector<float>* undo);

  std::shared_ptr<const TensorCoreMatrix> matrix_;
  Executor& executor_;
  bool compensate_forward_ = false;
  bool compensate_backward_ = false;
  bool fast_ = false;
  MmaAccumulation accumulation_;
  std::vector<float> operands_;
  std::vector<float> mapped_in_;
  std::vector<float> mapped_out_;
  std::vector<float> octant_;
  std::vector<float> octant_rays_;
};

// Rounds each of `columns` columns (row-major, `rows` rows) to fp16 after scaling it by
// half_operand_scale(max |column|); writes the scales. The values stay scaled.
void round_columns_to_half(float* data, long long rows, int columns, float* scales);

}  // namespace slicestream::tensorcore

// A 2D projector as a linear operator with several right-hand sides: images are pixels x columns
// and sinograms rays x columns, row-major (element (i, c) at i * columns + c). CGLS runs over it
// (cgls.hpp); projectors implement it where they live (the fp32 CSR matrix: CsrProjector,
// kernels/tensorcore/csr_projector.hpp).
#pragma once

namespace slicestream::solvers {

class ProjectionOperator {
 public:
  virtual ~ProjectionOperator() = default;
  virtual long long rays() const = 0;
  virtual long long pixels() const = 0;
  virtual void forward(const float* image, float* sinogram, int columns) = 0;
  virtual void backward(const float* sinogram, float* image, int columns) = 0;

  // Solvers that relax the products' precision as they converge (CglsOptions::
  // accurate_iterations) ask for the operator's cheaper, coarser products (`fast` true) once the
  // accurate start is done, and for accurate ones again when the solve ends. Operators of one
  // precision ignore it; the Tensor Core projectors built with compensated operands take fp16
  // operands while fast.
  virtual void set_fast_products(bool /*fast*/) {}
};

}  // namespace slicestream::solvers

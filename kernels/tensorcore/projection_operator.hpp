// A 2D projector as a linear operator with several right-hand sides: images are pixels x columns
// and sinograms rays x columns, row-major (element (i, c) at i * columns + c). CGLS runs over it;
// the CPU implementations are the fp32 CSR matrix and the fp16 BSR twin of the Tensor Core path.
#pragma once

namespace slicestream::tensorcore {

class ProjectionOperator {
 public:
  virtual ~ProjectionOperator() = default;
  virtual long long rays() const = 0;
  virtual long long pixels() const = 0;
  virtual void forward(const float* image, float* sinogram, int columns) = 0;
  virtual void backward(const float* sinogram, float* image, int columns) = 0;
};

}  // namespace slicestream::tensorcore

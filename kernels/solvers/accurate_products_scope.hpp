// Relaxed product precision in a solve (CglsOptions::accurate_iterations): the operator's
// accurate products for the start and the first iterations, its fast ones after, and accurate
// again when the solve ends, however it ends (an exception included), so that an operator is
// left as the solver found it. Works with ProjectionOperator and cuda::DeviceProjectionOperator.
#pragma once

namespace slicestream::solvers {

template <class Operator>
class AccurateProductsScope {
 public:
  AccurateProductsScope(Operator& op, int accurate_iterations)
      : op_(op), accurate_iterations_(accurate_iterations) {
    op_.set_fast_products(false);
  }
  ~AccurateProductsScope() { op_.set_fast_products(false); }
  AccurateProductsScope(const AccurateProductsScope&) = delete;
  AccurateProductsScope& operator=(const AccurateProductsScope&) = delete;

  // Before iteration `iteration` (0-based): fast products from iteration accurate_iterations on.
  void before_iteration(int iteration) {
    if (iteration == accurate_iterations_) op_.set_fast_products(true);
  }

 private:
  Operator& op_;
  int accurate_iterations_;
};

}  // namespace slicestream::solvers

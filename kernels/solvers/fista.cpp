#include "kernels/solvers/fista.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/expr/host_evaluate.hpp"
#include "kernels/solvers/fista_iterations.hpp"

namespace slicestream::solvers {
namespace {

// fista_iterations.hpp's engine on the host: passes by expr::evaluate_pass, per-column scalars
// copied into the workspace's arrays.
struct HostEngine {
  ProjectionOperator& op;
  int columns;

  template <class P>
  void pass(const P& pass, expr::Extent2D extent, double* results) {
    expr::evaluate_pass(pass, extent, results);
  }
  void forward(const float* image, float* sinogram) { op.forward(image, sinogram, columns); }
  void backward(const float* sinogram, float* image) { op.backward(sinogram, image, columns); }
  void upload(float* target, const std::vector<float>& host) {
    std::copy(host.begin(), host.end(), target);
  }
};

}  // namespace

std::size_t fista_workspace_bytes(const CglsSize& size) {
  const auto columns = static_cast<std::size_t>(size.columns);
  return (3 * static_cast<std::size_t>(size.rays) + 3 * static_cast<std::size_t>(size.pixels) + 6) *
         columns * sizeof(float);
}

void FistaWorkspace::reserve(const CglsSize& size) {
  if (size.fits_in(capacity_)) return;
  const CglsSize grown = capacity_.covering(size);
  const auto columns = static_cast<std::size_t>(grown.columns);
  for (std::vector<float>* v : {&r, &ax, &ax_next})
    v->resize(static_cast<std::size_t>(grown.rays) * columns);
  for (std::vector<float>* v : {&y, &z, &g})
    v->resize(static_cast<std::size_t>(grown.pixels) * columns);
  for (std::vector<float>* v : {&step, &beta, &active, &tikhonov, &tv_weight, &tv_epsilon})
    v->resize(columns);
  capacity_ = grown;
}

std::size_t FistaWorkspace::bytes() const {
  return fista_workspace_bytes(capacity_);
}

void validate_fista(const FistaOptions& options, long long pixels, int columns) {
  if (columns <= 0) throw std::invalid_argument("fista: need at least one column");
  if (options.max_iterations < 0) throw std::invalid_argument("fista: negative iteration count");
  if (!(options.weight >= 0)) throw std::invalid_argument("fista: negative regularisation weight");
  if (!(options.relative_tolerance >= 0)) throw std::invalid_argument("fista: negative tolerance");
  if (options.image_width <= 0 || options.image_height <= 0 ||
      static_cast<long long>(options.image_width) * options.image_height != pixels) {
    throw std::invalid_argument("fista: the image shape " + std::to_string(options.image_width) +
                                " x " + std::to_string(options.image_height) +
                                " does not match the operator's " + std::to_string(pixels) +
                                " pixels");
  }
}

FistaReport fista_cpu(ProjectionOperator& op, const float* b, float* x, int columns,
                      const FistaOptions& options, FistaWorkspace& workspace) {
  validate_fista(options, op.pixels(), columns);
  workspace.reserve({op.rays(), op.pixels(), columns, 0});
  const fista_detail::FistaVectors vectors = fista_detail::vectors_of(workspace);
  HostEngine engine{op, columns};
  return fista_detail::fista_solve(engine, vectors, b, x, columns, op.rays(), op.pixels(), options);
}

}  // namespace slicestream::solvers

// CG accuracy on the CPU twin: the benchmark's accuracy problem (720 x 512 parallel beam, Shepp-
// Logan phantom, exact line integrals, 20 CGLS iterations from zero, error to the pixelised
// phantom) solved with the fp32 CSR matrix and with the fp16 BSR twin under several operand and
// accumulation models (exact sums, or the tensor core model of kernels/tensorcore/
// mma_accumulation.hpp with and without split accumulation chains). No GPU needed; it answers
// which part of the Tensor Core path costs accuracy (docs/performance.md, "CG accuracy").
//
//   cg_accuracy_cpu --size 320 --models exact,tc,tc-split --compensated 1
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/tensorcore/bsr_projector_cpu.hpp"
#include "kernels/solvers/cgls.hpp"
#include "kernels/tensorcore/csr_projector.hpp"
#include "kernels/tensorcore/ellipse_phantom_2d.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"

namespace {

using namespace slicestream::tensorcore;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ','))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

// exact: double sums; tc: one accumulation chain per output (the kernels before the split);
// tc-split: chains of kMmaChainBlocks blocks added in fp32 (the kernels now).
MmaAccumulation model_named(const std::string& name, int step_products, int extra_bits) {
  MmaAccumulation m;
  if (name == "exact") return m;
  m.emulate = true;
  m.step_products = step_products;
  m.extra_bits = extra_bits;
  if (name == "tc") return m;
  if (name == "tc-split") {
    m.chain_blocks = kMmaChainBlocks;
    return m;
  }
  throw std::invalid_argument("unknown model " + name + " (exact, tc, tc-split)");
}

}  // namespace

int main(int argc, char** argv) {
  int size = 320, angles = 720, bins = 512, iterations = 20, step_products = 16, extra_bits = 0;
  std::string models = "exact,tc,tc-split", shape_name = "16.16.16", ordering_name = "ray-sheared";
  std::vector<int> compensated{0, 1};
  CLI::App app{"CG accuracy of the CPU Tensor Core twin under operand and accumulation models"};
  app.add_option("--size", size, "image size (square, 1 mm pixels)");
  app.add_option("--angles", angles, "projection angles over 180 degrees");
  app.add_option("--bins", bins, "detector bins (detector as wide as the image)");
  app.add_option("--iterations", iterations, "CGLS iterations");
  app.add_option("--models", models, "comma-separated: exact, tc, tc-split");
  app.add_option("--compensated", compensated, "operand kinds to run: 0 fp16, 1 hi + lo fp16");
  app.add_option("--step-products", step_products, "products per MMA k-step in the model");
  app.add_option("--extra-bits", extra_bits, "alignment bits beyond 24 in the model");
  app.add_option("--shape", shape_name, "WMMA shape: 32.8.16, 16.16.16, 8.32.16");
  app.add_option("--ordering", ordering_name, "pseudo-morton or ray-sheared");
  CLI11_PARSE(app, argc, argv);

  WmmaShape shape = WmmaShape::kM16N16K16;
  for (WmmaShape s : kAllWmmaShapes)
    if (shape_name == to_string(s)) shape = s;
  const BlockOrdering ordering =
      ordering_name == "pseudo-morton" ? BlockOrdering::kPseudoMorton : BlockOrdering::kRaySheared;

  auto t0 = std::chrono::steady_clock::now();
  const PhantomProblem2d problem = make_phantom_problem(size, angles, bins);
  const ImageGrid2d& grid = problem.grid;
  const Geometry2d& geometry = problem.geometry;
  const std::vector<float>& truth = problem.truth;
  const std::vector<float>& data = problem.data;
  const auto a = std::make_shared<CsrMatrix>(build_dd_matrix(geometry, grid));
  TensorCoreMatrixOptions tc;
  tc.shape = shape;
  tc.ordering = ordering;
  const auto m =
      std::make_shared<TensorCoreMatrix>(build_tensorcore_matrix(*a, geometry, grid, tc, nullptr));
  std::printf("%dx%d, %d angles x %d bins: nnz %.1fe6, %s %s, set-up %.1f s\n", size, size, angles,
              bins, a->nnz() / 1e6, to_string(ordering), to_string(shape), seconds_since(t0));
  std::fflush(stdout);

  CglsOptions options;
  options.max_iterations = iterations;
  t0 = std::chrono::steady_clock::now();
  CsrProjector single(a);
  std::vector<float> x32(truth.size(), 0.0f);
  cgls_cpu(single, data.data(), x32.data(), 1, options);
  const double error32 = relative_error(x32, truth);
  std::printf("fp32 CSR: error %.6f (%.1f s)\n", error32, seconds_since(t0));
  std::fflush(stdout);

  for (int comp : compensated) {
    for (const std::string& name : split(models)) {
      t0 = std::chrono::steady_clock::now();
      BsrProjectorCpuOptions po;
      po.compensated = comp != 0;
      po.accumulation = model_named(name, step_products, extra_bits);
      BsrProjectorCpu half(m, po);
      std::vector<float> x16(truth.size(), 0.0f);
      cgls_cpu(half, data.data(), x16.data(), 1, options);
      const double error16 = relative_error(x16, truth);
      std::printf(
          "fp16 %-11s operands, %-8s accumulation (k-step %d, +%d bits): error %.6f (%+.3f%% "
          "vs fp32, %.1f s)\n",
          comp != 0 ? "compensated" : "plain", name.c_str(), step_products, extra_bits, error16,
          100 * (error16 - error32) / error32, seconds_since(t0));
      std::fflush(stdout);
    }
  }
  return 0;
}

// CG accuracy on the CPU twin: the benchmark's accuracy problem (720 x 512 parallel beam, Shepp-
// Logan phantom, exact line integrals, 20 CGLS iterations from zero, error to the pixelised
// phantom) solved with the fp32 CSR matrix and with the fp16 BSR twin under several operand and
// accumulation models (exact sums, or the tensor core model of
// tests/support/mma_accumulation_model.hpp with and without split accumulation chains). No GPU
// needed; it answers which part of the Tensor Core path costs accuracy (docs/performance.md, "CG
// accuracy").
//
// With --accurate-iterations it also solves with compensated operands for the start and the
// first iterations and fp16 operands after (the relaxed precision of CglsOptions::
// accurate_iterations). --slices solves that many scaled slices at once, as the GPU benchmark does.
//
//   cg_accuracy_cpu --size 320 --models exact,tc,tc-split --compensated 1
//   cg_accuracy_cpu --size 320 --slices 32 --models exact --compensated 0 --accurate-iterations 3
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/solvers/cgls.hpp"
#include "kernels/steady_clock.hpp"
#include "kernels/tensorcore/csr_projector.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"
#include "pipeline/backend/cpu/worker_pool.hpp"
#include "tests/support/bsr_projector_cpu.hpp"
#include "tests/support/ellipse_phantom_2d.hpp"

namespace {

using namespace slicestream::tensorcore;
using slicestream::seconds_since;
using slicestream::SteadyClock;

constexpr int kAll = std::numeric_limits<int>::max();  // every product accurate

// One CGLS solve from zero of `slices` scaled slices at once (scaled_slices); returns each
// slice's error to the truth.
std::vector<double> solve_errors(slicestream::solvers::ProjectionOperator& op,
                                 const std::vector<float>& data, const std::vector<float>& truth,
                                 int iterations, int slices, int accurate_iterations) {
  slicestream::solvers::CglsOptions options;
  options.max_iterations = iterations;
  options.accurate_iterations = accurate_iterations;
  slicestream::solvers::CglsWorkspace workspace;
  const std::vector<float> b = scaled_slices(data, slices);
  std::vector<float> x(truth.size() * static_cast<std::size_t>(slices), 0.0f);
  slicestream::solvers::cgls_cpu(op, b.data(), x.data(), slices, options, workspace);
  return slice_errors(x, truth, slices);
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ','))
    if (!part.empty()) parts.push_back(part);
  return parts;
}

// exact: double sums; tc: one accumulation chain per output (split accumulation off);
// tc-split: chains of kMmaChainBlocks blocks added in fp32 (split accumulation on, the default).
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
  int slices = 1;
  std::vector<int> accurate_starts;
  std::string models = "exact,tc,tc-split", shape_name = "16.16.16", ordering_name = "ray-sheared";
  std::vector<int> compensated{0, 1};
  CLI::App app{"CG accuracy of the CPU Tensor Core twin under operand and accumulation models"};
  app.add_option("--size", size, "image size (square, 1 mm pixels)");
  app.add_option("--angles", angles, "projection angles over 180 degrees");
  app.add_option("--bins", bins, "detector bins (detector as wide as the image)");
  app.add_option("--iterations", iterations, "CGLS iterations");
  app.add_option("--slices", slices,
                 "slices solved at once (scaled copies; the one furthest from fp32 is shown)");
  app.add_option("--accurate-iterations", accurate_starts,
                 "also solve with compensated operands for the start and this many iterations, "
                 "fp16 operands after (CglsOptions::accurate_iterations), per value");
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

  slicestream::WorkerPool pool(0);
  auto t0 = SteadyClock::now();
  const PhantomProblem2d problem = make_phantom_problem(pool, size, angles, bins);
  const ImageGrid2d& grid = problem.grid;
  const Geometry2d& geometry = problem.geometry;
  const std::vector<float>& truth = problem.truth;
  const std::vector<float>& data = problem.data;
  const auto a = std::make_shared<CsrMatrix>(build_dd_matrix(pool, geometry, grid));
  TensorCoreMatrixOptions tc;
  tc.shape = shape;
  tc.ordering = ordering;
  const auto m = std::make_shared<TensorCoreMatrix>(
      build_tensorcore_matrix(pool, *a, geometry, grid, tc, nullptr));
  std::printf("%dx%d, %d angles x %d bins: nnz %.1fe6, %s %s, set-up %.1f s\n", size, size, angles,
              bins, a->nnz() / 1e6, to_string(ordering), to_string(shape), seconds_since(t0));
  std::fflush(stdout);

  t0 = SteadyClock::now();
  CsrProjector single(a, pool);
  const double error32 = solve_errors(single, data, truth, iterations, 1, kAll)[0];
  auto percent = [&](double e) { return 100 * (e - error32) / error32; };
  // The line of one solve: the slice furthest from fp32 and the range over the slices.
  auto report = [&](const std::vector<double>& errors) {
    const auto [low, high] = std::minmax_element(errors.begin(), errors.end());
    const double furthest = furthest_slice_error(errors, error32);
    std::printf(
        "%d slices: furthest error %.6f (%+.3f%% vs fp32; slices %+.3f%% .. %+.3f%%, %.1f s)\n",
        slices, furthest, percent(furthest), percent(*low), percent(*high), seconds_since(t0));
    std::fflush(stdout);
  };
  std::printf("fp32 CSR: error %.6f (%.1f s)\n", error32, seconds_since(t0));
  std::fflush(stdout);

  for (int comp : compensated) {
    for (const std::string& name : split(models)) {
      t0 = SteadyClock::now();
      BsrProjectorCpuOptions po;
      po.compensated = comp != 0;
      po.accumulation = model_named(name, step_products, extra_bits);
      BsrProjectorCpu half(m, pool, po);
      std::printf("fp16 %-11s operands, %-8s accumulation (k-step %d, +%d bits), ",
                  comp != 0 ? "compensated" : "plain", name.c_str(), step_products, extra_bits);
      report(solve_errors(half, data, truth, iterations, slices, kAll));
    }
  }
  for (int accurate : accurate_starts) {
    t0 = SteadyClock::now();
    BsrProjectorCpuOptions po;
    po.compensated = true;
    BsrProjectorCpu relaxed(m, pool, po);
    std::printf("compensated start and %d iterations, fp16 operands after (exact sums), ",
                accurate);
    report(solve_errors(relaxed, data, truth, iterations, slices, accurate));
  }
  return 0;
}

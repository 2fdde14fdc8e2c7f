// Tensor Core forward projection benchmark: the paper's Tables 2-7 on this GPU (720 angles x 512
// bins parallel beam over 180 degrees, images 64^2 .. 512^2, pixel 1 mm, detector as wide as the
// image), always beside cuSPARSE CSR fp32 (ALG3, row-major operands, preprocessed, A^T stored)
// measured in the same run, and the effective bandwidth of every product against a
// device-to-device copy measured in the same run. Prints tables, writes JSON (--json).
//
// --quick: the CG accuracy table at every size (fp32 cuSPARSE against the fp16 Tensor Core
// projector with plain and compensated operands, split accumulation on and off) and the timing
// tables at 512^2 only; a few minutes on an H100 (--table-sizes picks other timed sizes).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/tensorcore/gpu_timer.hpp"
#include "bench/tensorcore/json_writer.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/device_probe.hpp"
#include "kernels/solvers/cuda/cgls_gpu.hpp"
#include "kernels/tensorcore/cuda/cusparse_projector.hpp"
#include "kernels/tensorcore/cuda/tensorcore_projector.hpp"
#include "kernels/tensorcore/ellipse_phantom_2d.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"

namespace slicestream::tensorcore::bench {
namespace {

using ::slicestream::cuda::DeviceBuffer;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Options {
  std::vector<int> sizes{64, 128, 256, 320, 384, 512};
  int angles = 720;
  int bins = 512;
  int slices = 32;
  int repetitions = 20;
  int cg_iterations = 10;
  int accuracy_iterations = 20;
  std::vector<int> table_sizes;        // sizes with the timing tables (empty: all)
  std::vector<std::string> shapes;     // fragment shapes timed (empty: all)
  std::vector<std::string> orderings;  // multi-slice orderings timed (empty: all)
  bool accuracy = true;                // the CG accuracy table
  bool cg = true;                      // CG iteration timings
  std::vector<int> gathered_ctas;      // gathered kernel CTAs per SM swept (empty: default only)
  std::string json = "tensorcore_bench.json";
};

// The accuracy table's solver configuration where no timing picked the fastest one.
constexpr WmmaShape kAccuracyShape = WmmaShape::kM16N16K16;
constexpr BlockOrdering kAccuracyOrdering = BlockOrdering::kRaySheared;

// Slice s of the multi-slice problems is the phantom problem scaled by this factor (data and
// truth alike), so that the slices differ.
float slice_scale(int s) {
  return 1.0f + 0.01f * static_cast<float>(s);
}

// The sinogram rows (rays x slices) of `slices` scaled copies of `data`.
std::vector<float> scaled_slices(const std::vector<float>& data, int slices) {
  std::vector<float> b(data.size() * static_cast<std::size_t>(slices));
  for (std::size_t r = 0; r < data.size(); ++r) {
    for (int s = 0; s < slices; ++s)
      b[r * static_cast<std::size_t>(slices) + static_cast<std::size_t>(s)] =
          data[r] * slice_scale(s);
  }
  return b;
}

// The worst relative error over the slices of one `iterations`-step CGLS solve from zero of
// `slices` slices at once (scaled_slices of the phantom data; one slice: the problem itself). The
// gathered symmetric products only run from 16 slices on.
double cg_error_slices(cuda::DeviceProjectionOperator& op, const std::vector<float>& data,
                       int slices, const std::vector<float>& truth, int iterations,
                       cudaStream_t stream) {
  DeviceBuffer<float> d_b(scaled_slices(data, slices));
  DeviceBuffer<float> d_x(truth.size() * static_cast<std::size_t>(slices));
  d_x.zero(stream);
  CglsOptions options;
  options.max_iterations = iterations;
  cuda::cgls_gpu(op, d_b.data(), d_x.data(), slices, options, stream);
  const std::vector<float> x = d_x.download();
  double worst = 0;
  std::vector<float> slice_x(truth.size()), slice_truth(truth.size());
  for (int s = 0; s < slices; ++s) {
    for (std::size_t p = 0; p < truth.size(); ++p) {
      slice_x[p] = x[p * static_cast<std::size_t>(slices) + static_cast<std::size_t>(s)];
      slice_truth[p] = truth[p] * slice_scale(s);
    }
    worst = std::max(worst, relative_error(slice_x, slice_truth));
  }
  return worst;
}

// cg_error_slices with fp16 ([0]) and compensated ([1]) operands; leaves them compensated.
std::array<double, 2> cg_errors_by_operands(cuda::TensorCoreProjector& tc,
                                            const std::vector<float>& data, int slices,
                                            const std::vector<float>& truth, int iterations,
                                            cudaStream_t stream) {
  std::array<double, 2> errors{};
  for (int compensated = 0; compensated < 2; ++compensated) {
    tc.set_compensated_operands(compensated != 0);
    errors[static_cast<std::size_t>(compensated)] =
        cg_error_slices(tc, data, slices, truth, iterations, stream);
  }
  return errors;
}

// Per image per CG iteration (ms): the difference of two solves cancels the set-up.
double cg_iteration_ms(cuda::DeviceProjectionOperator& op, const float* b, int slices,
                       int iterations, cudaStream_t stream) {
  DeviceBuffer<float> x(static_cast<std::size_t>(op.pixels()) * slices);
  auto run = [&](int k) {
    x.zero(stream);
    CglsOptions options;
    options.max_iterations = k;
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto t0 = std::chrono::steady_clock::now();
    cuda::cgls_gpu(op, b, x.data(), slices, options, stream);
    return seconds_since(t0) * 1e3;
  };
  run(2);  // warm-up (allocations, cuSPARSE plans)
  const double t_short = run(2);
  const double t_long = run(2 + iterations);
  return (t_long - t_short) / iterations / slices;
}

// Whether `name` is in `wanted` (case-insensitive); an empty list selects everything.
bool selected(const std::vector<std::string>& wanted, const std::string& name) {
  if (wanted.empty()) return true;
  auto lower = [](std::string t) {
    for (char& c : t)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return t;
  };
  return std::any_of(wanted.begin(), wanted.end(),
                     [&](const std::string& w) { return lower(w) == lower(name); });
}

struct ShapeResult {
  double bytes = 0, fwd_ms = 0, bwd_ms = 0, spmm_fwd_ms = 0, spmm_bwd_ms = 0, cg_ms = 0;
  double fwd_gbs = 0, bwd_gbs = 0;
};

ShapeResult measure_projector(cuda::TensorCoreProjector& tc, const float* image, float* sino,
                              const float* sino_in, float* image_out, const float* cg_b,
                              const Options& o, cudaStream_t stream, bool with_cg) {
  ShapeResult r;
  const BsrMatrixHalf& bsr = tc.matrix().bsr;
  r.bytes = static_cast<double>(tc.matrix_device_bytes());
  r.fwd_ms = median_ms([&] { tc.forward(image, sino, o.slices, stream); }, o.repetitions, stream);
  r.spmm_fwd_ms = median_ms([&] { tc.run_forward_spmm(stream); }, o.repetitions, stream);
  r.bwd_ms =
      median_ms([&] { tc.backward(sino_in, image_out, o.slices, stream); }, o.repetitions, stream);
  r.spmm_bwd_ms = median_ms([&] { tc.run_transposed_spmm(stream); }, o.repetitions, stream);
  // Bytes the kernels must read: the blocks plus their index (row or column order).
  const double fwd_bytes =
      static_cast<double>(bsr.block_bytes()) + 4.0 * (bsr.row_ptr.size() + bsr.col_index.size());
  const double bwd_bytes = static_cast<double>(bsr.block_bytes()) +
                           4.0 * (bsr.col_ptr.size() + 2.0 * bsr.col_blocks.size());
  r.fwd_gbs = fwd_bytes / (r.spmm_fwd_ms * 1e-3) / 1e9;
  r.bwd_gbs = bwd_bytes / (r.spmm_bwd_ms * 1e-3) / 1e9;
  if (with_cg) r.cg_ms = cg_iteration_ms(tc, cg_b, o.slices, o.cg_iterations, stream);
  return r;
}

Json to_json(const ShapeResult& r) {
  Json j;
  j.num("matrix_bytes", r.bytes).num("forward_ms", r.fwd_ms).num("backward_ms", r.bwd_ms);
  j.num("spmm_forward_ms", r.spmm_fwd_ms).num("spmm_backward_ms", r.spmm_bwd_ms);
  j.num("effective_forward_gbs", r.fwd_gbs).num("effective_backward_gbs", r.bwd_gbs);
  j.num("cg_iteration_ms_per_image", r.cg_ms);
  return j;
}

}  // namespace
}  // namespace slicestream::tensorcore::bench

int main(int argc, char** argv) {
  using namespace slicestream::tensorcore;
  using namespace slicestream::tensorcore::bench;
  Options o;
  CLI::App app{"Tensor Core projector benchmark (paper Tables 2-7 beside cuSPARSE)"};
  app.add_option("--sizes", o.sizes, "image sizes (square)");
  app.add_option("--angles", o.angles, "projection angles over 180 degrees");
  app.add_option("--bins", o.bins, "detector bins");
  app.add_option("--slices", o.slices, "slices per batch (multi-slice tables)");
  app.add_option("--repetitions", o.repetitions, "timed repetitions (median)");
  app.add_option("--cg-iterations", o.cg_iterations, "CG iterations timed");
  app.add_option("--json", o.json, "JSON output");
  app.add_option("--table-sizes", o.table_sizes, "sizes with the timing tables (default: all)");
  app.add_option("--shapes", o.shapes, "fragment shapes timed, e.g. 16.16.16 (default: all)");
  app.add_option("--orderings", o.orderings,
                 "multi-slice orderings timed: pseudo-morton, ray-sheared (default: both)");
  app.add_flag("!--no-accuracy", o.accuracy, "skip the CG accuracy table");
  app.add_flag("!--no-cg", o.cg, "skip the CG iteration timings (e.g. under a profiler)");
  app.add_option("--gathered-ctas", o.gathered_ctas,
                 "also time the gathered SpMMs with these persistent CTAs per SM (tuning)");
  bool quick = false;
  app.add_flag("--quick", quick, "accuracy table at every size, timing tables at 512^2 only");
  CLI11_PARSE(app, argc, argv);
  if (quick && o.table_sizes.empty()) o.table_sizes = {512};

  const bool gpu = ::slicestream::cuda::device_unavailable_reason().empty();
  cudaStream_t stream = nullptr;
  Json root;
  double copy_gbs = 0;
  int multiprocessors = 0;
  if (gpu) {
    cudaDeviceProp prop{};
    SLICESTREAM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    multiprocessors = prop.multiProcessorCount;
    SLICESTREAM_CUDA_CHECK(cudaStreamCreate(&stream));
    copy_gbs = copy_bandwidth_gbs(std::size_t{1} << 30, 20, stream);
    root.str("device", prop.name).num("copy_bandwidth_gbs", copy_gbs);
    std::printf("device %s, %d SMs; device-to-device copy %.0f GB/s (read + write)\n", prop.name,
                prop.multiProcessorCount, copy_gbs);
  } else {
    std::printf("no CUDA device: matrix tables only\n");
  }
  const BlockOrdering orderings[] = {BlockOrdering::kPseudoMorton, BlockOrdering::kRaySheared};
  std::vector<Json> records;
  std::ostringstream table;

  for (int n : o.sizes) {
    const bool tables =
        o.table_sizes.empty() ||
        std::find(o.table_sizes.begin(), o.table_sizes.end(), n) != o.table_sizes.end();
    Json rec;
    const auto t0 = std::chrono::steady_clock::now();
    // The accuracy problem's grid and geometry are the tables' too (paper set-up).
    const PhantomProblem2d problem = make_phantom_problem(n, o.angles, o.bins);
    const ImageGrid2d& grid = problem.grid;
    const Geometry2d& geometry = problem.geometry;
    const auto t_csr = std::chrono::steady_clock::now();
    const CsrMatrix a = build_dd_matrix(geometry, grid);
    const double csr_s = seconds_since(t_csr);
    const double elements = static_cast<double>(a.rows) * static_cast<double>(a.cols);
    rec.num("size", n).num("rays", static_cast<double>(a.rows)).num("matrix_elements", elements);
    rec.num("nnz", static_cast<double>(a.nnz()))
        .num("sparsity_percent", 100.0 * (1 - a.nnz() / elements));
    rec.num("csr_fp32_bytes", static_cast<double>(a.bytes_fp32())).num("csr_build_s", csr_s);
    std::printf(
        "\n== %dx%d: %.1fe9 elements, nnz %.1fe6 (sparsity %.2f%%), CSR fp32 %.2f GB, built in "
        "%.1f s\n",
        n, n, elements / 1e9, a.nnz() / 1e6, 100.0 * (1 - a.nnz() / elements), a.bytes_fp32() / 1e9,
        csr_s);

    // Table 3: non-empty blocks before (natural order) and after each mapping.
    Json blocks;
    for (WmmaShape shape : kAllWmmaShapes) {
      if (!tables) break;
      const int m = dims(shape).m;
      // The paper's block count (Table 3): the plain grid of the unmapped matrix; ray-sheared
      // layouts pad more columns, so its share is quoted against this count too.
      const double grid_blocks =
          std::ceil(static_cast<double>(a.rows) / m) * std::ceil(static_cast<double>(a.cols) / 16);
      Json js;
      for (BlockOrdering ordering :
           {BlockOrdering::kNatural, BlockOrdering::kPseudoMorton, BlockOrdering::kRaySheared}) {
        const BlockCount count = count_blocks(a, make_row_mapping(geometry, ordering, m),
                                              make_col_layouts(geometry, grid, ordering, m), m, 16);
        const double fill = 100.0 * a.nnz() / (static_cast<double>(count.nonempty) * m * 16);
        js.obj(to_string(ordering),
               Json()
                   .num("nonempty", static_cast<double>(count.nonempty))
                   .num("possible", grid_blocks)
                   .num("nonempty_percent", 100.0 * count.nonempty / grid_blocks)
                   .num("fill_percent", fill));
        std::printf(
            "  blocks %-8s %-13s non-empty %6.2f%% of %.1fe6, fill %5.1f%%, fp16 blocks %.2f GB\n",
            to_string(shape), to_string(ordering), 100.0 * count.nonempty / grid_blocks,
            grid_blocks / 1e6, fill, count.nonempty * m * 16 * 2.0 / 1e9);
      }
      blocks.obj(to_string(shape), js);
    }
    if (tables) rec.obj("blocks", blocks);
    if (!gpu) {
      records.push_back(rec);
      continue;
    }
    std::fflush(stdout);

    // Inputs: fresh random images and sinograms; CG data: the analytic phantom per slice, scaled.
    const std::size_t image_values = static_cast<std::size_t>(grid.pixels()) * o.slices;
    const std::size_t sino_values = static_cast<std::size_t>(geometry.rays()) * o.slices;
    std::vector<float> host_image(image_values), host_sino(sino_values);
    {
      std::mt19937 rng(static_cast<unsigned>(n));
      std::uniform_real_distribution<float> dist(0.0f, 1.0f);
      for (float& v : host_image)
        v = dist(rng);
      for (float& v : host_sino)
        v = dist(rng);
    }
    const std::vector<float>& truth = problem.truth;
    const std::vector<float>& data = problem.data;
    DeviceBuffer<float> d_image(host_image), d_sino_in(host_sino),
        d_cg_b(scaled_slices(data, o.slices));
    DeviceBuffer<float> d_sino(sino_values), d_image_out(image_values);

    // cuSPARSE baseline, same run.
    Json cs;
    double cs_fwd = 0, cs_bwd = 0, cs_spmv = 0, cs_cg = 0;
    double error32 = 0;
    {
      cuda::CusparseProjector csr(a);
      cs_fwd = median_ms([&] { csr.forward(d_image.data(), d_sino.data(), o.slices, stream); },
                         o.repetitions, stream);
      cs_bwd =
          median_ms([&] { csr.backward(d_sino_in.data(), d_image_out.data(), o.slices, stream); },
                    o.repetitions, stream);
      cs_spmv = median_ms([&] { csr.forward(d_image.data(), d_sino.data(), 1, stream); },
                          o.repetitions, stream);
      const double cs_spmv_bwd =
          median_ms([&] { csr.backward(d_sino_in.data(), d_image_out.data(), 1, stream); },
                    o.repetitions, stream);
      if (o.cg) cs_cg = cg_iteration_ms(csr, d_cg_b.data(), o.slices, o.cg_iterations, stream);
      if (o.accuracy) error32 = cg_error_slices(csr, data, 1, truth, o.accuracy_iterations, stream);
      const double bytes = static_cast<double>(csr.matrix_device_bytes());
      cs.str("configuration", csr.configuration()).num("matrix_bytes", bytes);
      cs.num("spmm_forward_ms", cs_fwd)
          .num("spmm_backward_ms", cs_bwd)
          .num("spmv_forward_ms", cs_spmv);
      cs.num("spmv_backward_ms", cs_spmv_bwd)
          .num("fp_bp_per_image_ms", (cs_fwd + cs_bwd) / o.slices);
      cs.num("cg_iteration_ms_per_image", cs_cg)
          .num("effective_spmv_gbs", bytes / (cs_spmv * 1e-3) / 1e9);
      cs.num("cg20_relative_error", error32);
      std::printf(
          "  cuSPARSE: A.X %.3f ms, A^T.Y %.3f ms (%d columns) -> FP+BP %.4f ms/image; SpMV %.3f "
          "ms (%.0f GB/s); CG %.4f ms/image/iter\n"
          "            %s\n",
          cs_fwd, cs_bwd, o.slices, (cs_fwd + cs_bwd) / o.slices, cs_spmv,
          bytes / (cs_spmv * 1e-3) / 1e9, cs_cg, csr.configuration().c_str());
    }
    rec.obj("cusparse", cs);

    // Tensor Core, multi-slice, every ordering and shape.
    Json tcj;
    double best_fpbp = 1e30;
    std::string best_name;
    std::shared_ptr<TensorCoreMatrix> best_matrix;
    for (BlockOrdering ordering : orderings) {
      if (!tables) break;
      Json oj;
      if (!selected(o.orderings, to_string(ordering))) continue;
      for (WmmaShape shape : kAllWmmaShapes) {
        if (!selected(o.shapes, to_string(shape))) continue;
        TensorCoreMatrixOptions options;
        options.shape = shape;
        options.ordering = ordering;
        const auto tb = std::chrono::steady_clock::now();
        auto m = std::make_shared<TensorCoreMatrix>(
            build_tensorcore_matrix(a, geometry, grid, options, nullptr));
        const double build_s = seconds_since(tb);
        cuda::TensorCoreProjector tc(m);
        const ShapeResult r = measure_projector(tc, d_image.data(), d_sino.data(), d_sino_in.data(),
                                                d_image_out.data(), d_cg_b.data(), o, stream, o.cg);
        const double fpbp = (r.fwd_ms + r.bwd_ms) / o.slices;
        Json j = to_json(r);
        j.num("build_s", build_s)
            .num("fp_bp_per_image_ms", fpbp)
            .num("speedup_vs_cusparse_fp_bp", (cs_fwd + cs_bwd) / o.slices / fpbp);
        j.num("speedup_vs_cusparse_cg", cs_cg / r.cg_ms);
        oj.obj(to_string(shape), j);
        std::printf(
            "  TC %-13s %-8s %.2f GB: FP %.3f (SpMM %.3f, %4.0f GB/s) BP %.3f (SpMM %.3f, %4.0f "
            "GB/s) ms -> FP+BP %.4f ms/image (%.2fx cuSPARSE); CG %.4f ms/image/iter (%.2fx)\n",
            to_string(ordering), to_string(shape), r.bytes / 1e9, r.fwd_ms, r.spmm_fwd_ms,
            r.fwd_gbs, r.bwd_ms, r.spmm_bwd_ms, r.bwd_gbs, fpbp,
            (cs_fwd + cs_bwd) / o.slices / fpbp, r.cg_ms, cs_cg / r.cg_ms);
        if (fpbp < best_fpbp) {
          best_fpbp = fpbp;
          best_name = std::string(to_string(ordering)) + " " + to_string(shape);
          best_matrix = m;
        }
      }
      tcj.obj(to_string(ordering), oj);
    }
    if (tables) rec.obj("tensorcore", tcj);

    // CG accuracy with the fastest fp16 configuration (a fixed one without the timing tables)
    // against fp32 (cuSPARSE), 20 iterations, with fp16 and with compensated (hi + lo fp16)
    // operands, split accumulation on (the default) and off; and the compensated CG's time.
    if (o.accuracy) {
      if (best_matrix == nullptr) {
        TensorCoreMatrixOptions options;
        options.shape = kAccuracyShape;
        options.ordering = kAccuracyOrdering;
        best_matrix = std::make_shared<TensorCoreMatrix>(
            build_tensorcore_matrix(a, geometry, grid, options, nullptr));
        best_name = std::string(to_string(kAccuracyOrdering)) + " " + to_string(kAccuracyShape);
      }
      cuda::TensorCoreProjector tc(best_matrix);
      double errors[2][2];  // [compensated][split]
      for (int compensated = 0; compensated < 2; ++compensated) {
        for (int split = 0; split < 2; ++split) {
          tc.set_compensated_operands(compensated != 0);
          tc.set_split_accumulation(split != 0);
          errors[compensated][split] =
              cg_error_slices(tc, data, 1, truth, o.accuracy_iterations, stream);
        }
      }
      // The same solver over all slices at once (the multi-slice kernels).
      const std::array<double, 2> slices_errors =
          cg_errors_by_operands(tc, data, o.slices, truth, o.accuracy_iterations, stream);
      tc.set_split_accumulation(true);
      const double cg_c = cg_iteration_ms(tc, d_cg_b.data(), o.slices, o.cg_iterations, stream);
      auto difference = [&](double e) { return (e - error32) / error32; };
      std::printf(
          "  CG %d iterations, %d slices at once, %s, worst slice: fp16 operands %.5f (%+.2f%%), "
          "compensated %.5f (%+.3f%%)\n",
          o.accuracy_iterations, o.slices, best_name.c_str(), slices_errors[0],
          100 * difference(slices_errors[0]), slices_errors[1], 100 * difference(slices_errors[1]));
      rec.obj("cg_accuracy",
              Json()
                  .str("fp16_configuration", best_name)
                  .num("iterations", o.accuracy_iterations)
                  .num("fp32_relative_error", error32)
                  .num("fp16_relative_error", errors[0][1])
                  .num("relative_difference", difference(errors[0][1]))
                  .num("compensated_relative_error", errors[1][1])
                  .num("compensated_relative_difference", difference(errors[1][1]))
                  .num("unsplit_fp16_relative_error", errors[0][0])
                  .num("unsplit_relative_difference", difference(errors[0][0]))
                  .num("unsplit_compensated_relative_error", errors[1][0])
                  .num("unsplit_compensated_relative_difference", difference(errors[1][0]))
                  .num("all_slices_fp16_worst_relative_error", slices_errors[0])
                  .num("all_slices_compensated_worst_relative_error", slices_errors[1])
                  .num("compensated_cg_iteration_ms_per_image", cg_c)
                  .num("cusparse_cg_iteration_ms_per_image", cs_cg)
                  .num("compensated_speedup_vs_cusparse_cg", cs_cg / cg_c));
      std::printf(
          "  CG %d iterations on the phantom, fp16 %s: fp32 error %.5f; split accumulation: "
          "fp16 operands %.5f (%+.2f%%), compensated %.5f (%+.3f%%); one chain per output (the "
          "kernels before the split): fp16 %.5f (%+.2f%%), compensated %.5f (%+.3f%%); "
          "compensated CG %.4f ms/image/iter (%.2fx cuSPARSE)\n",
          o.accuracy_iterations, best_name.c_str(), error32, errors[0][1],
          100 * difference(errors[0][1]), errors[1][1], 100 * difference(errors[1][1]),
          errors[0][0], 100 * difference(errors[0][0]), errors[1][0],
          100 * difference(errors[1][0]), cg_c, cs_cg / cg_c);
    }

    // 8-fold symmetry: single-image FP (Tables 6/7) and the 32-slice CG with 8 x 32 columns.
    Json sj;
    if (tables) {
      const auto plan = std::make_shared<const SymmetryPlan>(make_symmetry_plan(geometry, grid));
      DdMatrixOptions dd;
      dd.column_factors = &plan->column_factor;
      const CsrMatrix a_oct = build_dd_matrix(geometry, grid, dd);
      for (WmmaShape shape : kAllWmmaShapes) {
        if (!selected(o.shapes, to_string(shape))) continue;
        TensorCoreMatrixOptions options;
        options.shape = shape;
        options.symmetric = true;
        auto m = std::make_shared<TensorCoreMatrix>(
            build_tensorcore_matrix(a_oct, geometry, grid, options, plan));
        cuda::TensorCoreProjector tc(m);
        tc.set_gathered_symmetry(false);  // the paper's column form first
        const double fp1 = median_ms([&] { tc.forward(d_image.data(), d_sino.data(), 1, stream); },
                                     o.repetitions, stream);
        const double fp1_spmm =
            median_ms([&] { tc.run_forward_spmm(stream); }, o.repetitions, stream);
        const ShapeResult r = measure_projector(tc, d_image.data(), d_sino.data(), d_sino_in.data(),
                                                d_image_out.data(), d_cg_b.data(), o, stream, o.cg);
        const double fpbp = (r.fwd_ms + r.bwd_ms) / o.slices;
        Json j = to_json(r);
        j.num("single_image_forward_ms", fp1).num("single_image_spmm_ms", fp1_spmm);
        j.num("speedup_vs_cusparse_spmv", cs_spmv / fp1).num("fp_bp_per_image_ms", fpbp);
        j.num("speedup_vs_cusparse_fp_bp", (cs_fwd + cs_bwd) / o.slices / fpbp)
            .num("speedup_vs_cusparse_cg", cs_cg / r.cg_ms);
        std::printf(
            "  8-sym %-8s %.3f GB: 1-image FP %.4f ms (SpMM %.4f) = %.2fx SpMV; %d slices FP %.3f "
            "BP %.3f ms -> %.4f ms/image (%.2fx), CG %.4f ms/image/iter (%.2fx)\n",
            to_string(shape), r.bytes / 1e9, fp1, fp1_spmm, cs_spmv / fp1, o.slices, r.fwd_ms,
            r.bwd_ms, fpbp, (cs_fwd + cs_bwd) / o.slices / fpbp, r.cg_ms, cs_cg / r.cg_ms);
        std::fflush(stdout);
        // Gathered products (one column per slice, symmetric_gather.hpp).
        tc.set_gathered_symmetry(true);
        if (tc.uses_gathered_products(o.slices)) {
          const ShapeResult g =
              measure_projector(tc, d_image.data(), d_sino.data(), d_sino_in.data(),
                                d_image_out.data(), d_cg_b.data(), o, stream, o.cg);
          const double g_fpbp = (g.fwd_ms + g.bwd_ms) / o.slices;
          Json gj = to_json(g);
          gj.num("fp_bp_per_image_ms", g_fpbp)
              .num("speedup_vs_cusparse_fp_bp", (cs_fwd + cs_bwd) / o.slices / g_fpbp);
          if (o.cg) gj.num("speedup_vs_cusparse_cg", cs_cg / g.cg_ms);
          // Tuning sweep: the SpMMs alone per CTA count, on the benchmark's own operands (the
          // last products were CG's, whose buffers are gone).
          if (!o.gathered_ctas.empty()) {
            tc.forward(d_image.data(), d_sino.data(), o.slices, stream);
            tc.backward(d_sino_in.data(), d_image_out.data(), o.slices, stream);
          }
          for (int per_sm : o.gathered_ctas) {
            tc.set_gathered_ctas(per_sm * multiprocessors);
            const double f = median_ms([&] { tc.run_forward_spmm(stream); }, o.repetitions, stream);
            const double b =
                median_ms([&] { tc.run_transposed_spmm(stream); }, o.repetitions, stream);
            gj.num("spmm_fwd_ms_ctas_per_sm_" + std::to_string(per_sm), f)
                .num("spmm_bwd_ms_ctas_per_sm_" + std::to_string(per_sm), b);
            std::printf("    gathered SpMMs with %2d CTAs per SM: FP %.3f BP %.3f ms\n", per_sm, f,
                        b);
          }
          tc.set_gathered_ctas(0);
          // CG accuracy through the gathered products: all slices at once, fp16 and
          // compensated operands, against the fp32 (cuSPARSE) error of the accuracy table.
          if (o.accuracy && error32 > 0) {
            const std::array<double, 2> gathered_errors =
                cg_errors_by_operands(tc, data, o.slices, truth, o.accuracy_iterations, stream);
            // The compensated solver (the one within 1 %) runs 64 product columns: its time.
            const double cg_c =
                o.cg ? cg_iteration_ms(tc, d_cg_b.data(), o.slices, o.cg_iterations, stream) : 0;
            tc.set_compensated_operands(false);
            gj.num("cg20_worst_slice_relative_error", gathered_errors[0])
                .num("cg20_compensated_worst_slice_relative_error", gathered_errors[1])
                .num("fp32_relative_error", error32);
            if (o.cg) {
              gj.num("compensated_cg_ms_per_image", cg_c)
                  .num("compensated_speedup_vs_cusparse_cg", cs_cg / cg_c);
            }
            std::printf(
                "    gathered CG %d iterations, %d slices at once, worst slice: fp16 operands %.5f "
                "(%+.2f%% vs fp32 %.5f), compensated %.5f (%+.3f%%); compensated CG %.4f "
                "ms/image/iter (%.2fx cuSPARSE)\n",
                o.accuracy_iterations, o.slices, gathered_errors[0],
                100 * (gathered_errors[0] - error32) / error32, error32, gathered_errors[1],
                100 * (gathered_errors[1] - error32) / error32, cg_c, o.cg ? cs_cg / cg_c : 0.0);
          }
          j.obj("gathered", gj);
          std::printf(
              "  8-sym gathered %-8s: %d slices FP %.3f (SpMM %.3f) BP %.3f (SpMM %.3f) ms -> "
              "%.4f ms/image (%.2fx cuSPARSE), CG %.4f ms/image/iter (%.2fx)\n",
              to_string(shape), o.slices, g.fwd_ms, g.spmm_fwd_ms, g.bwd_ms, g.spmm_bwd_ms, g_fpbp,
              (cs_fwd + cs_bwd) / o.slices / g_fpbp, g.cg_ms, o.cg ? cs_cg / g.cg_ms : 0.0);
          std::fflush(stdout);
        }
        sj.obj(to_string(shape), j);
      }
    }
    if (tables) rec.obj("symmetric", sj);
    rec.num("total_s", seconds_since(t0));
    std::printf("  %dx%d done in %.1f s\n", n, n, seconds_since(t0));
    records.push_back(rec);
    Json partial = root;
    partial.raw("sizes", array_of(records));
    std::ofstream(o.json) << partial.text() << "\n";  // after every size: a cut-off run keeps data
    std::fflush(stdout);
  }
  root.raw("sizes", array_of(records));
  std::ofstream(o.json) << root.text() << "\n";
  std::printf("\nwrote %s\n", o.json.c_str());
  if (stream != nullptr) cudaStreamDestroy(stream);
  return 0;
}

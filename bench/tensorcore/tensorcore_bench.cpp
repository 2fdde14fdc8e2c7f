// Tensor Core forward projection benchmark: the paper's Tables 2-7 on this GPU (720 angles x 512
// bins parallel beam over 180 degrees, images 64^2 .. 512^2, pixel 1 mm, detector as wide as the
// image), always beside cuSPARSE CSR fp32 (ALG3, row-major operands, preprocessed, A^T stored)
// and the effective bandwidth of every product against a device-to-device copy, both in the same
// run. Prints tables, writes JSON (--json).
//
// --quick: the CG accuracy table at every size (fp32 cuSPARSE against the fp16 Tensor Core
// projector with plain and compensated operands, split accumulation on and off) and the timing
// tables at 512^2 only (--table-sizes picks other timed sizes).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <random>
#include <vector>

#include "bench/common/gpu_timer.hpp"
#include "bench/tensorcore/cg_measurements.hpp"
#include "bench/tensorcore/tensorcore_bench_run.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_probe.hpp"
#include "kernels/steady_clock.hpp"
#include "pipeline/backend/cpu/worker_pool.hpp"

namespace slicestream::tensorcore::bench {

using ::slicestream::seconds_since;
using ::slicestream::SteadyClock;

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

std::vector<WmmaShape> selected_shapes(const Options& o) {
  std::vector<WmmaShape> shapes;
  for (WmmaShape shape : kAllWmmaShapes) {
    if (selected(o.shapes, to_string(shape))) shapes.push_back(shape);
  }
  return shapes;
}

SizeRun::SizeRun(const Options& options, int size, Executor& executor, cudaStream_t stream_)
    : o(options),
      n(size),
      pool(executor),
      stream(stream_),
      problem(make_phantom_problem(executor, size, options.angles, options.bins)) {
  const auto t_csr = SteadyClock::now();
  a = build_dd_matrix(pool, problem.geometry, problem.grid);
  csr_build_s = seconds_since(t_csr);
}

// Fresh random images and sinograms; CG data: the analytic phantom per slice, scaled.
void SizeRun::upload_inputs() {
  const std::size_t image_values = static_cast<std::size_t>(grid().pixels()) * o.slices;
  const std::size_t sino_values = static_cast<std::size_t>(geometry().rays()) * o.slices;
  std::vector<float> host_image(image_values), host_sino(sino_values);
  std::mt19937 rng(static_cast<unsigned>(n));
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  for (float& v : host_image)
    v = dist(rng);
  for (float& v : host_sino)
    v = dist(rng);
  image = DeviceBuffer<float>(host_image);
  sino_in = DeviceBuffer<float>(host_sino);
  cg_b = DeviceBuffer<float>(scaled_slices(problem.data, o.slices));
  sino = DeviceBuffer<float>(sino_values);
  image_out = DeviceBuffer<float>(image_values);
}

namespace {

// The size's summary line and record (matrix sizes, CSR build time).
Json size_record(const SizeRun& run) {
  const CsrMatrix& a = run.a;
  const double elements = static_cast<double>(a.rows) * static_cast<double>(a.cols);
  Json rec;
  rec.num("size", run.n).num("rays", static_cast<double>(a.rows)).num("matrix_elements", elements);
  rec.num("nnz", static_cast<double>(a.nnz()))
      .num("sparsity_percent", 100.0 * (1 - a.nnz() / elements));
  rec.num("csr_fp32_bytes", static_cast<double>(a.bytes_fp32()))
      .num("csr_build_s", run.csr_build_s);
  std::printf(
      "\n== %dx%d: %.1fe9 elements, nnz %.1fe6 (sparsity %.2f%%), CSR fp32 %.2f GB, built in "
      "%.1f s\n",
      run.n, run.n, elements / 1e9, a.nnz() / 1e6, 100.0 * (1 - a.nnz() / elements),
      a.bytes_fp32() / 1e9, run.csr_build_s);
  return rec;
}

// One image size: every table (timing tables only at the selected sizes).
Json run_size(const Options& o, int n, Executor& pool, cudaStream_t stream, bool gpu,
              int multiprocessors) {
  const bool tables = o.table_sizes.empty() || std::find(o.table_sizes.begin(), o.table_sizes.end(),
                                                         n) != o.table_sizes.end();
  const auto t0 = SteadyClock::now();
  SizeRun run(o, n, pool, stream);
  Json rec = size_record(run);
  if (tables) rec.obj("blocks", block_count_table(run));
  if (!gpu) return rec;
  std::fflush(stdout);
  run.upload_inputs();
  CusparseBaseline baseline;
  rec.obj("cusparse", cusparse_table(run, &baseline));
  BestProjector best;
  if (tables) rec.obj("tensorcore", plain_projector_tables(run, baseline, &best));
  if (o.accuracy) rec.obj("cg_accuracy", cg_accuracy_table(run, baseline, best));
  if (tables) rec.obj("symmetric", symmetric_tables(run, baseline, multiprocessors));
  if (!tables && o.accuracy) rec.obj("gathered_accuracy", gathered_accuracy(run, baseline));
  rec.num("total_s", seconds_since(t0));
  std::printf("  %dx%d done in %.1f s\n", n, n, seconds_since(t0));
  return rec;
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
  app.add_option("--accurate-iterations", o.accurate_iterations,
                 "accurate-start CGs: compensated iterations before fp16 ones, one CG each");
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
  int multiprocessors = 0;
  if (gpu) {
    cudaDeviceProp prop{};
    SLICESTREAM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    multiprocessors = prop.multiProcessorCount;
    SLICESTREAM_CUDA_CHECK(cudaStreamCreate(&stream));
    const double copy_gbs =
        ::slicestream::bench::copy_bandwidth_gbs(std::size_t{1} << 30, 20, stream);
    root.str("device", prop.name).num("copy_bandwidth_gbs", copy_gbs);
    std::printf("device %s, %d SMs; device-to-device copy %.0f GB/s (read + write)\n", prop.name,
                prop.multiProcessorCount, copy_gbs);
  } else {
    std::printf("no CUDA device: matrix tables only\n");
  }
  slicestream::WorkerPool pool(0);
  std::vector<Json> records;
  for (int n : o.sizes) {
    records.push_back(run_size(o, n, pool, stream, gpu, multiprocessors));
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

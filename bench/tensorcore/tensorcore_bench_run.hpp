// What the sections of the Tensor Core benchmark (tensorcore_bench.cpp) share: the command-line
// options, one image size's problem with its device inputs, and the cuSPARSE baseline every
// speed-up is quoted against. Each section prints its table and returns its JSON.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "bench/tensorcore/json_writer.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/executor.hpp"
#include "kernels/tensorcore/sparse_matrix.hpp"
#include "kernels/tensorcore/tensorcore_matrix.hpp"
#include "tests/support/ellipse_phantom_2d.hpp"

namespace slicestream::tensorcore::bench {

using ::slicestream::cuda::DeviceBuffer;

struct Options {
  std::vector<int> sizes{64, 128, 256, 320, 384, 512};
  int angles = 720;
  int bins = 512;
  int slices = 32;
  int repetitions = 20;
  int cg_iterations = 10;
  int accuracy_iterations = 20;
  std::vector<int> accurate_iterations{2, 3, 4, 6};  // compensated iterations of accurate starts
  std::vector<int> table_sizes;                      // sizes with the timing tables (empty: all)
  std::vector<std::string> shapes;                   // fragment shapes timed (empty: all)
  std::vector<std::string> orderings;                // multi-slice orderings timed (empty: all)
  bool accuracy = true;                              // the CG accuracy table
  bool cg = true;                                    // CG iteration timings
  std::vector<int> gathered_ctas;  // gathered kernel CTAs per SM swept (empty: default only)
  std::string json = "tensorcore_bench.json";
};

// Whether `name` is in `wanted` (case-insensitive); an empty list selects everything.
bool selected(const std::vector<std::string>& wanted, const std::string& name);
// The fragment shapes --shapes selects, in kAllWmmaShapes order.
std::vector<WmmaShape> selected_shapes(const Options& o);

// One image size: the accuracy problem (whose grid and geometry the tables share, the paper's
// set-up), its matrix, fresh random inputs and the scaled phantom data of the CG timings.
struct SizeRun {
  SizeRun(const Options& options, int size, Executor& executor, cudaStream_t stream);

  const Options& o;
  int n;
  Executor& pool;
  cudaStream_t stream;
  PhantomProblem2d problem;
  CsrMatrix a;
  double csr_build_s = 0;
  DeviceBuffer<float> image, sino_in, cg_b;  // inputs: images, sinograms, CG data (all slices)
  DeviceBuffer<float> sino, image_out;       // outputs

  const ImageGrid2d& grid() const { return problem.grid; }
  const Geometry2d& geometry() const { return problem.geometry; }
  // Uploads the inputs (the GPU sections need them; the block table does not).
  void upload_inputs();
};

// The fp32 cuSPARSE numbers the Tensor Core speed-ups are quoted against (same run).
struct CusparseBaseline {
  double forward_ms = 0, backward_ms = 0, spmv_ms = 0, cg_ms = 0;
  double cg_solve_ms = 0;  // a whole solve of accuracy_iterations per iteration and image
  double error32 = 0;  // 20-iteration CG error of the fp32 solver (0 without the accuracy table)
  std::vector<double> slice_errors32;  // the fp32 solver's error per slice, all slices at once
  double fp_bp_per_image(int slices) const { return (forward_ms + backward_ms) / slices; }
};

// The fastest plain fp16 configuration of the timing tables (or the accuracy configuration).
struct BestProjector {
  std::shared_ptr<const TensorCoreMatrix> matrix;
  std::string name;
  double fp_bp_per_image_ms = 1e30;
};

// The sections, in the order the benchmark runs them.
Json block_count_table(const SizeRun& run);
Json cusparse_table(SizeRun& run, CusparseBaseline* baseline);
Json plain_projector_tables(SizeRun& run, const CusparseBaseline& baseline, BestProjector* best);
Json cg_accuracy_table(SizeRun& run, const CusparseBaseline& baseline, BestProjector best);
Json symmetric_tables(SizeRun& run, const CusparseBaseline& baseline, int multiprocessors);
// The gathered symmetric products' CG accuracy alone (16.16.16), for sizes without the tables.
Json gathered_accuracy(SizeRun& run, const CusparseBaseline& baseline);

}  // namespace slicestream::tensorcore::bench

#include "kernels/cpu/ramp_filter_cpu.hpp"

#include <fftw3.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace slicestream::cpu {
namespace {

// Upper bound on FFTW_MEASURE's search per plan. An unbounded search takes seconds for widths
// like 1200 on a busy machine; most of its gain over FFTW_ESTIMATE comes early
// (docs/performance.md, "CPU ramp filter planning").
constexpr double kPlanningSeconds = 0.1;

// FFTW's planner is not thread-safe; backends may build filters while other threads plan (a new
// scan, a filter change). FFTW serialises its own planner once asked to (fftw3f_threads).
void configure_fftw_planner() {
  static std::once_flag once;
  std::call_once(once, [] {
    fftwf_make_planner_thread_safe();
    fftwf_set_timelimit(kPlanningSeconds);
  });
}

struct FftwFree {
  void operator()(float* p) const { fftwf_free(p); }
};
using FftwBuffer = std::unique_ptr<float, FftwFree>;

FftwBuffer allocate_floats(std::size_t count) {
  FftwBuffer buffer(fftwf_alloc_real(count));
  if (!buffer) throw std::bad_alloc();
  return buffer;
}

}  // namespace

struct RampFilter::Impl {
  DetectorShape shape;
  int padded_width = 0;
  std::size_t buffer_floats = 0;  // in-place R2C layout: 2 * (padded_width / 2 + 1)
  std::vector<float> gains;       // padded_width / 2 + 1 real gains, 1/P included
  fftwf_plan forward = nullptr;
  fftwf_plan inverse = nullptr;
  std::vector<FftwBuffer> worker_buffers;

  ~Impl() {
    // Plan destruction goes through the planner too (serialised by FFTW once made thread-safe).
    if (forward != nullptr) fftwf_destroy_plan(forward);
    if (inverse != nullptr) fftwf_destroy_plan(inverse);
  }
};

RampFilter::RampFilter(DetectorShape shape, const FilterConfig& config, int workers)
    : impl_(std::make_unique<Impl>()) {
  if (shape.rows <= 0 || shape.cols <= 0) {
    throw std::invalid_argument("ramp filter needs a detector with rows and columns");
  }
  if (workers <= 0) throw std::invalid_argument("ramp filter needs at least one worker");
  configure_fftw_planner();
  Impl& impl = *impl_;
  impl.shape = shape;
  impl.padded_width = padded_filter_width(shape.cols);
  impl.gains = ramp_filter_response(impl.padded_width, config);
  impl.buffer_floats = 2 * (static_cast<std::size_t>(impl.padded_width) / 2 + 1);

  // Plans are made once on a scratch buffer of the workers' alignment (fftwf_alloc) and applied
  // to every worker's buffer through the new-array execute functions. FFTW_MEASURE searches only
  // the first time a width is seen in this process (bounded by kPlanningSeconds); later plans for
  // it come from FFTW's wisdom at once.
  FftwBuffer scratch = allocate_floats(impl.buffer_floats);
  float* real = scratch.get();
  auto* spectrum = reinterpret_cast<fftwf_complex*>(real);
  impl.forward = fftwf_plan_dft_r2c_1d(impl.padded_width, real, spectrum, FFTW_MEASURE);
  impl.inverse = fftwf_plan_dft_c2r_1d(impl.padded_width, spectrum, real, FFTW_MEASURE);
  if (impl.forward == nullptr || impl.inverse == nullptr) {
    throw std::runtime_error("FFTW could not plan a transform of width " +
                             std::to_string(impl.padded_width));
  }
  impl.worker_buffers.reserve(static_cast<std::size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    impl.worker_buffers.push_back(allocate_floats(impl.buffer_floats));
  }
}

RampFilter::~RampFilter() = default;

void RampFilter::filter_rows(float* projection, int row_begin, int row_end, int worker) const {
  const Impl& impl = *impl_;
  if (worker < 0 || static_cast<std::size_t>(worker) >= impl.worker_buffers.size()) {
    throw std::invalid_argument("ramp filter worker " + std::to_string(worker) + " out of range");
  }
  if (row_begin < 0 || row_end > impl.shape.rows || row_begin > row_end) {
    throw std::invalid_argument("ramp filter row range outside the projection");
  }
  const std::size_t cols = static_cast<std::size_t>(impl.shape.cols);
  const std::size_t bins = impl.gains.size();
  float* buffer = impl.worker_buffers[static_cast<std::size_t>(worker)].get();
  auto* spectrum = reinterpret_cast<fftwf_complex*>(buffer);
  for (int row = row_begin; row < row_end; ++row) {
    float* values = projection + static_cast<std::size_t>(row) * cols;
    std::memcpy(buffer, values, cols * sizeof(float));
    std::fill(buffer + cols, buffer + impl.buffer_floats, 0.0f);
    fftwf_execute_dft_r2c(impl.forward, buffer, spectrum);
    // The gains are real: scale real and imaginary parts alike.
    for (std::size_t k = 0; k < bins; ++k) {
      buffer[2 * k] *= impl.gains[k];
      buffer[2 * k + 1] *= impl.gains[k];
    }
    fftwf_execute_dft_c2r(impl.inverse, spectrum, buffer);
    std::memcpy(values, buffer, cols * sizeof(float));
  }
}

DetectorShape RampFilter::shape() const {
  return impl_->shape;
}

int RampFilter::padded_width() const {
  return impl_->padded_width;
}

}  // namespace slicestream::cpu

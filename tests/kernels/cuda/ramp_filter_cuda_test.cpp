// The cuFFT ramp filter against its CPU twin (cpu::RampFilter, FFTW): every window, a cutoff,
// odd and non-power-of-two widths, one-row and one-column detectors, and a filter change.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/ramp_filter_cpu.hpp"
#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/ramp_filter_cuda.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace slicestream {
namespace {

using test::RandomSource;

std::vector<float> cpu_filtered(std::vector<float> values, DetectorShape shape,
                                const FilterConfig& config) {
  const cpu::RampFilter filter(shape, config, 1);
  filter.filter_rows(values.data(), 0, shape.rows, 0);
  return values;
}

TEST(RampFilterCuda, MatchesCpuForEveryWindowAndShape) {
  SLICESTREAM_REQUIRE_GPU();
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shapes[] = {{1, 1}, {1, 257}, {9, 1}, {13, 100}, {31, 613}, {4, 1024}};
  const FilterWindow windows[] = {FilterWindow::kRamLak, FilterWindow::kSheppLogan,
                                  FilterWindow::kCosine, FilterWindow::kHamming,
                                  FilterWindow::kHann};
  cuda::Stream stream;
  for (const DetectorShape shape : shapes) {
    for (const FilterWindow window : windows) {
      const FilterConfig config{window, window == FilterWindow::kRamLak ? 1.0f : 0.8f};
      SCOPED_TRACE(std::to_string(shape.rows) + " x " + std::to_string(shape.cols) + " " +
                   to_string(window));
      const std::vector<float> input = test::smooth_random_image(random, shape.rows, shape.cols);
      const std::vector<float> expected = cpu_filtered(input, shape, config);
      cuda::RampFilterCuda filter(shape, config);
      EXPECT_EQ(filter.padded_width(), padded_filter_width(shape.cols));
      cuda::DeviceBuffer<float> data = test::to_device(input);
      filter.filter(data.data(), stream.get());
      SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      const std::vector<float> actual = test::to_host(data.data(), data.size());
      EXPECT_LE(test::relative_error(actual, expected), 1e-5);
    }
  }
}

TEST(RampFilterCuda, NewSettingsApplyToLaterProjections) {
  SLICESTREAM_REQUIRE_GPU();
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{16, 300};
  const FilterConfig ram_lak{FilterWindow::kRamLak, 1.0f};
  const FilterConfig hann{FilterWindow::kHann, 0.5f};
  cuda::Stream stream;
  cuda::RampFilterCuda filter(shape, ram_lak);
  const std::vector<float> first = test::smooth_random_image(random, shape.rows, shape.cols);
  const std::vector<float> second = test::smooth_random_image(random, shape.rows, shape.cols);
  cuda::DeviceBuffer<float> a = test::to_device(first);
  cuda::DeviceBuffer<float> b = test::to_device(second);
  filter.filter(a.data(), stream.get());
  filter.set_config(hann, stream.get());
  filter.filter(b.data(), stream.get());
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
  EXPECT_LE(
      test::relative_error(test::to_host(a.data(), a.size()), cpu_filtered(first, shape, ram_lak)),
      1e-5);
  EXPECT_LE(
      test::relative_error(test::to_host(b.data(), b.size()), cpu_filtered(second, shape, hann)),
      1e-5);
}

}  // namespace
}  // namespace slicestream

// The ramp filter's padded output taken by the projection store's replacement pass (the filter's
// crop fused into the store update) against the separate passes (filter with its own crop, then
// the replacement of a dense projection) and against the CPU twins (cpu::RampFilter for the
// filtered rows, cpu::replace_slot for the slot and scratch contents), in every storage and
// scratch mode, eagerly and through graph replay.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cpu/ramp_filter_cpu.hpp"
#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/projection_texture_store.hpp"
#include "kernels/cuda/ramp_filter_cuda.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"
#include "tests/kernels/cuda/projection_store_test_support.hpp"

namespace slicestream {
namespace {

using test::RandomSource;
using test::read_scratch;
using test::read_slot;
using test::texels_of;

// A dense projection uploaded into a buffer of `floats` floats (its first pixels()).
cuda::DeviceBuffer<float> upload(const std::vector<float>& dense, std::size_t floats) {
  cuda::DeviceBuffer<float> buffer(floats);
  SLICESTREAM_CUDA_CHECK(cudaMemcpy(buffer.data(), dense.data(), dense.size() * sizeof(float),
                                    cudaMemcpyHostToDevice));
  return buffer;
}

// The first `shape.cols` floats of each of `shape.rows` rows `pitch` floats apart.
std::vector<float> cropped(const std::vector<float>& rows, DetectorShape shape, int pitch) {
  std::vector<float> out;
  out.reserve(shape.pixels());
  for (int r = 0; r < shape.rows; ++r) {
    const auto first = rows.begin() + static_cast<std::ptrdiff_t>(r) * pitch;
    out.insert(out.end(), first, first + shape.cols);
  }
  return out;
}

double relative_or_zero(const std::vector<float>& actual, const std::vector<float>& expected) {
  return test::max_abs(expected) == 0.0 ? test::max_abs(actual)
                                        : test::relative_error(actual, expected);
}

struct Mode {
  cuda::ScratchContent gpu;
  cpu::SlotScratch cpu;
};
const Mode kModes[] = {{cuda::ScratchContent::kDifference, cpu::SlotScratch::kDifference},
                       {cuda::ScratchContent::kOldProjection, cpu::SlotScratch::kOldProjection},
                       {cuda::ScratchContent::kUnchanged, cpu::SlotScratch::kUnchanged}};

void check_fused_crop(cuda::ProjectionStorage storage, bool graphs) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const DetectorShape shape{23, 61};  // odd; the padded width is not a multiple of the width
  const FilterConfig config{FilterWindow::kHamming, 0.9f};
  const int slots = 5;
  const int batch_size = 3;
  cuda::ProjectionStoreOptions options;
  options.storage = storage;
  options.scratch_layers = batch_size;
  options.max_layers_per_array = 2;  // the window spread over several arrays
  cuda::ProjectionTextureStore separate(0, shape, slots, options);
  cuda::ProjectionTextureStore fused(0, shape, slots, options);
  cuda::RampFilterCuda filter(shape, config, graphs, batch_size);
  const cpu::RampFilter cpu_filter(shape, config, 1);
  const int pitch = cuda::RampFilterCuda::row_pitch(shape, cuda::FilteredRows::kPadded);
  ASSERT_EQ(pitch, filter.padded_width());
  ASSERT_GT(pitch, shape.cols);
  cuda::Stream stream;

  // Both stores start from the same random window; `contents` is the CPU twin's copy.
  std::vector<std::vector<float>> contents;
  for (int s = 0; s < slots; ++s) {
    const std::vector<float> old = random.floats(shape.pixels(), -2.0, 2.0);
    const cuda::DeviceBuffer<float> device = test::to_device(old);
    separate.write_slot(s, device.data(), stream.get());
    fused.write_slot(s, device.data(), stream.get());
    contents.push_back(old);
    for (float& v : contents.back())
      v = cpu::as_stored(v, texels_of(storage));
  }

  const std::vector<std::vector<int>> batches = {{0, 3, 1}, {4, 2, 0}, {1, 3, 2}, {2, 0, 4}};
  int n = 0;
  for (const std::vector<int>& slots_of_batch : batches) {
    // Dense buffers for the separate passes, padded ones for the fused path (graph replay keeps
    // one graph per padded buffer).
    std::vector<cuda::DeviceBuffer<float>> dense;
    std::vector<cuda::DeviceBuffer<float>> padded;
    std::vector<cuda::SlotReplacement> separate_batch;
    std::vector<cuda::SlotReplacement> fused_batch;
    std::vector<std::vector<float>> expected_scratch;
    std::vector<Mode> modes;
    for (int slot : slots_of_batch) {
      const std::vector<float> input = test::smooth_random_image(random, shape.rows, shape.cols);
      dense.push_back(upload(input, shape.pixels()));
      padded.push_back(
          upload(input, cuda::RampFilterCuda::buffer_floats(shape, cuda::FilteredRows::kPadded)));
      filter.filter(dense.back().data(), stream.get(), cuda::FilteredRows::kDense);
      filter.filter(padded.back().data(), stream.get(), cuda::FilteredRows::kPadded);
      const Mode mode = kModes[n++ % 3];
      modes.push_back(mode);
      separate_batch.push_back({slot, dense.back().data(), mode.gpu});
      fused_batch.push_back({slot, padded.back().data(), mode.gpu, pitch});

      // The filtered rows against the CPU filter, then the CPU twin of the pass on them.
      SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
      const std::vector<float> rows = test::to_host(padded.back().data(), padded.back().size());
      std::vector<float> expected_rows = input;
      cpu_filter.filter_rows(expected_rows.data(), 0, shape.rows, 0);
      EXPECT_LE(test::relative_error(cropped(rows, shape, pitch), expected_rows), 1e-5);
      std::vector<float> scratch;
      cpu::replace_slot(shape, {rows.data(), pitch}, texels_of(storage), mode.cpu,
                        contents[static_cast<std::size_t>(slot)], scratch);
      expected_scratch.push_back(scratch);
    }
    separate.replace_slots(separate_batch, stream.get());
    fused.replace_slots(fused_batch, stream.get());
    for (std::size_t k = 0; k < fused_batch.size(); ++k) {
      if (modes[k].gpu == cuda::ScratchContent::kUnchanged) continue;
      SCOPED_TRACE("batch entry " + std::to_string(k));
      const std::vector<float> got = read_scratch(fused, static_cast<int>(k), stream.get());
      ASSERT_GT(test::max_abs(expected_scratch[k]), 0.0);
      EXPECT_LE(relative_or_zero(got, expected_scratch[k]), 1e-6) << "fused vs the CPU twin";
      EXPECT_LE(relative_or_zero(got, read_scratch(separate, static_cast<int>(k), stream.get())),
                1e-6)
          << "fused vs separate passes";
    }
  }
  for (int s = 0; s < slots; ++s) {
    SCOPED_TRACE("slot " + std::to_string(s));
    const std::vector<float> got = read_slot(fused, s, stream.get());
    EXPECT_LE(test::relative_error(got, contents[static_cast<std::size_t>(s)]), 1e-6)
        << "fused vs the CPU twin";
    EXPECT_LE(test::relative_error(got, read_slot(separate, s, stream.get())), 1e-6)
        << "fused vs separate passes";
  }
  if (graphs) {
    ASSERT_NE(filter.graph(), nullptr);
    EXPECT_EQ(filter.graph()->update_failures(), 0u);
  }
}

TEST(FilteredStoreUpdateCuda, FusedCropEqualsSeparatePassesAndTheCpuTwins) {
  SLICESTREAM_REQUIRE_GPU();
  for (const cuda::ProjectionStorage storage :
       {cuda::ProjectionStorage::kTexture, cuda::ProjectionStorage::kTextureHalf,
        cuda::ProjectionStorage::kTextureHalfMirrored, cuda::ProjectionStorage::kLinear}) {
    for (const bool graphs : {false, true}) {
      SCOPED_TRACE(std::string(cuda::to_string(storage)) + (graphs ? ", graphs" : ", eager"));
      check_fused_crop(storage, graphs);
    }
  }
}

TEST(FilteredStoreUpdateCuda, RefusesRowsCloserThanTheColumns) {
  SLICESTREAM_REQUIRE_GPU();
  const DetectorShape shape{4, 9};
  cuda::ProjectionTextureStore store(0, shape, 2);
  const cuda::DeviceBuffer<float> buffer(shape.pixels());
  cuda::Stream stream;
  EXPECT_THROW(
      store.replace_slots({{0, buffer.data(), cuda::ScratchContent::kDifference, 8}}, stream.get()),
      cuda::CudaError);
}

}  // namespace
}  // namespace slicestream

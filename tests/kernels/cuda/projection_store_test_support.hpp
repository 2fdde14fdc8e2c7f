// Helpers of the projection store's GPU tests: a slot or scratch layer (or its centre line) read
// back as fp32, and the store's storage and scratch contents in the terms of the CPU twin
// (cpu::replace_slot).
#pragma once

#include <cmath>
#include <vector>

#include "kernels/cuda/projection_texture_store.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"
#include "tests/support/slot_replacement_cpu.hpp"

namespace slicestream::test {

inline std::vector<float> read_slot(const cuda::ProjectionTextureStore& store, int slot,
                                    cudaStream_t stream) {
  cuda::DeviceBuffer<float> out(store.shape().pixels());
  store.read_slot(slot, out.data(), stream);
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  return to_host(out.data(), out.size());
}

inline std::vector<float> read_scratch(const cuda::ProjectionTextureStore& store, int index,
                                       cudaStream_t stream) {
  cuda::DeviceBuffer<float> out(store.shape().pixels());
  store.read_scratch(out.data(), stream, index);
  SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  return to_host(out.data(), out.size());
}

// The centre line of a layer holding `stored` (rows x cols, the values as the layer keeps them):
// the mean of rows (rows - 1) / 2 and rows / 2, as the store computes it.
inline std::vector<float> centre_line_of(const std::vector<float>& stored, DetectorShape shape) {
  const int upper = (shape.rows - 1) / 2;
  const int lower = shape.rows / 2;
  std::vector<float> line(static_cast<std::size_t>(shape.cols));
  for (int c = 0; c < shape.cols; ++c) {
    const float a = stored[static_cast<std::size_t>(upper * shape.cols + c)];
    const float b = stored[static_cast<std::size_t>(lower * shape.cols + c)];
    line[static_cast<std::size_t>(c)] = upper == lower ? a : std::fma(0.5f, a, 0.5f * b);
  }
  return line;
}

// The values of the centre line `ref` points at, its layout checked on the way: entry e holds
// (v[e - 2], v[e - 1]), zero outside the detector.
inline std::vector<float> read_centre_line(const cuda::TextureRef& ref, DetectorShape shape) {
  EXPECT_NE(ref.centre_line, nullptr);
  if (ref.centre_line == nullptr) return {};
  std::vector<float2> entries(static_cast<std::size_t>(cuda::centre_line_entries(shape.cols)));
  SLICESTREAM_CUDA_CHECK(cudaMemcpy(entries.data(), ref.centre_line,
                                    entries.size() * sizeof(float2), cudaMemcpyDeviceToHost));
  std::vector<float> line(static_cast<std::size_t>(shape.cols));
  for (int c = 0; c < shape.cols; ++c)
    line[static_cast<std::size_t>(c)] = entries[static_cast<std::size_t>(c + 2)].x;
  const auto value = [&](int c) {
    return c >= 0 && c < shape.cols ? line[static_cast<std::size_t>(c)] : 0.0f;
  };
  for (int e = 0; e < static_cast<int>(entries.size()); ++e) {
    EXPECT_EQ(entries[static_cast<std::size_t>(e)].x, value(e - 2)) << "entry " << e;
    EXPECT_EQ(entries[static_cast<std::size_t>(e)].y, value(e - 1)) << "entry " << e;
  }
  return line;
}

inline cpu::SlotTexels texels_of(cuda::ProjectionStorage storage) {
  return storage == cuda::ProjectionStorage::kTextureHalf ||
                 storage == cuda::ProjectionStorage::kTextureHalfMirrored
             ? cpu::SlotTexels::kFloat16
             : cpu::SlotTexels::kFloat32;
}

inline cpu::SlotScratch scratch_of(cuda::ScratchContent content) {
  switch (content) {
    case cuda::ScratchContent::kDifference:
      return cpu::SlotScratch::kDifference;
    case cuda::ScratchContent::kOldProjection:
      return cpu::SlotScratch::kOldProjection;
    default:
      return cpu::SlotScratch::kUnchanged;
  }
}

}  // namespace slicestream::test

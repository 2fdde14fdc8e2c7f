// Helpers of the projection store's GPU tests: a slot or scratch layer read back as fp32, and the
// store's storage and scratch contents in the terms of the CPU twin (cpu::replace_slot).
#pragma once

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

#include "kernels/cuda/pinned_upload_ring.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace slicestream::cuda {

PinnedUploadRing::PinnedUploadRing(std::size_t chunk_bytes, int chunks)
    : chunk_bytes_(chunk_bytes) {
  if (chunk_bytes == 0 || chunks < 2) {
    throw std::invalid_argument("PinnedUploadRing needs chunk_bytes > 0 and at least 2 chunks");
  }
  chunks_.reserve(static_cast<std::size_t>(chunks));
  chunk_free_.reserve(static_cast<std::size_t>(chunks));
  for (int i = 0; i < chunks; ++i) {
    chunks_.emplace_back(chunk_bytes);
    chunk_free_.emplace_back();
  }
}

void PinnedUploadRing::upload(const void* host, void* device, std::size_t bytes,
                              cudaStream_t stream) {
  const auto* src = static_cast<const unsigned char*>(host);
  auto* dst = static_cast<unsigned char*>(device);
  for (std::size_t offset = 0; offset < bytes; offset += chunk_bytes_) {
    const std::size_t n = std::min(chunk_bytes_, bytes - offset);
    PinnedBuffer<unsigned char>& chunk = chunks_[next_];
    Event& free_event = chunk_free_[next_];
    free_event.synchronize();  // the DMA that last read this chunk is done
    std::memcpy(chunk.data(), src + offset, n);
    SLICESTREAM_CUDA_CHECK(
        cudaMemcpyAsync(dst + offset, chunk.data(), n, cudaMemcpyHostToDevice, stream));
    free_event.record(stream);
    next_ = (next_ + 1) % chunks_.size();
  }
}

const void* PinnedUploadRing::stage(const void* host, std::size_t bytes) {
  if (bytes > chunk_bytes_) {
    throw std::invalid_argument("PinnedUploadRing::stage: " + std::to_string(bytes) +
                                " bytes exceed the chunk size " + std::to_string(chunk_bytes_));
  }
  PinnedBuffer<unsigned char>& chunk = chunks_[next_];
  chunk_free_[next_].synchronize();  // the copy that last read this chunk is done
  std::memcpy(chunk.data(), host, bytes);
  return chunk.data();
}

void PinnedUploadRing::staged_read_enqueued(cudaStream_t stream) {
  chunk_free_[next_].record(stream);
  next_ = (next_ + 1) % chunks_.size();
}

}  // namespace slicestream::cuda

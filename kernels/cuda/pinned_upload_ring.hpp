// Asynchronous upload of frames that arrive in pageable host memory (ZeroMQ message buffers).
//
// A DMA engine reads only page-locked memory, so frames are staged through a small ring of pinned
// chunks: the host copy of chunk i+1 into the ring overlaps the DMA of chunk i, and the DMAs of a
// frame overlap whatever kernels other streams run (filtering and backprojection of earlier
// frames). One ring per uploading thread; not thread-safe.
//
// Graph replay (launch_sequence.hpp) wants the upload as one copy node: a ring of frame-sized
// chunks, used through stage() / staged_read_enqueued(), gives it a pinned source per frame while
// the previous frame's copy may still be running.
#pragma once

#include <cstddef>
#include <vector>

#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/device_buffer.hpp"

namespace slicestream::cuda {

class PinnedUploadRing {
 public:
  static constexpr std::size_t kDefaultChunkBytes = std::size_t{1} << 20;
  static constexpr int kDefaultChunks = 4;

  explicit PinnedUploadRing(std::size_t chunk_bytes = kDefaultChunkBytes,
                            int chunks = kDefaultChunks);

  // Enqueues the copy of `bytes` from `host` to `device` on `stream`. Returns when every chunk is
  // staged and enqueued (it blocks only while a chunk's previous DMA is still reading it); work
  // enqueued on `stream` afterwards sees the data.
  void upload(const void* host, void* device, std::size_t bytes, cudaStream_t stream);

  // Copies `bytes` (at most chunk_bytes()) from `host` into the next chunk, once the copy that last
  // read that chunk has finished, and returns the chunk. The caller enqueues the copy that reads it
  // and then calls staged_read_enqueued(stream), which hands the chunk back to the ring. If that
  // call never comes (the enqueue failed), the next stage() reuses the same chunk.
  const void* stage(const void* host, std::size_t bytes);
  void staged_read_enqueued(cudaStream_t stream);

  std::size_t chunk_bytes() const { return chunk_bytes_; }
  std::size_t pinned_bytes() const { return chunk_bytes_ * chunks_.size(); }

 private:
  std::size_t chunk_bytes_;
  std::vector<PinnedBuffer<unsigned char>> chunks_;
  std::vector<Event> chunk_free_;  // recorded after the DMA reading the chunk
  std::size_t next_ = 0;
};

}  // namespace slicestream::cuda

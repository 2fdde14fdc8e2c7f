// RAII CUDA streams and events. Every stage thread of the CUDA backend owns one stream; events
// order work across them without blocking the host.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "kernels/cuda/cuda_check.hpp"

namespace slicestream::cuda {

// kHighest: the device's highest stream priority; the block scheduler dispatches a kernel of such
// a stream before the waiting blocks of kernels on default-priority streams.
enum class StreamPriority { kDefault, kHighest };

class Stream {
 public:
  explicit Stream(StreamPriority priority = StreamPriority::kDefault) {
    if (priority == StreamPriority::kDefault) {
      SLICESTREAM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
      return;
    }
    int least = 0;
    int greatest = 0;
    SLICESTREAM_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    SLICESTREAM_CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
  }
  ~Stream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    std::swap(stream_, other.stream_);
    return *this;
  }

  cudaStream_t get() const { return stream_; }
  void synchronize() const { SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  // Ordering-only events skip timing (cheaper); benchmarks ask for timing ones.
  explicit Event(bool timing = false) {
    SLICESTREAM_CUDA_CHECK(
        cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) { SLICESTREAM_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  // Makes `stream` wait for the work recorded so far (no host blocking).
  void wait_on(cudaStream_t stream) const {
    SLICESTREAM_CUDA_CHECK(cudaStreamWaitEvent(stream, event_, 0));
  }
  void synchronize() const { SLICESTREAM_CUDA_CHECK(cudaEventSynchronize(event_)); }
  // Milliseconds between `start` and this event (both timing events, both completed).
  float elapsed_ms_since(const Event& start) const {
    float ms = 0;
    SLICESTREAM_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace slicestream::cuda

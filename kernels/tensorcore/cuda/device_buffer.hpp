// Owning device memory (cudaMalloc, never managed memory) with checked transfers.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "kernels/tensorcore/cuda/cuda_check.hpp"

namespace slicestream::tensorcore::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) { resize(count); }
  explicit DeviceBuffer(const std::vector<T>& host) { upload(host); }
  ~DeviceBuffer() { release(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }

  // Keeps the contents only when the size does not change.
  void resize(std::size_t count) {
    if (count == count_) return;
    release();
    if (count > 0)
      check(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)), "cudaMalloc");
    count_ = count;
  }
  void upload(const T* host, std::size_t count) {
    resize(count);
    if (count > 0)
      check(cudaMemcpy(data_, host, count * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    if (count_ > 0)
      check(cudaMemcpy(host.data(), data_, bytes(), cudaMemcpyDeviceToHost), "download");
    return host;
  }
  void zero(cudaStream_t stream = nullptr) {
    if (count_ > 0) check(cudaMemsetAsync(data_, 0, bytes(), stream), "cudaMemsetAsync");
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  void release() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    count_ = 0;
  }

  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace slicestream::tensorcore::cuda

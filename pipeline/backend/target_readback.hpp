// A reconstruction target on its way to the host (Backend::read_target_async): the reconstruct
// stage starts the copy and hands the readback on; whoever publishes the values waits for it, so
// that the reconstruct stage never waits for a copy it does not need itself.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace slicestream {

// Readback buffers that may be lent to published images at a time, by default, in bytes
// (TargetReadback::lend; the CUDA backend's page-locked buffers, `--readback-lend`).
inline constexpr std::size_t kDefaultReadbackLendBytes = std::size_t{1} << 30;

class TargetReadback {
 public:
  virtual ~TargetReadback() = default;
  // Blocks until the values are on the host (from any thread, once or more); throws what a failed
  // copy throws (BackendError).
  virtual void wait() = 0;
  // target.grid().points() floats, valid after wait() while the readback lives.
  virtual const float* values() const = 0;
  virtual std::size_t size() const = 0;
  // Asks whether the values may stay in this readback's buffer for as long as whoever receives
  // them holds them, and counts them as lent when so (in one step; at most once per readback).
  // False where the buffer's pool has lent out all it may: the caller copies the values instead.
  virtual bool lend() { return true; }
};

// A readback that is complete from the start: the values were copied synchronously.
class HostReadback final : public TargetReadback {
 public:
  explicit HostReadback(std::vector<float> values) : values_(std::move(values)) {}
  void wait() override {}
  const float* values() const override { return values_.data(); }
  std::size_t size() const override { return values_.size(); }

 private:
  std::vector<float> values_;
};

}  // namespace slicestream

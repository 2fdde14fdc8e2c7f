// A viewer that takes every slice publication as it arrives, on its own thread, as the browser
// viewer's hub and the Python client do: what a moved slice waits for is then the server and the
// wire, not images the viewer has not read yet. Waiters ask for the first slice that matches.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "clients/common/slice_subscriber.hpp"
#include "slicestream.pb.h"

namespace slicestream::bench {

class LiveViewer {
 public:
  using Clock = std::chrono::steady_clock;
  struct Arrival {
    v1::SliceHeader header;
    std::size_t values = 0;
    Clock::time_point decoded;  // receive() returned the whole slice, decoded
  };
  using Match = std::function<bool(const v1::SliceHeader&)>;

  // Starts reading at once; `subscriber` must outlive the viewer.
  explicit LiveViewer(client::SliceSubscriber& subscriber);
  ~LiveViewer();
  LiveViewer(const LiveViewer&) = delete;
  LiveViewer& operator=(const LiveViewer&) = delete;

  // Arms the viewer for the next slice that `match` accepts; call before the request that makes
  // it, so that an early arrival is not missed.
  void expect(Match match);
  // The armed slice's arrival, or nothing at `deadline`.
  std::optional<Arrival> wait(Clock::time_point deadline);

  std::uint64_t slices_received() const;
  std::uint64_t malformed() const;
  // Every slice received so far: from its header's published_ns (the slices endpoint took it; the
  // same monotonic clock on one host) to its decoding here, ms. Tells the wire and the viewer's
  // side apart from the server's.
  std::vector<double> publication_to_decoded_ms() const;
  std::uint64_t slice_bytes_received() const;

 private:
  void read();

  client::SliceSubscriber& subscriber_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  Match match_;
  std::optional<Arrival> arrival_;
  std::uint64_t slices_received_ = 0;
  std::uint64_t slice_bytes_received_ = 0;
  std::vector<double> publication_to_decoded_ms_;
  std::uint64_t malformed_ = 0;
  bool stopping_ = false;
  std::thread reader_;
};

}  // namespace slicestream::bench

// The benchmark's stand-in for a browser: a WebSocket to the server's /ws (Boost.Beast, blocking,
// one thread per socket) that reads images as a viewer does, or moves a slice and waits for the
// server's image of it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace slicestream::bench {

// A free loopback TCP port (bound and released: the server binds it right after).
int free_tcp_port();

class ViewerSocket {
 public:
  // Connects to ws://127.0.0.1:`port`/ws`query` and reads the hello. `receive_buffer_bytes` > 0
  // shrinks the socket's receive buffer (a slow client's window).
  ViewerSocket(int port, const std::string& query, int receive_buffer_bytes = 0);
  ~ViewerSocket();
  ViewerSocket(const ViewerSocket&) = delete;
  ViewerSocket& operator=(const ViewerSocket&) = delete;

  // Reads every message on a thread of its own until stop() (a browser that keeps up).
  void start_reading();
  void stop();
  std::uint64_t images() const { return images_.load(); }
  std::uint64_t bytes() const { return bytes_.load(); }

  // Reads until an image of slice `slice_id` holding at least `projections` projections
  // arrives; its orientation goes to `orientation`. False after `timeout`.
  bool wait_for_slice(std::uint32_t slice_id, std::uint64_t projections, float (&orientation)[9],
                      std::chrono::milliseconds timeout);

  // Moves live slice `slice_id` (a SetSlice over the WebSocket, width x height) to
  // `orientation` and waits until its image at that place arrives: the time from sending to
  // the image, in ms (negative when the server refused or nothing came within `timeout`).
  double move_slice(std::uint32_t slice_id, const float (&orientation)[9], int width, int height,
                    std::chrono::milliseconds timeout);

 private:
  struct Impl;
  // Reads until an image of `slice_id` for which `accept(orientation, projections)` holds;
  // false on a refusal, an error or after `timeout` (a receive timeout on the socket).
  template <typename Accept>
  bool read_until(std::uint32_t slice_id, Accept accept, std::chrono::milliseconds timeout);
  std::unique_ptr<Impl> impl_;
  std::atomic<std::uint64_t> images_{0};
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<bool> stopping_{false};
  std::thread reader_;
};

}  // namespace slicestream::bench

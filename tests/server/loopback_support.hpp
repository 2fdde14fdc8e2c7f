// What the in-process server tests share: a loopback configuration, the CPU backend, waiting for
// the data endpoint to have read a number of messages, and the orientation in a slice header.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "server/server.hpp"
#include "slicestream.pb.h"

namespace slicestream::test {

// Ephemeral loopback ports, a small preview, default slices of `slice_size` pixels.
inline ServerConfig loopback_config(int slice_size) {
  ServerConfig config;
  config.endpoints = {"tcp://127.0.0.1:*", "tcp://127.0.0.1:*", "tcp://127.0.0.1:*"};
  config.http.listen = "127.0.0.1:0";
  config.limits.max_detector_side = 1024;
  config.pipeline.queue_depth = 16;
  config.pipeline.preview_size = 24;
  config.pipeline.parameters.preview_interval_s = 0.1;
  config.pipeline.default_slice_size = slice_size;
  config.stats_interval_s = 0;
  // PUB drops what a subscriber cannot take in time; the tests must see every final slice even
  // when the machine is busy, so both sides buffer everything.
  config.slices_hwm = 100000;
  return config;
}

inline std::unique_ptr<Backend> cpu_backend() {
  BackendOptions options;
  options.cpu.threads = 2;
  return make_backend(BackendKind::kCpu, options);
}

// Waits until the data endpoint has read `count` messages (messages from two connections are
// fair-queued, so phases that must stay in order wait for each other).
inline void wait_read(const Server& server, std::uint64_t count) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (server.counters().at("data_messages") < count) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "the server read " << server.counters().at("data_messages") << " of " << count;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

inline SliceOrientation orientation_of(const v1::SliceHeader& header) {
  SliceOrientation orientation;
  for (int i = 0; i < 9; ++i) {
    orientation.values[static_cast<std::size_t>(i)] = header.orientation().values(i);
  }
  return orientation;
}

}  // namespace slicestream::test

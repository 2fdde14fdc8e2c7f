// A stop with drain (SIGTERM) in the middle of a scan: the data endpoint stops reading (it
// unbinds), then hands on what ZeroMQ had already received; every message the server read is used
// or counted, none disappears.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "clients/common/data_sender.hpp"
#include "server/server.hpp"
#include "tests/pipeline/gated_backend.hpp"
#include "tests/server/loopback_support.hpp"
#include "tests/server/phantom_scan.hpp"

namespace slicestream {
namespace {

TEST(ShutdownDrain, WhatTheSocketHadReceivedIsIntegratedAtAStopWithDrain) {
  // Short queues and a reconstruct stage that stalls in its store updates until the stop: the
  // pipeline falls behind and frames wait in the socket.
  ServerConfig config = test::loopback_config(64);
  config.pipeline.queue_depth = 2;
  config.data_hwm = 64;
  auto backend = std::make_unique<test::GatedBackend>();
  test::GatedBackend* gate = backend.get();
  Server server(config, std::move(backend));
  server.start();
  const test::PhantomScan scan = test::make_parallel_scan(11, {32, 128}, 64);
  client::DataSender detector(server.data_address(), 1000);
  detector.send_scan_begin(scan.begin);
  test::send_calibration(detector, scan);
  test::send_projections(detector, scan, 0, 192);
  detector.close(10000);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // ZeroMQ fills the receive queue
  // The stage goes on once the stop has begun (the data endpoint no longer reads).
  std::thread opener([gate] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    gate->open();
  });
  server.stop(/*drain=*/true);
  opener.join();

  const CounterMap counters = server.counters();
  const MetricsSnapshot m = server.metrics();
  const std::uint64_t read = counters.at("data_messages");
  EXPECT_GE(counters.at("data_read_at_stop"), 1u) << "messages waited in the socket at the stop";
  EXPECT_EQ(counters.at("data_rejected"), 0u);
  // Every message read (the ScanBegin and the frames: the dark, the flat, the projections) used.
  EXPECT_EQ(m.frames_received + 1, read);
  EXPECT_EQ(m.projections_integrated, m.frames_received - m.darks_received - m.flats_received);
  EXPECT_TRUE(m.discards.empty()) << m.discards.begin()->first;
  std::printf("%llu of 195 messages read, %llu of them at the stop, %llu projections integrated\n",
              static_cast<unsigned long long>(read),
              static_cast<unsigned long long>(counters.at("data_read_at_stop")),
              static_cast<unsigned long long>(m.projections_integrated));
}

}  // namespace
}  // namespace slicestream

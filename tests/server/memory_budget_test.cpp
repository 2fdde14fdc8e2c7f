// The one memory budget (--memory-limit-mb) under requests a hostile or careless client may send:
// huge slices before a scan, GetSlice results for a requester that never reads. The process must
// stay within the budget, every refusal says why, and nothing accepted is removed later.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "clients/common/data_sender.hpp"
#include "clients/common/request_client.hpp"
#include "server/requester_backlog.hpp"
#include "server/server.hpp"
#include "tests/server/loopback_support.hpp"
#include "tests/server/phantom_scan.hpp"

namespace slicestream {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// A field of /proc/self/status in bytes ("VmRSS", "VmHWM").
std::size_t process_bytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoull(line.substr(field.size() + 1)) * 1024;
  }
  return 0;
}

// Resets the peak resident size (VmHWM) to the current one.
void reset_peak_rss() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

std::unique_ptr<Backend> cpu_backend_with_limit(std::size_t limit_bytes) {
  BackendOptions options;
  options.cpu.threads = 2;
  options.cpu.memory_limit_bytes = limit_bytes;
  return make_backend(BackendKind::kCpu, options);
}

const client::Orientation kAxial{1, 0, 0, 0, 1, 0, -0.5F, -0.5F, 0};

client::Response wait_status(client::RequestClient& requests,
                             const std::function<bool(const v1::StatusReport&)>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  client::Response status = requests.get_status();
  while (!done(status.reply.status()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    status = requests.get_status();
  }
  return status;
}

TEST(MemoryBudget, TwoDozenHugeSlicesAndAScanStayWithinTheLimit) {
  const std::size_t limit = 1000 * kMiB;  // one slice (two images + target: 768 MiB) and a scan
  ServerConfig config = test::loopback_config(16);
  Server server(config, cpu_backend_with_limit(limit));
  server.start();
  client::RequestClient requests(server.requests_address(), 60000);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  reset_peak_rss();
  const std::size_t rss_before = process_bytes("VmRSS");

  int accepted = 0;
  int refused = 0;
  for (std::uint32_t id = 0; id < 24; ++id) {
    const client::Response r = requests.set_slice(id, kAxial, 8192, 8192);
    if (r.ok()) {
      ++accepted;
      continue;
    }
    ++refused;
    EXPECT_EQ(r.reply.code(), v1::STATUS_CODE_RESOURCE_EXHAUSTED);
    EXPECT_EQ(r.reply.reason(), "memory_budget");
    EXPECT_NE(r.reply.message().find("memory budget"), std::string::npos) << r.reply.message();
  }
  EXPECT_GE(accepted, 1);
  EXPECT_GE(refused, 22) << "a slice reserves 768 MiB (a publication and its target): one fits";

  // The scan starts with every accepted slice, publishes them and integrates its frames.
  const test::PhantomScan scan = test::make_parallel_scan(7, {4, 16}, 8);
  client::DataSender detector(server.data_address(), 64);
  detector.send_scan_begin(scan.begin);
  test::send_calibration(detector, scan);
  test::send_projections(detector, scan, 0, 8);
  const client::Response status = wait_status(requests, [&](const v1::StatusReport& s) {
    const auto integrated = s.counters().find("projections_integrated");
    const auto published = s.counters().find("slices_published");
    return integrated != s.counters().end() && integrated->second == 8 &&
           published != s.counters().end() &&
           published->second >= static_cast<std::uint64_t>(accepted);
  });
  const v1::StatusReport& report = status.reply.status();
  EXPECT_EQ(report.counters().at("projections_integrated"), 8u);
  // Every accepted client slice is still there; default slices fill the ids left free.
  int client_slices = 0;
  for (const v1::SetSlice& slice : report.slices())
    client_slices += slice.width() == 8192 ? 1 : 0;
  EXPECT_EQ(client_slices, accepted) << "no accepted slice was removed at the scan start";
  EXPECT_LE(report.slices_size(), accepted + 3);
  EXPECT_EQ(report.counters().at("errors"), 0u);
  EXPECT_GE(report.counters().at("slices_published"), static_cast<std::uint64_t>(accepted));
  EXPECT_LE(report.counters().at("memory_used_bytes"), limit);
  EXPECT_EQ(report.counters().at("memory_budget_bytes"), limit);
  std::printf("%llu publications held back by the budget\n",
              static_cast<unsigned long long>(report.counters().at("publications_held_back")));

  const std::size_t peak_growth = process_bytes("VmHWM") - rss_before;
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer's shadow memory (several bytes per byte the server touches) is resident too:
  // the budget's own accounting above is checked, the process's growth is not.
  std::printf("peak RSS growth %zu MiB under ThreadSanitizer (shadow memory included)\n",
              peak_growth / kMiB);
  return;
#endif
  std::size_t allowed = limit;
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer keeps one shadow byte for every eight bytes the process touches, resident
  // beside them.
  allowed += limit / 8;
#endif
  EXPECT_LT(peak_growth, allowed) << "peak resident size grew by " << peak_growth / kMiB << " MiB";
  std::printf("peak RSS growth %zu MiB with a 1000 MiB budget, %d slices accepted, %d refused\n",
              peak_growth / kMiB, accepted, refused);
  server.stop(false);
}

TEST(MemoryBudget, GetSliceBeyondTheBudgetIsRefusedWithTheNumbers) {
  ServerConfig config = test::loopback_config(16);
  Server server(config, cpu_backend_with_limit(64 * kMiB));
  server.start();
  const test::PhantomScan scan = test::make_parallel_scan(8, {4, 16}, 8);
  client::DataSender detector(server.data_address(), 64);
  detector.send_scan_begin(scan.begin);
  client::RequestClient requests(server.requests_address(), 60000);
  wait_status(requests, [](const v1::StatusReport& s) { return s.scan_active(); });
  const client::Response small = requests.get_slice(kAxial, 1024, 1024);  // 4 MiB
  EXPECT_TRUE(small.ok()) << small.reply.message();
  const client::Response huge = requests.get_slice(kAxial, 8192, 8192);  // 256 MiB
  EXPECT_EQ(huge.reply.code(), v1::STATUS_CODE_RESOURCE_EXHAUSTED);
  EXPECT_EQ(huge.reply.reason(), "memory_budget");
  EXPECT_NE(huge.reply.message().find("this GetSlice needs 256.0 MiB"), std::string::npos)
      << huge.reply.message();
  server.stop(false);
}

TEST(RequesterBacklogTest, ARequesterIsRefusedBeyondItsLimitUntilItsRepliesLeave) {
  RequesterBacklog backlog(10 * kMiB);
  auto first = backlog.reserve("a", 6 * kMiB);
  ASSERT_TRUE(first);
  EXPECT_FALSE(backlog.reserve("a", 6 * kMiB)) << "12 MiB over the 10 MiB limit";
  EXPECT_TRUE(backlog.reserve("b", 6 * kMiB)) << "another requester has its own backlog";
  EXPECT_EQ(backlog.bytes_of("a"), 6 * kMiB);
  first.reset();  // the reply left
  EXPECT_EQ(backlog.bytes_of("a"), 0u);
  EXPECT_TRUE(backlog.reserve("a", 6 * kMiB));
}

// A requester that sends GetSlices and never reads the replies: ZeroMQ would queue them without
// a byte limit; the backlog refuses what exceeds --max-reply-backlog, with a reason.
TEST(MemoryBudget, ARequesterThatDoesNotReadIsRefusedBeyondItsReplyBacklog) {
  ServerConfig config = test::loopback_config(16);
  config.limits.max_reply_backlog_bytes = 16 * kMiB;
  Server server(config, test::cpu_backend());
  server.start();
  const test::PhantomScan scan = test::make_parallel_scan(9, {4, 16}, 8);
  client::DataSender detector(server.data_address(), 64);
  detector.send_scan_begin(scan.begin);
  {
    client::RequestClient requests(server.requests_address(), 60000);
    wait_status(requests, [](const v1::StatusReport& s) { return s.scan_active(); });
  }
  zmq::context_t context(1);
  zmq::socket_t lazy(context, zmq::socket_type::dealer);
  lazy.set(zmq::sockopt::rcvhwm, 1);
  lazy.set(zmq::sockopt::rcvbuf, 64 * 1024);
  lazy.set(zmq::sockopt::linger, 0);
  lazy.connect(server.requests_address());
  constexpr int kRequests = 40;  // 4 MiB each: 160 MiB asked for, 16 MiB may queue
  for (int i = 0; i < kRequests; ++i) {
    v1::Request request;
    request.set_protocol_version(1);
    request.set_request_id(static_cast<std::uint64_t>(i + 1));
    v1::GetSlice* get = request.mutable_get_slice();
    for (float value : kAxial)
      get->mutable_orientation()->add_values(value);
    get->set_width(1024);
    get->set_height(1024);
    lazy.send(zmq::buffer(request.SerializeAsString()));
  }
  // Wait until every request was answered by the server (refused at once or computed).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (server.counters().at("requests") < static_cast<std::uint64_t>(kRequests) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // Now read everything: some replies are slices, the rest refusals naming the backlog.
  int slices = 0;
  int refusals = 0;
  for (int i = 0; i < kRequests; ++i) {
    zmq::pollitem_t item{lazy.handle(), 0, ZMQ_POLLIN, 0};
    ASSERT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(20000)), 1) << "reply " << i;
    zmq::message_t part;
    ASSERT_TRUE(lazy.recv(part));
    v1::Reply reply;
    ASSERT_TRUE(reply.ParseFromArray(part.data(), static_cast<int>(part.size())));
    if (part.more()) {
      zmq::message_t values;
      ASSERT_TRUE(lazy.recv(values));
      EXPECT_EQ(values.size(), 1024u * 1024u * 4u);
      ++slices;
    } else {
      EXPECT_EQ(reply.code(), v1::STATUS_CODE_RESOURCE_EXHAUSTED);
      EXPECT_EQ(reply.reason(), "reply_backlog");
      ++refusals;
    }
  }
  EXPECT_GE(slices, 4) << "the first 16 MiB always fit";
  EXPECT_GE(refusals, 1) << "a client that does not read cannot queue 160 MiB";
  std::printf("%d slices sent, %d GetSlices refused (reply_backlog)\n", slices, refusals);
  server.stop(false);
}

}  // namespace
}  // namespace slicestream

// Strings from the wire reach the log and the events escaped and length-limited: a scan
// description cannot forge log lines or rewrite a terminal, and a megabyte one is refused.
#include <gtest/gtest.h>

#include "clients/common/data_sender.hpp"
#include "server/server.hpp"
#include "tests/server/live_subscriber.hpp"
#include "tests/server/log_capture.hpp"
#include "tests/server/loopback_support.hpp"
#include "tests/server/phantom_scan.hpp"

namespace slicestream {
namespace {

TEST(HostileStrings, ScanDescriptionIsEscapedInLogAndEventsAndLimited) {
  test::LogCapture log;
  ServerConfig config = test::loopback_config(16);
  config.limits.max_text_bytes = 1024;
  Server server(config, test::cpu_backend());
  server.start();
  test::LiveSubscriber live(server.slices_address());
  client::DataSender sender(server.data_address());

  const std::string forged = "[error] forged: the server is compromised";
  test::PhantomScan scan = test::make_parallel_scan(5, {4, 16}, 8);
  scan.begin.set_description("sample A\n" + forged + "\x1b[2J\x1b]0;title\x07");
  // The subscription must reach the server first: resend until the scan's event arrives.
  std::uint64_t sent = 0;
  ASSERT_TRUE(live.wait_for(
      [&] {
        sender.send_scan_begin(scan.begin);
        ++sent;
        for (const v1::Event& event : live.events_locked()) {
          if (event.kind() == v1::EVENT_KIND_SCAN_STARTED) return true;
        }
        return false;
      },
      std::chrono::seconds(20)));
  test::PhantomScan long_scan = test::make_parallel_scan(6, {4, 16}, 8);
  long_scan.begin.set_description(std::string(1 << 20, 'x'));
  sender.send_scan_begin(long_scan.begin);
  sender.close();
  test::wait_read(server, sent + 1);
  server.wait_idle();

  for (const std::string& line : log.lines()) {
    EXPECT_NE(line.rfind(forged, 0), 0u) << "a forged log line: " << line;
    EXPECT_EQ(line.find('\x1b'), std::string::npos) << "an escape sequence reached the log";
    EXPECT_LT(line.size(), 4096u) << "an unbounded line: " << line.substr(0, 200);
  }
  EXPECT_NE(log.text().find("sample A\\n[error] forged"), std::string::npos) << log.text();
  bool escaped_event = false;
  {
    ASSERT_TRUE(live.wait_for([&] {
      for (const v1::Event& event : live.events_locked()) {
        if (event.message().find("sample A\\n") != std::string::npos) escaped_event = true;
      }
      return escaped_event;
    }));
  }
  // Counted once the codec has refused it (after the endpoint counted the message as read).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (server.metrics().discards.count("oversized") == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(server.metrics().discards.count("oversized"), 1u)
      << "the megabyte description is refused";
  server.stop(false);
}

}  // namespace
}  // namespace slicestream

// libprotobuf's own log lines (one per parsed string field that is not valid UTF-8) reach the
// server's log through route_protobuf_logs: counted every one, logged a few a second with the
// count of those suppressed, so that a client sending such messages cannot flood the log.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "server/protobuf_log_route.hpp"
#include "slicestream.pb.h"
#include "tests/server/log_capture.hpp"

namespace slicestream {
namespace {

// An Event whose reason holds bytes that are not UTF-8 (written as a valid string, then patched).
std::string event_with_invalid_utf8() {
  v1::Event event;
  event.set_reason("xxxx");
  std::string bytes = event.SerializeAsString();
  const std::size_t at = bytes.find("xxxx");
  EXPECT_NE(at, std::string::npos);
  bytes.replace(at, 4, "\xff\xfe\x1b[");
  return bytes;
}

TEST(ProtobufLogRoute, AFloodOfInvalidStringsIsCountedAndThrottled) {
  route_protobuf_logs();
  route_protobuf_logs();  // a second call changes nothing
  test::LogCapture log;
  const std::string bytes = event_with_invalid_utf8();
  const std::uint64_t before = protobuf_log_lines();
  constexpr int kMessages = 200;
  for (int i = 0; i < kMessages; ++i) {
    v1::Event parsed;
    EXPECT_FALSE(parsed.ParseFromString(bytes)) << "proto3 refuses a string that is not UTF-8";
  }
  EXPECT_GE(protobuf_log_lines() - before, static_cast<std::uint64_t>(kMessages));
  int logged = 0;
  for (const std::string& line : log.lines())
    logged += line.find("libprotobuf") != std::string::npos ? 1 : 0;
  EXPECT_GE(logged, 1);
  // One throttle window can straddle a second boundary: at most two windows' worth.
  EXPECT_LE(logged, 2 * kProtobufLinesPerSecond) << log.text();
  EXPECT_NE(log.text().find("invalid UTF-8"), std::string::npos) << log.text();

  // After the window the next line says how many were left out.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  v1::Event parsed;
  EXPECT_FALSE(parsed.ParseFromString(bytes));
  EXPECT_NE(log.text().find("more lines of libprotobuf suppressed"), std::string::npos)
      << log.text();
}

}  // namespace
}  // namespace slicestream

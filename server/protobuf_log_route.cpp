#include "server/protobuf_log_route.hpp"

#include <google/protobuf/stubs/logging.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <mutex>
#include <string>

#include "server/log_throttle.hpp"
#include "wire/wire_text.hpp"

namespace slicestream {
namespace {

std::atomic<std::uint64_t> lines{0};

// libprotobuf logs from whichever thread parses: the endpoints' threads share one throttle.
std::mutex throttle_mutex;
LogThrottle throttle(kProtobufLinesPerSecond);

spdlog::level::level_enum level_of(google::protobuf::LogLevel level) {
  switch (level) {
    case google::protobuf::LOGLEVEL_INFO:
      return spdlog::level::info;
    case google::protobuf::LOGLEVEL_WARNING:
      return spdlog::level::warn;
    case google::protobuf::LOGLEVEL_ERROR:
      return spdlog::level::err;
    case google::protobuf::LOGLEVEL_FATAL:
      return spdlog::level::critical;
  }
  return spdlog::level::err;
}

void log_protobuf_line(google::protobuf::LogLevel level, const char* filename, int line,
                       const std::string& message) {
  lines.fetch_add(1, std::memory_order_relaxed);
  std::uint64_t suppressed = 0;
  {
    const std::lock_guard<std::mutex> lock(throttle_mutex);
    if (!throttle.allow(&suppressed)) return;
  }
  const std::string where = filename != nullptr ? escape_wire_text(filename) : std::string("?");
  // libprotobuf ends some messages in a space or a newline.
  const std::string text = escape_wire_text(message.substr(0, message.find_last_not_of(" \n") + 1));
  if (suppressed > 0) {
    spdlog::log(level_of(level),
                "libprotobuf ({}:{}): {} ({} more lines of libprotobuf suppressed)", where, line,
                text, suppressed);
  } else {
    spdlog::log(level_of(level), "libprotobuf ({}:{}): {}", where, line, text);
  }
}

}  // namespace

void route_protobuf_logs() {
  static std::once_flag installed;
  std::call_once(installed, [] { google::protobuf::SetLogHandler(&log_protobuf_line); });
}

std::uint64_t protobuf_log_lines() {
  return lines.load(std::memory_order_relaxed);
}

}  // namespace slicestream

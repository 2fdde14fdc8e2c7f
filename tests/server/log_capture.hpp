// Captures what the server logs (spdlog's default logger) while it lives, for tests that check
// what reaches the log.
#pragma once

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace slicestream::test {

class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_)) {
    sink_->set_pattern("[%l] %v");
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // Every line logged so far.
  std::vector<std::string> lines() {
    sink_->flush();
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> lines;
    std::istringstream in(stream_.str());
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    return lines;
  }
  std::string text() {
    sink_->flush();
    std::lock_guard<std::mutex> lock(mutex_);
    return stream_.str();
  }

 private:
  std::mutex mutex_;
  std::ostringstream stream_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

}  // namespace slicestream::test

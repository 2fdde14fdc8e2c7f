// Captures what the server logs (spdlog's default logger) while it lives, for tests that check
// what reaches the log.
#pragma once

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace slicestream::test {

// A sink that keeps the formatted lines in memory, under the sink's own lock: the server's
// threads log while the test reads.
class CapturingSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    spdlog::memory_buf_t formatted;
    formatter_->format(message, formatted);
    text_.append(formatted.data(), formatted.size());
  }
  void flush_() override {}

 private:
  std::string text_;
};

class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<CapturingSink>()) {
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
    std::vector<std::string> lines;
    std::istringstream in(sink_->text());
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    return lines;
  }
  std::string text() { return sink_->text(); }

 private:
  std::shared_ptr<CapturingSink> sink_;
};

}  // namespace slicestream::test

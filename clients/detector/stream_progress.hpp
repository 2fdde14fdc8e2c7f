// Progress of a running stream on one updating stderr line (frames, rate, MB/s, ETA, stalls) and
// the final summary. The reporter runs on its own thread so that it keeps reporting while the
// sender is blocked by back-pressure.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

#include "clients/detector/frame_scheduler.hpp"

namespace slicestream::detector {

// Written by the sender, read by the reporter.
struct StreamCounters {
  std::atomic<std::uint64_t> frames_sent{0};
  std::atomic<std::uint64_t> bytes_sent{0};
  // Steady-clock time (ns) at which the current send started blocking; 0 when not in a send.
  std::atomic<std::int64_t> send_started_ns{0};
};

struct StreamSummary {
  std::string endpoint;
  std::uint64_t scan_id = 0;
  std::uint64_t darks = 0;
  std::uint64_t flats = 0;
  std::uint64_t projections = 0;
  std::uint64_t projections_planned = 0;
  std::uint64_t bytes = 0;
  double seconds = 0;          // from ScanBegin to the last frame
  double sending_seconds = 0;  // from the first frame to the last: the rates' time base
  double blocked_seconds = 0;  // time spent inside sends (back-pressure)
  double flush_seconds = 0;    // waiting at the end for queued frames to leave
  double target_fps = 0;
  ScheduleStats schedule;
  bool interrupted = false;
  bool scan_end_sent = false;
  // The server's confirmation that it has the whole scan (through its requests endpoint).
  bool confirmation_requested = false;  // false with --no-confirm
  bool confirmed = false;
  std::string confirmation;    // what the server confirmed, or why it did not
  double confirm_seconds = 0;  // waiting for it, after ScanEnd
  int connections_lost = 0;    // the data connection dropped while streaming (frames may be lost)
};

std::string format_summary(const StreamSummary& summary);
// "1.5 s", "2:03", "1:02:03": durations for people.
std::string format_duration(double seconds);

class ProgressReporter {
 public:
  // `interactive`: redraw one line with '\r' several times a second (a terminal); otherwise a
  // plain line every few seconds (logs).
  ProgressReporter(const StreamCounters& counters, std::uint64_t total_frames, std::string endpoint,
                   std::ostream& out, bool interactive);
  ~ProgressReporter();  // stops
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  void stop();  // final redraw, newline

 private:
  void run();
  std::string line(double elapsed_s, double recent_fps, double recent_bytes_per_s) const;

  const StreamCounters& counters_;
  const std::uint64_t total_frames_;
  const std::string endpoint_;
  std::ostream& out_;
  const bool interactive_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace slicestream::detector

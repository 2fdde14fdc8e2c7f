#include "clients/detector/stream_progress.hpp"

#include <cmath>
#include <cstdio>
#include <deque>
#include <sstream>

#include "kernels/steady_clock.hpp"

namespace slicestream::detector {

namespace {

constexpr double kMegabyte = 1e6;
// Rates shown are over this recent window, so that a stall shows up at once.
constexpr double kRateWindowS = 2.0;
// A send blocked this long gets a hint on the progress line.
constexpr double kStallHintS = 3.0;

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  if (seconds < 60) return fixed(seconds, 1) + " s";
  const long total = std::lround(seconds);
  char text[32];
  if (total < 3600) {
    std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  } else {
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  }
  return text;
}

std::string format_summary(const StreamSummary& s) {
  const std::uint64_t frames = s.darks + s.flats + s.projections;
  // n frames span n - 1 frame intervals: counted so, a steady 83 Hz stream reads 83.0.
  const double span_s = s.sending_seconds;
  const double intervals = frames > 1 ? static_cast<double>(frames - 1) : 0;
  const double fps = span_s > 0 ? intervals / span_s : 0;
  const double bytes_per_s =
      span_s > 0 && frames > 0
          ? static_cast<double>(s.bytes) * (intervals / static_cast<double>(frames)) / span_s
          : 0;
  std::ostringstream out;
  out << (s.interrupted ? "interrupted: " : "") << "scan " << s.scan_id << " -> " << s.endpoint
      << "\n  sent " << frames << " frames (" << s.darks << " darks, " << s.flats << " flats, "
      << s.projections << " of " << s.projections_planned << " projections), "
      << fixed(static_cast<double>(s.bytes) / kMegabyte, 1) << " MB in "
      << format_duration(s.seconds) << "\n  rate " << fixed(fps, 1) << " frames/s";
  if (s.target_fps > 0) out << " (target " << fixed(s.target_fps, 1) << ")";
  out << ", " << fixed(bytes_per_s / kMegabyte, 1) << " MB/s"
      << "\n  blocked by back-pressure " << format_duration(s.blocked_seconds);
  if (s.target_fps > 0) {
    out << "; " << s.schedule.late_frames << " frames late (max "
        << fixed(std::chrono::duration<double, std::milli>(s.schedule.max_lateness).count(), 1)
        << " ms behind schedule)";
  }
  if (s.flush_seconds > 1) {
    out << "\n  waited " << format_duration(s.flush_seconds)
        << " for queued frames to leave: is a server reading " << s.endpoint << "?";
  }
  if (s.scan_end_sent) {
    out << "\n  ScanEnd frames_sent=" << s.projections;
  } else {
    out << "\n  ScanEnd NOT sent (interrupted while the server was not reading)";
  }
  if (s.connections_lost > 0) {
    out << "\n  the data connection to the server dropped " << s.connections_lost
        << (s.connections_lost == 1 ? " time" : " times")
        << " during the scan: frames queued then may be lost";
  }
  if (s.confirmation_requested) {
    out << "\n  " << (s.confirmed ? "confirmed: " : "NOT confirmed: ") << s.confirmation;
  } else {
    out << "\n  not confirmed by the server (--no-confirm)";
  }
  return out.str();
}

ProgressReporter::ProgressReporter(const StreamCounters& counters, std::uint64_t total_frames,
                                   std::string endpoint, std::ostream& out, bool interactive)
    : counters_(counters),
      total_frames_(total_frames),
      endpoint_(std::move(endpoint)),
      out_(out),
      interactive_(interactive),
      thread_([this] { run(); }) {}

ProgressReporter::~ProgressReporter() {
  stop();
}

void ProgressReporter::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::string ProgressReporter::line(double elapsed_s, double recent_fps,
                                   double recent_bytes_per_s) const {
  const std::uint64_t sent = counters_.frames_sent.load();
  std::ostringstream text;
  text << sent << "/" << total_frames_ << " frames ("
       << (total_frames_ ? 100 * sent / total_frames_ : 100) << "%)  " << fixed(recent_fps, 1)
       << " fps  " << fixed(recent_bytes_per_s / kMegabyte, 1) << " MB/s  elapsed "
       << format_duration(elapsed_s);
  if (sent < total_frames_ && recent_fps > 0) {
    text << "  ETA " << format_duration(static_cast<double>(total_frames_ - sent) / recent_fps);
  }
  const std::int64_t send_started = counters_.send_started_ns.load();
  if (send_started != 0) {
    const double blocked_s =
        static_cast<double>(static_cast<std::int64_t>(steady_now_ns()) - send_started) * 1e-9;
    if (blocked_s > kStallHintS) {
      text << "  [blocked " << fixed(blocked_s, 0) << " s: is a server reading " << endpoint_
           << "?]";
    }
  }
  return text.str();
}

void ProgressReporter::run() {
  struct Sample {
    std::int64_t time_ns;
    std::uint64_t frames;
    std::uint64_t bytes;
  };
  const auto interval = interactive_ ? std::chrono::milliseconds(250) : std::chrono::seconds(5);
  const std::int64_t start_ns = static_cast<std::int64_t>(steady_now_ns());
  std::deque<Sample> samples{{start_ns, 0, 0}};
  std::size_t last_width = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    const bool stopping = wake_.wait_for(lock, interval, [this] { return stopping_; });
    const Sample now{static_cast<std::int64_t>(steady_now_ns()), counters_.frames_sent.load(),
                     counters_.bytes_sent.load()};
    samples.push_back(now);
    while (samples.size() > 2 && now.time_ns - samples[1].time_ns > kRateWindowS * 1e9) {
      samples.pop_front();
    }
    const Sample& first = samples.front();
    const double window_s = static_cast<double>(now.time_ns - first.time_ns) * 1e-9;
    const double fps = window_s > 0 ? static_cast<double>(now.frames - first.frames) / window_s : 0;
    const double bytes_per_s =
        window_s > 0 ? static_cast<double>(now.bytes - first.bytes) / window_s : 0;
    std::string text = line(static_cast<double>(now.time_ns - start_ns) * 1e-9, fps, bytes_per_s);
    if (interactive_) {
      const std::size_t width = text.size();
      if (width < last_width) text.append(last_width - width, ' ');  // erase the longer old line
      last_width = width;
      out_ << '\r' << text << (stopping ? "\n" : "") << std::flush;
    } else {
      out_ << text << '\n' << std::flush;  // a log line every interval and a final one
    }
    if (stopping) return;
  }
}

}  // namespace slicestream::detector

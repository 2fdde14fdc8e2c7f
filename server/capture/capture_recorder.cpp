#include "server/capture/capture_recorder.hpp"

#include <spdlog/spdlog.h>

#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace slicestream {

namespace {

namespace fs = std::filesystem;

// UTC, e.g. 20261125T211836Z: sorts by time, safe in every file system.
std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
  return text;
}

}  // namespace

CaptureRecorder::CaptureRecorder(CaptureConfig config)
    : config_(std::move(config)), pretrigger_(config_.pretrigger_bytes) {
  std::error_code error;
  fs::create_directories(config_.directory, error);
  const fs::path probe = fs::path(config_.directory) / ".slicestream-capture-probe";
  std::FILE* file = error ? nullptr : std::fopen(probe.c_str(), "w");
  if (file == nullptr) {
    throw std::runtime_error("capture directory " + config_.directory + " cannot be written" +
                             (error ? ": " + error.message() : ""));
  }
  std::fclose(file);
  fs::remove(probe, error);
  recording_ = config_.every_scan;
  thread_ = std::thread([this] { run_writer(); });
  spdlog::info("capture: {} into {} (pre-trigger {} MiB, queue {} MiB)",
               recording_ ? "recording every scan" : "on request", config_.directory,
               config_.pretrigger_bytes >> 20, config_.queue_bytes >> 20);
}

CaptureRecorder::~CaptureRecorder() {
  shutdown();
}

void CaptureRecorder::observe_scan_begin(std::uint64_t scan_id, std::string data_header) {
  std::lock_guard lock(mutex_);
  if (file_open_) close_file_locked("next_scan", false);
  pretrigger_.clear();
  scan_ = Scan{scan_id, std::move(data_header)};
  if (recording_) open_file_locked();
}

bool CaptureRecorder::observe_frame(const RawFrame& frame) {
  std::lock_guard lock(mutex_);
  if (!scan_ || frame.scan_id != scan_->id) return true;  // the pipeline refuses it, too
  pretrigger_.push(frame);
  return !file_open_ || enqueue_frame_locked(frame, /*bounded=*/true);
}

void CaptureRecorder::observe_scan_end(std::uint64_t scan_id) {
  std::lock_guard lock(mutex_);
  if (!scan_ || scan_id != scan_->id) return;
  if (file_open_) close_file_locked("scan_end", true);
  scan_.reset();
  pretrigger_.clear();
}

CaptureReply CaptureRecorder::start(const std::string& label) {
  std::lock_guard lock(mutex_);
  if (stopping_) return {{StatusCode::kUnavailable, "the server is stopping"}, status_locked()};
  const bool already = recording_;
  recording_ = true;
  label_ = label;
  std::string message;
  if (scan_ && !file_open_) {
    open_file_locked();
    std::size_t pretrigger = 0;
    for (RawFrame& frame : pretrigger_.take()) {
      ++pretrigger;
      // Already held in memory: moving them to the queue allocates nothing, so no bound.
      enqueue_frame_locked(std::move(frame), /*bounded=*/false);
    }
    message = "recording scan " + std::to_string(scan_->id) + " to " + file_ + " (" +
              std::to_string(pretrigger) + " pre-trigger frames)";
  } else if (scan_) {
    message = "already recording scan " + std::to_string(scan_->id) + " to " + file_;
  } else {
    message = "recording from the next scan";
  }
  if (!already) spdlog::info("capture started: {}", message);
  return {{StatusCode::kOk, message}, status_locked()};
}

CaptureReply CaptureRecorder::stop() {
  std::lock_guard lock(mutex_);
  const bool was_recording = recording_;
  recording_ = false;
  std::string message = "capture was not recording";
  if (file_open_) {
    close_file_locked("stopped", false);
    message = "stopped; " + file_ + " is being finished";
  } else if (was_recording) {
    message = "stopped between scans";
  }
  if (was_recording) spdlog::info("capture stopped: {}", message);
  return {{StatusCode::kOk, message}, status_locked()};
}

v1::CaptureStatus CaptureRecorder::status() const {
  std::lock_guard lock(mutex_);
  return status_locked();
}

void CaptureRecorder::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    if (file_open_) close_file_locked("shutdown", false);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CaptureRecorder::open_file_locked() {
  file_ = next_path_locked();
  Item item;
  item.kind = Item::Kind::kOpen;
  item.path = file_;
  item.data_header = scan_->data_header;
  queue_.push_back(std::move(item));
  file_open_ = true;
  dropped_in_file_ = 0;
  wake_.notify_one();
}

void CaptureRecorder::close_file_locked(const char* reason, bool scan_ended) {
  Item item;
  item.kind = Item::Kind::kClose;
  item.summary = {scan_ended, dropped_in_file_, reason};
  queue_.push_back(std::move(item));
  file_open_ = false;
  wake_.notify_one();
}

bool CaptureRecorder::enqueue_frame_locked(RawFrame frame, bool bounded) {
  if (bounded && queued_bytes_ + frame.payload_bytes > config_.queue_bytes) {
    ++frames_dropped_;
    ++dropped_in_file_;
    return false;
  }
  queued_bytes_ += frame.payload_bytes;
  Item item;
  item.kind = Item::Kind::kFrame;
  item.frame = std::move(frame);
  queue_.push_back(std::move(item));
  wake_.notify_one();
  return true;
}

std::string CaptureRecorder::next_path_locked() const {
  std::string stem = "scan-" + std::to_string(scan_->id) + "-" + utc_stamp();
  if (!label_.empty()) stem += "-" + label_;
  fs::path path = fs::path(config_.directory) / (stem + ".h5");
  for (int n = 2; fs::exists(path) || path.string() == file_; ++n) {
    path = fs::path(config_.directory) / (stem + "-" + std::to_string(n) + ".h5");
  }
  return path.string();
}

v1::CaptureStatus CaptureRecorder::status_locked() const {
  v1::CaptureStatus status;
  status.set_state(file_open_ ? "recording" : recording_ ? "waiting_for_scan" : "idle");
  status.set_directory(config_.directory);
  status.set_file(file_);
  status.set_files(files_);
  status.set_frames_written(frames_written_);
  status.set_bytes_written(bytes_written_);
  status.set_frames_dropped(frames_dropped_);
  status.set_frames_skipped(frames_skipped_);
  status.set_queued_bytes(queued_bytes_);
  status.set_pretrigger_bytes(pretrigger_.bytes());
  status.set_pretrigger_evicted(pretrigger_.evicted());
  status.set_write_errors(write_errors_);
  status.set_last_error(last_error_);
  return status;
}

void CaptureRecorder::run_writer() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, and everything queued is written
    Item item = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    write(item);
    lock.lock();
    if (item.kind == Item::Kind::kFrame) queued_bytes_ -= item.frame.payload_bytes;
  }
}

// Writer thread, without the lock (the counters it changes are taken under it).
void CaptureRecorder::write(Item& item) {
  try {
    switch (item.kind) {
      case Item::Kind::kOpen:
        writer_ = std::make_unique<DxchangeWriter>(item.path, item.data_header);
        return;
      case Item::Kind::kFrame: {
        if (!writer_) {  // the file failed: the frame is lost, and counted
          std::lock_guard lock(mutex_);
          ++frames_dropped_;
          return;
        }
        const bool written = writer_->append(item.frame);
        std::lock_guard lock(mutex_);
        if (written) {
          ++frames_written_;
          bytes_written_ += item.frame.payload_bytes;
        } else {
          ++frames_skipped_;
        }
        return;
      }
      case Item::Kind::kClose: {
        if (!writer_) return;
        writer_->finish(item.summary);
        spdlog::info("capture: {} written ({} frames, {} dropped, {})", writer_->path(),
                     writer_->frames_written(), item.summary.frames_dropped,
                     item.summary.end_reason);
        writer_.reset();
        std::lock_guard lock(mutex_);
        ++files_;
        return;
      }
    }
  } catch (const std::exception& error) {
    spdlog::error("{}", error.what());
    writer_.reset();
    std::lock_guard lock(mutex_);
    ++write_errors_;
    last_error_ = error.what();
    if (item.kind == Item::Kind::kFrame) ++frames_dropped_;
  }
}

}  // namespace slicestream

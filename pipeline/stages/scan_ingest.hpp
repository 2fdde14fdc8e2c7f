// The ingest stage's logic: the scan state machine and the semantic validation of every data
// message. Accepted frames leave with their window placement; everything else is counted by
// reason and reported (EventReporter). Runs on the ingest thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>

#include "pipeline/messages/stage_items.hpp"
#include "pipeline/metrics/event_reporter.hpp"
#include "pipeline/metrics/metrics_registry.hpp"
#include "pipeline/stages/calibration_accumulator.hpp"

namespace slicestream {

class ScanIngest {
 public:
  // Hands an item to the preprocess stage; false when the pipeline is stopping.
  using Forward = std::function<bool(StageItem&&)>;

  using Clock = std::chrono::steady_clock;

  // `scan_timeout_s` > 0: a running scan without a message for that long ends (on_tick).
  ScanIngest(MetricsRegistry& metrics, EventReporter& events, Forward forward,
             double scan_timeout_s = 0);

  void handle(ScanBegin&& message);
  void handle(RawFrame&& frame);
  void handle(ScanEnd&& message);
  // Ends the running scan when its data stopped for the scan timeout.
  void on_tick(Clock::time_point now);
  // When on_tick() next has something to do (Clock::time_point::max() for never).
  Clock::time_point next_deadline() const;

 private:
  enum class State { kIdle, kActive };

  // Remembers the last few scan ids of a kind, to name the reason of a late frame precisely.
  class RecentIds {
   public:
    void add(std::uint64_t id);
    bool contains(std::uint64_t id) const;

   private:
    std::deque<std::uint64_t> ids_;
  };

  void start_scan(ScanDescription&& scan);
  // superseded_by: the scan whose ScanBegin ends this one; none: its ScanEnd.
  // `end_reason` as ScanLog::ended takes it; `why` for the log and GetStatus.scan_end_reason.
  void end_scan(const std::string& why, const char* end_reason,
                std::optional<std::uint64_t> superseded_by = {});
  // Empty when `frame` belongs to the active scan and is well-formed; else sets `reason`.
  std::string frame_problem(const RawFrame& frame, DiscardReason& reason) const;
  void accept_calibration_frame(RawFrame&& frame);
  void accept_projection(RawFrame&& frame);
  bool send_calibration();
  // Waits for the reconstruct stage to execute `item`'s promise; false when stopping.
  bool forward_and_wait(StageItem&& item, std::future<Status> outcome, Status& status);
  bool forward(StageItem&& item, std::uint64_t frames);
  void discard(DiscardReason reason, const std::string& message, std::uint64_t scan_id);
  std::string describe(const RawFrame& frame) const;

  MetricsRegistry& metrics_;
  EventReporter& events_;
  Forward forward_;
  const std::chrono::duration<double> scan_timeout_;
  Clock::time_point last_data_{};  // the running scan's newest message

  State state_ = State::kIdle;
  ScanDescription scan_;
  CalibrationAccumulator calibration_;
  bool calibration_sent_ = false;
  std::uint64_t projections_accepted_ = 0;
  std::uint64_t projections_seen_ = 0;  // accepted or not, for the sender's frames_sent
  RecentIds ended_;
  RecentIds rejected_;
};

}  // namespace slicestream

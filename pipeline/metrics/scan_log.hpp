// The server's recent scans, each with what became of the messages that carried its id:
// accepted, integrated, refused (by reason), and how the scan ended (its ScanEnd, or superseded
// by another scan's ScanBegin). Written by the ingest and reconstruct stages, read by GetStatus
// from any thread; a sender confirms its own scan from its record (client::ScanConfirmer).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernels/frame_view.hpp"
#include "pipeline/messages/metrics_snapshot.hpp"

namespace slicestream {

class ScanLog {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kScansKept = 16;

  // A scan started; `number` is the server's scans_started count with it.
  void begin(std::uint64_t scan_id, std::uint64_t number);
  void accepted(std::uint64_t scan_id, FrameKind kind);
  void integrated(std::uint64_t scan_id);
  // A message carrying `scan_id` was refused (nothing is recorded for unknown scans).
  void refused(std::uint64_t scan_id, const std::string& reason);
  // `end_reason`: "scan_end" (its ScanEnd arrived), "superseded" (by the ScanBegin of scan
  // `superseded_by`) or "timeout" (no data for --scan-timeout).
  void ended(std::uint64_t scan_id, const char* end_reason,
             std::optional<std::uint64_t> superseded_by = {});
  // The reconstruct stage handled the scan's end: every frame accepted before it is integrated
  // (or discarded), so the record's counts are final.
  void reconstructed(std::uint64_t scan_id);

  // Oldest first.
  std::vector<ScanRecord> recent() const;

 private:
  struct Entry {
    ScanRecord record;
    Clock::time_point last_frame{};
    bool any_frame = false;
  };
  // The newest record of `scan_id` (ids may be reused), or null.
  Entry* find(std::uint64_t scan_id);

  mutable std::mutex mutex_;
  std::deque<Entry> scans_;
};

}  // namespace slicestream

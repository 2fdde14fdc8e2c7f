#include "pipeline/metrics/scan_log.hpp"

namespace slicestream {

ScanLog::Entry* ScanLog::find(std::uint64_t scan_id) {
  for (auto it = scans_.rbegin(); it != scans_.rend(); ++it) {
    if (it->record.scan_id == scan_id) return &*it;
  }
  return nullptr;
}

void ScanLog::begin(std::uint64_t scan_id, std::uint64_t number) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry entry;
  entry.record.scan_id = scan_id;
  entry.record.number = number;
  scans_.push_back(std::move(entry));
  while (scans_.size() > kScansKept)
    scans_.pop_front();
}

void ScanLog::accepted(std::uint64_t scan_id, FrameKind kind) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry* entry = find(scan_id);
  if (entry == nullptr) return;
  ScanRecord& r = entry->record;
  ++(kind == FrameKind::kDark   ? r.darks_accepted
     : kind == FrameKind::kFlat ? r.flats_accepted
                                : r.projections_accepted);
  entry->last_frame = Clock::now();
  entry->any_frame = true;
}

void ScanLog::integrated(std::uint64_t scan_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (Entry* entry = find(scan_id)) ++entry->record.projections_integrated;
}

void ScanLog::refused(std::uint64_t scan_id, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (Entry* entry = find(scan_id)) ++entry->record.discards[reason];
}

void ScanLog::ended(std::uint64_t scan_id, const char* end_reason,
                    std::optional<std::uint64_t> superseded_by) {
  std::lock_guard<std::mutex> lock(mutex_);
  Entry* entry = find(scan_id);
  if (entry == nullptr || entry->record.ended) return;
  entry->record.ended = true;
  entry->record.end_reason = end_reason;
  entry->record.superseded_by = superseded_by.value_or(0);
}

void ScanLog::reconstructed(std::uint64_t scan_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (Entry* entry = find(scan_id)) entry->record.reconstructed = true;
}

std::vector<ScanRecord> ScanLog::recent() const {
  const Clock::time_point now = Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ScanRecord> records;
  for (const Entry& entry : scans_) {
    ScanRecord record = entry.record;
    if (entry.any_frame) {
      record.last_frame_age_s = std::chrono::duration<double>(now - entry.last_frame).count();
    }
    records.push_back(std::move(record));
  }
  return records;
}

}  // namespace slicestream

#include "pipeline/stages/publication_schedule.hpp"

#include <algorithm>

namespace slicestream {
namespace {

std::chrono::nanoseconds period_of(double rate_hz) {
  if (rate_hz <= 0) return std::chrono::nanoseconds(0);
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(1.0 / rate_hz));
}

}  // namespace

bool PublicationSchedule::mark_dirty(std::uint32_t id) {
  Entry& entry = entries_[id];
  const bool replaced = entry.dirty && entry.held;
  entry.dirty = true;
  entry.held = false;  // the new update is due on its own terms
  return replaced;
}

bool PublicationSchedule::any_dirty() const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [](const auto& entry) { return entry.second.dirty; });
}

std::vector<std::uint32_t> PublicationSchedule::due(Clock::time_point now, double rate_hz,
                                                    bool force) const {
  const std::chrono::nanoseconds period = period_of(rate_hz);
  std::vector<std::uint32_t> ids;
  for (const auto& [id, entry] : entries_) {
    if (!entry.dirty || now < entry.held_until) continue;
    if (force || now - entry.last_publish >= period) ids.push_back(id);
  }
  return ids;
}

PublicationSchedule::Clock::time_point PublicationSchedule::next_due(double rate_hz) const {
  const std::chrono::nanoseconds period = period_of(rate_hz);
  Clock::time_point next = Clock::time_point::max();
  for (const auto& [id, entry] : entries_) {
    if (entry.dirty && !entry.held) {
      next = std::min(next, std::max(entry.last_publish + period, entry.held_until));
    }
  }
  return next;
}

std::uint64_t PublicationSchedule::published(std::uint32_t id, Clock::time_point now) {
  Entry& entry = entries_[id];
  entry.dirty = false;
  entry.held = false;
  entry.last_publish = now;
  return ++entry.sequence;
}

bool PublicationSchedule::restart(std::uint32_t id) {
  Entry& entry = entries_[id];
  const bool dropped = entry.dirty && entry.held;
  entry.dirty = false;
  entry.held = false;
  entry.last_publish = Clock::time_point{};
  entry.held_until = Clock::time_point{};
  return dropped;
}

void PublicationSchedule::clear_dirty() {
  for (auto& [id, entry] : entries_) {
    entry.dirty = false;
    entry.held = false;
  }
}

}  // namespace slicestream

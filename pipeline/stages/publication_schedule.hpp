// When the reconstruct stage publishes each slice: a slice whose live image changed is dirty; it
// is published at once when publish_rate_hz is 0, else at most publish_rate_hz times a second,
// and one held back by the rate is published when its time comes, without waiting for another
// frame. A publication the memory budget cannot take now stays dirty and is tried again a moment
// later (retry_at); one whose previous publications still wait for the publish stage stays dirty
// and due (held_back) until the publish stage takes one. Also the per-slice publication sequence
// numbers.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

namespace slicestream {

class PublicationSchedule {
 public:
  using Clock = std::chrono::steady_clock;

  // The live image of `id` changed. True when this replaces an update that was due but held back
  // (held_back): that update is never published (coalesced into this one).
  bool mark_dirty(std::uint32_t id);
  // A due slice waits for the publish stage (PublicationBacklog): it stays dirty and due.
  void held_back(std::uint32_t id) { entries_[id].held = true; }
  bool any_dirty() const;
  // The dirty slices due at `now` (every dirty one when `force`), in id order.
  std::vector<std::uint32_t> due(Clock::time_point now, double rate_hz, bool force) const;
  // When the next dirty slice is due; Clock::time_point::max() when none is dirty. A slice held
  // back is left out: it is due already, and what it waits for is not a time.
  Clock::time_point next_due(double rate_hz) const;
  // A publication of `id` goes out at `now`: it is clean; returns its sequence number (1, 2, ...).
  std::uint64_t published(std::uint32_t id, Clock::time_point now);

  // `id` stays dirty but is not due before `until` (its image did not fit in the memory budget).
  void retry_at(std::uint32_t id, Clock::time_point until) { entries_[id].held_until = until; }
  // A slice set anew: clean and due at once; its sequence goes on. True when an update held back
  // is dropped (the slice's new image replaces it).
  bool restart(std::uint32_t id);
  // A slice gone: a slice set later under its id starts a new sequence.
  void forget(std::uint32_t id) { entries_.erase(id); }
  // The scan's targets are gone: nothing is dirty.
  void clear_dirty();

 private:
  struct Entry {
    bool dirty = false;
    bool held = false;  // the dirty update was due and held back
    Clock::time_point last_publish{};
    std::uint64_t sequence = 0;
    Clock::time_point held_until{};
  };
  std::map<std::uint32_t, Entry> entries_;
};

}  // namespace slicestream

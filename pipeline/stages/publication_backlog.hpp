// Slice publications handed to the publish stage that it has not taken yet, per slice: how the
// reconstruct stage tells that the publish stage is behind. While kMaxWaiting publications of a
// slice wait, or `room` publications of all slices together (so that many slices never fill the
// publish queue and block the reconstruct stage), the reconstruct stage does not queue (nor read
// back) that slice again: it stays due,
// a newer update replaces the one held back (latest wins, each publication complete; counted as
// coalesced), and the publish stage wakes the reconstruct stage when it takes one of them, so the
// slice's latest state goes out at once, also when no further frame arrives. A publish stage that
// keeps up gets every update; one that cannot thins the publications instead of holding up
// reconstruction. Shared by the two stage threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>

namespace slicestream {

class PublicationBacklog {
 public:
  // Two, not one: a publish stage that keeps up on average is often still on the previous
  // update's images (every slice's, one after the other) when the next update is ready.
  static constexpr int kMaxWaiting = 2;

  // `room`: the most slice publications that may wait in all (part of the publish queue's depth).
  explicit PublicationBacklog(std::size_t room = std::numeric_limits<std::size_t>::max())
      : room_(room) {}

  // The reconstruct stage queued a publication of `slice_id`.
  void queued(std::uint32_t slice_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++entries_[slice_id].waiting;
    ++total_;
  }

  // The publish stage took one of them off its queue. True when the reconstruct stage holds the
  // slice back (or any slice, for want of room) until this happens: the caller wakes it.
  bool taken(std::uint32_t slice_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(slice_id);
    if (it == entries_.end()) return false;
    --total_;
    const bool wake = it->second.held || held_for_room_;
    held_for_room_ = false;
    it->second.held = false;
    if (--it->second.waiting == 0) entries_.erase(it);
    return wake;
  }

  // The reconstruct stage asks before it queues a due slice: true when the publish stage is
  // behind on it (kMaxWaiting publications wait; the next taken(slice_id) then says to wake) or
  // on all slices together (`room` wait; the next taken() of any slice says to wake).
  bool hold_back(std::uint32_t slice_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (total_ >= room_) {
      held_for_room_ = true;
      return true;
    }
    auto it = entries_.find(slice_id);
    if (it == entries_.end() || it->second.waiting < kMaxWaiting) return false;
    it->second.held = true;
    return true;
  }

 private:
  struct Entry {
    int waiting = 0;
    bool held = false;  // the reconstruct stage waits for the next taken()
  };
  const std::size_t room_;
  std::mutex mutex_;
  std::map<std::uint32_t, Entry> entries_;
  std::size_t total_ = 0;       // waiting, all slices
  bool held_for_room_ = false;  // a slice was held back because total_ reached room_
};

}  // namespace slicestream

#include "server/pending_publications.hpp"

namespace slicestream {

bool PendingPublications::put_latest(Stream stream, std::uint32_t id,
                                     OutgoingPublication publication, bool moved,
                                     Clock::time_point now) {
  const Key key{stream, id};
  const auto found = index_.find(key);
  if (found == index_.end()) {
    Lane& target = moved ? moved_ : in_order_;
    target.push_back(Entry{key, std::move(publication), now});
    index_.emplace(key, Place{&target, std::prev(target.end())});
    return false;
  }
  Place& place = found->second;
  if (moved && place.lane != &moved_) {
    place.lane->erase(place.entry);
    moved_.push_back(Entry{key, std::move(publication), now});
    place = Place{&moved_, std::prev(moved_.end())};
  } else {
    place.entry->publication = std::move(publication);  // keeps its place and its waiting time
  }
  return true;
}

void PendingPublications::put_event(OutgoingPublication publication, Clock::time_point now) {
  in_order_.push_back(Entry{std::nullopt, std::move(publication), now});
}

void PendingPublications::pop_front() {
  Lane& from = lane();
  if (from.front().key) index_.erase(*from.front().key);
  from.pop_front();
}

void PendingPublications::erase(const Key& key) {
  const auto found = index_.find(key);
  if (found == index_.end()) return;
  found->second.lane->erase(found->second.entry);
  index_.erase(found);
}

}  // namespace slicestream

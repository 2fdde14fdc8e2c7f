// The publish stage's check that a slice is never shown at an older place after a newer one. A
// moved slice's image (SliceImage::moved) overtakes the publish queue through its priority lane,
// so routine images of the same slice queued before it (its old place) reach the publish stage
// after it; they are superseded and not published (counted as coalesced). Publications carry the
// order in which the reconstruct stage queued them (SlicePublication::order).
#pragma once

#include <cstdint>
#include <iterator>
#include <map>

#include "pipeline/messages/stage_items.hpp"

namespace slicestream {

class SupersededPublications {
 public:
  // Called for every slice publication the publish stage takes, in the order it takes them.
  // True when a moved image of the same slice, queued later, has been taken already.
  bool superseded(const SlicePublication& publication) {
    const std::uint32_t id = publication.image.slice_id;
    if (publication.image.moved) {
      moved_at_[id] = publication.order;
      return false;
    }
    const auto it = moved_at_.find(id);
    const bool older = it != moved_at_.end() && publication.order < it->second;
    forget_before(publication.order);
    return older;
  }

 private:
  // The routine lane is first in, first out: once a routine image queued at `order` is taken, no
  // image queued before a move older than it can still come.
  void forget_before(std::uint64_t order) {
    for (auto it = moved_at_.begin(); it != moved_at_.end();) {
      it = it->second < order ? moved_at_.erase(it) : std::next(it);
    }
  }

  std::map<std::uint32_t, std::uint64_t> moved_at_;  // slice id -> order of its latest move
};

}  // namespace slicestream

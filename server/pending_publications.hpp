// What the slices endpoint holds for its subscribers while one of them has no room for more (its
// ZeroMQ queue of --slices-hwm messages full): at most one publication per stream (a slice id's
// images, its refined images, the preview), the latest (latest wins: the one it replaces is
// never sent, each sent one is complete), and every event in order (events are never merged).
// A moved slice's image (SliceImage::moved) goes before everything else; the others leave in
// the order they first waited, so a stream updated often does not starve the rest.
// The slices endpoint keeps a second one for what a stalled subscriber missed (the latest sent
// lossy of each stream, to send again once every subscriber has room).
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include <zmq.hpp>

namespace slicestream {

// One message of the slices socket: [topic][PublishHeader][payload, optional].
struct OutgoingPublication {
  const char* topic = "";
  std::string header;  // the serialised PublishHeader
  std::optional<zmq::message_t> payload;
};

class PendingPublications {
 public:
  using Clock = std::chrono::steady_clock;
  // kHalfSlice, kHalfRefined, kHalfPreview: the fp16 publications of the same images and volumes
  // (their own streams).
  enum class Stream { kSlice, kRefined, kPreview, kHalfSlice, kHalfRefined, kHalfPreview };
  using Key = std::pair<Stream, std::uint32_t>;

  // Replaces the waiting publication of (stream, id), if any, in its place in line (a moved one
  // goes to the front lane). True when it replaced one.
  bool put_latest(Stream stream, std::uint32_t id, OutgoingPublication publication, bool moved,
                  Clock::time_point now);
  // Events queue in order, never replaced.
  void put_event(OutgoingPublication publication, Clock::time_point now);

  bool empty() const { return moved_.empty() && in_order_.empty(); }
  std::size_t size() const { return moved_.size() + in_order_.size(); }
  // The next to send (moved slices first), and since when it waits. Not empty() only.
  OutgoingPublication& front() { return lane().front().publication; }
  Clock::time_point front_since() { return lane().front().since; }
  // The stream of the next to send; none for an event. Not empty() only.
  const std::optional<Key>& front_key() { return lane().front().key; }
  void pop_front();
  // Drops the waiting publication of `key`, if any (its memory charge goes with it).
  void erase(const Key& key);

 private:
  struct Entry {
    std::optional<Key> key;  // none: an event
    OutgoingPublication publication;
    Clock::time_point since;
  };
  using Lane = std::list<Entry>;
  struct Place {
    Lane* lane;
    Lane::iterator entry;
  };

  Lane& lane() { return moved_.empty() ? in_order_ : moved_; }

  Lane moved_;
  Lane in_order_;
  std::map<Key, Place> index_;
};

}  // namespace slicestream

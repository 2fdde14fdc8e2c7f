// The slices endpoint: an XPUB socket (bound) implementing PublishSink. Every message is
// [topic "slice"|"preview"|"event"|"refined"][PublishHeader][float32 payload (all but events)].
//
// The pipeline calls it from its publish stage thread; a mutex makes a call from any other thread
// (e.g. an event reported while stopping) safe as well. Publishing never blocks. Each subscriber's
// ZeroMQ queue holds --slices-hwm messages; what does not fit waits here (PendingPublications):
// one publication per slice, refined stream and preview, the latest (latest wins: a newer image
// replaces the waiting one, counted as "publications_superseded"), every event in order, a moved
// slice's image before the rest. So a slow subscriber gets the newest image of every slice
// instead of a backlog of old ones, and a moved slice does not wait behind old images. Sending
// waits for the slowest subscriber (XPUB with ZMQ_XPUB_NODROP has one queue limit for all): a
// subscriber that has taken nothing for kSlowSubscriberWait misses what waits (it goes
// to the subscribers with room; counted as "publications_missed_by_slow_subscribers" and logged),
// and so does what follows until every subscriber has room again, so one stalled viewer holds the
// others back once, for that long (a subscriber that is full at such a moment misses that one too;
// XPUB cannot tell which subscriber had no room). What waits is sent as soon as
// room frees (the publish stage's next call or the housekeeping thread, which then looks every
// millisecond). The subscriptions the XPUB socket receives are read (and dropped) on every
// publication and by the housekeeping thread, so that they cannot pile up. At close what still
// waits gets a moment to leave (the final slices of a scan), then the socket lingers a moment.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "pipeline/messages/publish_sink.hpp"
#include "server/log_throttle.hpp"
#include "server/pending_publications.hpp"
#include "server/server_counters.hpp"
#include "server/socket_security.hpp"
#include "server/transport_monitor.hpp"
#include "slicestream.pb.h"

namespace slicestream {

class SlicePublisher : public PublishSink {
 public:
  // A subscriber that takes nothing for this long is stalled, not slow (a 13 MB slice crosses a
  // 1 Gb/s link in about 0.1 s): what waits then goes to the others without it.
  static constexpr std::chrono::milliseconds kSlowSubscriberWait{200};

  // Binds at once (throws std::runtime_error naming the address on failure).
  SlicePublisher(zmq::context_t& context, const std::string& address, int send_hwm,
                 const ServerSecurity& security, ServerCounters& counters,
                 std::chrono::milliseconds slow_subscriber_wait = kSlowSubscriberWait);
  ~SlicePublisher() override;

  const std::string& address() const { return address_; }  // as bound (resolved port)
  void watch_transport(TransportMonitor& monitor);         // before the first publication

  // A copy of the image, then as publish_shared_slice.
  void publish_slice(const SliceImage& slice) override;
  // The outgoing message points at the image's values (no copy) and holds the image, with its
  // memory charge, until ZeroMQ has sent or dropped it.
  void publish_shared_slice(std::shared_ptr<const SliceImage> slice) override;
  void publish_preview(const PreviewVolume& preview) override;
  void publish_refined(const RefinedSliceImage& refined) override;
  void publish_event(const ServerEvent& event) override;

  void close();  // later publications are ignored
  // Publications waiting for a subscriber's room (PendingPublications).
  std::size_t waiting();

 private:
  // Counts and logs a slice whose values do not fill width x height; true when they do.
  bool values_match(const SliceImage& slice, const char* what);
  // `memory`: the values' charge in the memory budget, held until ZeroMQ lets go of its copy.
  OutgoingPublication outgoing(const char* topic, const v1::PublishHeader& header,
                               const std::vector<float>* values,
                               std::shared_ptr<const void> memory = nullptr);
  // Waits as the latest of its stream (PendingPublications), then sends what fits.
  void put_latest(PendingPublications::Stream stream, std::uint32_t id,
                  OutgoingPublication publication, bool moved = false);
  // Sends what waits, in line, until a subscriber has no room (mutex held). `lossy`: everything
  // goes now, a subscriber without room misses it.
  void send_pending(bool lossy = false);
  // False when a subscriber has no room and not `lossy`.
  bool try_send(OutgoingPublication& publication, bool lossy);
  // Sends the first part; when a subscriber's queue is full and `lossy`, counts the miss and
  // sends it to the subscribers with room. False when it is full and not `lossy`.
  bool send_first_part(zmq::message_t& part, const char* topic, bool lossy);
  // At close (mutex held): what waits gets kWaitingAtClose to leave, then goes lossy.
  void send_waiting_at_close();
  void drain_subscriptions();  // mutex held
  void housekeeping();

  std::mutex mutex_;
  zmq::socket_t socket_;
  PendingPublications pending_;
  const std::chrono::milliseconds slow_subscriber_wait_;
  // The last publication every subscriber had room for.
  PendingPublications::Clock::time_point last_sent_to_all_{};
  std::string address_;
  ServerCounters& counters_;
  LogThrottle log_throttle_;
  bool closed_ = false;
  std::condition_variable closing_;
  std::thread housekeeper_;
};

}  // namespace slicestream

// The slices endpoint: an XPUB socket (bound) implementing PublishSink. Every message is
// [topic "slice"|"preview"|"event"|"refined"][PublishHeader][float32 payload (all but events)],
// or [topic "fp16-slice"|"fp16-refined"|"fp16-preview"][PublishHeader][binary16 payload]: the
// same images and preview volumes in half the bytes, for viewers on links that cannot take float32
// at the detector's rate. fp16 images are encoded (by the publishing thread and the helpers of
// encode_on, outside the lock) only while some subscription covers their topic: the subscriptions
// the XPUB socket receives are tracked. Their buffers are charged to the memory budget (charge_to);
// one that does not fit is not encoded (counted as "publications_fp16_over_budget", logged), its
// float32 twin is sent as always.
//
// The pipeline calls it from its publish stage thread; a mutex makes a call from any other thread
// (e.g. an event reported while stopping) safe as well. Publishing never blocks. Each subscriber's
// ZeroMQ queue holds --slices-hwm messages; what does not fit waits here (PendingPublications):
// one publication per slice, refined stream and preview, the latest (latest wins: a newer image
// replaces the waiting one, counted as "publications_superseded"), every event in order, a moved
// slice's image before the rest. So a slow subscriber gets the newest image of every slice
// instead of a backlog of old ones, and a moved slice does not wait behind old images. Sending
// waits for the slowest subscriber (XPUB with ZMQ_XPUB_NODROP has one queue limit for all): a
// publication that waited kSlowSubscriberWait while some subscriber took nothing goes to the
// subscribers with room without it (counted as "publications_missed_by_slow_subscribers" and
// logged), so a stalled viewer delays the others' images by that wait at most, never stops them
// (a subscriber that is full at such a moment misses that one too; XPUB cannot tell which
// subscriber had no room). What a subscriber missed so is not lost for good. ZeroMQ leaves a
// subscriber that missed a publication out of all that follows until it has room again, without
// a sign; so from the first miss the latest publication of each stream (slice id, refined slice
// id, preview) is kept (a second PendingPublications, sharing the image and its memory charge,
// one per stream) until ZeroMQ has freed every header part sent before each miss (each holds the
// epoch token of its time): then every subscriber has passed on what it held, has room, and the
// kept ones are sent again, unless a newer one of the stream went to all first (counted as
// "publications_resent_after_stall", logged once per episode). The others then get a repeat:
// the same header, sequence and published_ns included. Events are never sent again. What waits is
// sent as soon as room frees (the publish stage's next call or the housekeeping thread, which then
// looks every millisecond; every kResendInterval while only missed publications wait). The
// subscriptions the XPUB socket receives are read (and dropped) on every publication and by the
// housekeeping thread, so that they cannot pile up. At close what still waits (missed publications
// included) gets a moment to leave (the final slices of a scan), then the socket lingers a moment.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "kernels/executor.hpp"
#include "pipeline/backend/memory_budget.hpp"
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
  // Where fp16 payloads are charged (none: nowhere). Before the first publication.
  void charge_to(SharedMemoryBudget budget) { budget_ = std::move(budget); }
  // Who encodes fp16 images beside the publishing thread (default: that thread alone). Outlives
  // the publisher. Before the first publication.
  void encode_on(Executor& executor) { encoder_ = &executor; }

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
  // Publications kept to send again: some subscriber missed them.
  std::size_t missed();

 private:
  // Counts and logs a slice whose values do not fill width x height; true when they do.
  bool values_match(const SliceImage& slice, const char* what);
  // The fp16 publication of `count` values under `header` (their float32 header), when its
  // buffer fits the memory budget; `id` (the slice's, 0 for the preview) names it in the log.
  std::optional<OutgoingPublication> half_outgoing(const char* topic, v1::PublishHeader header,
                                                   const float* values, std::size_t count,
                                                   std::uint32_t id);
  // Reads the subscriptions that arrived and notes which fp16 topics some subscription covers.
  void track_subscription(const zmq::message_t& subscription);  // mutex held
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
  // Where a publication went.
  enum class Delivery { kNoRoom, kToAll, kMissedBySome };
  // kNoRoom only when a subscriber has no room and not `lossy`.
  Delivery try_send(OutgoingPublication& publication, bool lossy);
  // Sends the first part; when a subscriber's queue is full and `lossy`, counts the miss and
  // sends it to the subscribers with room.
  Delivery send_first_part(zmq::message_t& part, const char* topic, bool lossy);
  // After a publication of `key` left: one that some subscriber missed (`sent_copy`, sharing its
  // payload) is kept to send again, replacing the stream's older one; one that went to all makes
  // the kept one of its stream needless.
  void note_delivery(const PendingPublications::Key& key, Delivery delivery,
                     std::optional<OutgoingPublication> sent_copy);
  // Sends again what subscribers missed, while every subscriber has room (mutex held).
  void resend_missed();
  // At close (mutex held): what waits gets kWaitingAtClose to leave, then goes lossy.
  void send_waiting_at_close();
  void drain_subscriptions();  // mutex held
  void housekeeping();

  std::mutex mutex_;
  zmq::socket_t socket_;
  // The topic prefixes subscribed to (XPUB passes each one's first subscription and its last
  // unsubscription, a subscriber's going included).
  std::set<std::string> subscriptions_;
  std::atomic<bool> half_slices_wanted_{false};
  std::atomic<bool> half_refined_wanted_{false};
  std::atomic<bool> half_previews_wanted_{false};
  SharedMemoryBudget budget_;
  InlineExecutor publishing_thread_only_;
  Executor* encoder_ = &publishing_thread_only_;
  PendingPublications pending_;
  // The latest publication of each stream that some subscriber missed (never events).
  PendingPublications missed_;
  bool resend_logged_ = false;  // this episode's resend was logged
  // Held by every header part ZeroMQ holds; a new one after each miss.
  std::shared_ptr<const int> epoch_ = std::make_shared<const int>(0);
  // Some subscriber missed a publication and ZeroMQ may leave it out of what follows: every
  // publication is kept in missed_ until the parts sent before each miss are gone (every
  // stall_barriers_ expired), i.e. every subscriber passed them on and has room again.
  bool stalled_ = false;
  std::vector<std::weak_ptr<const int>> stall_barriers_;
  const std::chrono::milliseconds slow_subscriber_wait_;
  // The last publication sent: what waits is overdue only after a whole wait since, so that a
  // miss gives the subscribers left a whole wait to make room for what follows.
  PendingPublications::Clock::time_point last_sent_{};
  std::string address_;
  ServerCounters& counters_;
  LogThrottle log_throttle_;
  LogThrottle resend_log_throttle_;
  LogThrottle budget_log_throttle_;
  bool closed_ = false;
  std::condition_variable closing_;
  std::thread housekeeper_;
};

}  // namespace slicestream

#include "server/slice_publisher.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "kernels/half_float.hpp"
#include "kernels/steady_clock.hpp"
#include "kernels/thread_name.hpp"
#include "server/codec/publish_codec.hpp"
#include "server/socket_binding.hpp"

namespace slicestream {
namespace {

// How often the housekeeping thread reads subscriptions while nothing waits to be sent.
constexpr std::chrono::milliseconds kHousekeepingInterval{100};
// How often it tries again while something waits for a subscriber's room.
constexpr std::chrono::milliseconds kRetryInterval{1};
// How often it tries again to send what a stalled subscriber missed: a viewer may stay stalled
// for hours, and the one that resumes needs its images within a frame or two, not at once.
constexpr std::chrono::milliseconds kResendInterval{10};
// More waiting publications than this (events are never merged) go out at once, a subscriber
// without room missing them: what waits here stays bounded. Missed publications kept to send
// again are bounded the same way (one per stream; a removed slice's stays until sent).
constexpr std::size_t kMaxWaiting = 256;
// Subscriptions are topic prefixes: a few bytes. Bigger messages from a subscriber close its
// connection (ZeroMQ's transport cap).
constexpr std::int64_t kMaxSubscriptionBytes = 1024;
// At close: how long what still waits, then the last publications in ZeroMQ, may take to leave.
constexpr auto kWaitingAtClose = std::chrono::milliseconds(1000);
constexpr int kLingerAtCloseMs = 1000;

// A copy that shares the payload's buffer and its owner (the image and its memory charge) with
// the original: ZeroMQ counts the references, the last one frees it.
OutgoingPublication shared_copy(OutgoingPublication& publication) {
  OutgoingPublication copy;
  copy.topic = publication.topic;
  copy.header = publication.header;
  if (publication.payload) {
    copy.payload.emplace();
    copy.payload->copy(*publication.payload);
  }
  return copy;
}

// The header part over its own copy of the header, holding `epoch` until ZeroMQ frees the part:
// every pipe it went into has passed it on.
zmq::message_t header_part(const std::string& header, std::shared_ptr<const void> epoch) {
  struct Part {
    std::string bytes;
    std::shared_ptr<const void> epoch;
  };
  auto* part = new Part{header, std::move(epoch)};
  try {
    return zmq::message_t(
        part->bytes.data(), part->bytes.size(),
        [](void*, void* hint) { delete static_cast<Part*>(hint); }, part);
  } catch (...) {
    delete part;  // ZeroMQ took nothing over
    throw;
  }
}

// The image's values as a message part that points at them and holds the image (and with it the
// values' buffer and memory charge) until ZeroMQ has sent or dropped it. No copy.
zmq::message_t image_payload(std::shared_ptr<const SliceImage> image) {
  const SliceValues& values = image->values;
  return payload_message(values.data(), values.size(), std::move(image));
}

}  // namespace

SlicePublisher::SlicePublisher(zmq::context_t& context, const std::string& address, int send_hwm,
                               const ServerSecurity& security, ServerCounters& counters,
                               std::chrono::milliseconds slow_subscriber_wait)
    : socket_(context, zmq::socket_type::xpub),
      slow_subscriber_wait_(slow_subscriber_wait),
      counters_(counters) {
  socket_.set(zmq::sockopt::sndhwm, send_hwm);
  socket_.set(zmq::sockopt::linger, 0);
  socket_.set(zmq::sockopt::xpub_nodrop, true);
  socket_.set(zmq::sockopt::maxmsgsize, kMaxSubscriptionBytes);
  address_ = bind_endpoint(socket_, address, "slices", security);
  housekeeper_ = std::thread([this] { housekeeping(); });
}

SlicePublisher::~SlicePublisher() {
  close();
}

void SlicePublisher::watch_transport(TransportMonitor& monitor) {
  std::lock_guard<std::mutex> lock(mutex_);
  monitor.watch(socket_, "slices");
}

void SlicePublisher::housekeeping() {
  name_this_thread("ss-publisher");
  std::unique_lock<std::mutex> lock(mutex_);
  while (!closed_) {
    closing_.wait_for(lock, !pending_.empty()              ? kRetryInterval
                            : !missed_.empty() || stalled_ ? kResendInterval
                                                           : kHousekeepingInterval);
    if (closed_) break;
    try {
      drain_subscriptions();
    } catch (const zmq::error_t& error) {
      if (error.num() == ETERM) break;
      spdlog::error("slices endpoint: {}", error.what());
    }
    send_pending();
  }
}

void SlicePublisher::drain_subscriptions() {
  zmq::message_t subscription;
  while (socket_.recv(subscription, zmq::recv_flags::dontwait))
    track_subscription(subscription);
}

void SlicePublisher::track_subscription(const zmq::message_t& subscription) {
  // [1][prefix] subscribes, [0][prefix] unsubscribes; anything else is no subscription.
  const auto* bytes = static_cast<const char*>(subscription.data());
  if (subscription.size() == 0 || (bytes[0] != 0 && bytes[0] != 1)) return;
  std::string prefix(bytes + 1, subscription.size() - 1);
  if (bytes[0] == 1) {
    subscriptions_.insert(std::move(prefix));
  } else {
    subscriptions_.erase(prefix);
  }
  const auto covered = [this](const std::string& topic) {
    return std::any_of(subscriptions_.begin(), subscriptions_.end(),
                       [&](const std::string& p) { return topic.compare(0, p.size(), p) == 0; });
  };
  half_slices_wanted_ = covered(kHalfSliceTopic);
  half_refined_wanted_ = covered(kHalfRefinedTopic);
  half_previews_wanted_ = covered(kHalfPreviewTopic);
}

SlicePublisher::Delivery SlicePublisher::send_first_part(zmq::message_t& part, const char* topic,
                                                         bool lossy) {
  if (socket_.send(part, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
    last_sent_ = PendingPublications::Clock::now();
    return Delivery::kToAll;
  }
  if (!lossy) return Delivery::kNoRoom;
  // Some subscriber's queue is still full: it misses this publication, the others get it.
  counters_.add("publications_missed_by_slow_subscribers");
  std::uint64_t suppressed = 0;
  if (log_throttle_.allow(&suppressed)) {
    spdlog::warn(
        "slices endpoint: a subscriber that took nothing for {} ms misses a '{}' publication{}",
        slow_subscriber_wait_.count(), topic,
        suppressed ? " (" + std::to_string(suppressed) + " similar lines suppressed)" : "");
  }
  socket_.set(zmq::sockopt::xpub_nodrop, false);
  try {
    socket_.send(part, zmq::send_flags::sndmore);
  } catch (...) {
    socket_.set(zmq::sockopt::xpub_nodrop, true);
    throw;
  }
  socket_.set(zmq::sockopt::xpub_nodrop, true);
  last_sent_ = PendingPublications::Clock::now();
  return Delivery::kMissedBySome;
}

SlicePublisher::Delivery SlicePublisher::try_send(OutgoingPublication& publication, bool lossy) {
  zmq::message_t first(publication.topic, std::strlen(publication.topic));
  const Delivery delivery = send_first_part(first, publication.topic, lossy);
  if (delivery == Delivery::kNoRoom) return delivery;
  // The rest follows the first part to the same subscribers.
  const bool payload = publication.payload.has_value();
  socket_.send(header_part(publication.header, epoch_),
               payload ? zmq::send_flags::sndmore : zmq::send_flags::none);
  if (payload) socket_.send(*publication.payload, zmq::send_flags::none);
  ++counters_.publications;
  return delivery;
}

void SlicePublisher::send_pending(bool lossy) {
  const auto now = PendingPublications::Clock::now();
  while (!pending_.empty()) {
    // Stalled: no subscriber took anything while this waited.
    const auto stalled_since = std::max(pending_.front_since(), last_sent_);
    const bool overdue =
        lossy || pending_.size() > kMaxWaiting || now - stalled_since >= slow_subscriber_wait_;
    const std::optional<PendingPublications::Key> key = pending_.front_key();
    // Only what may miss a subscriber may be needed again (the copy only counts a reference).
    std::optional<OutgoingPublication> sent_copy;
    if ((overdue || stalled_) && key) sent_copy = shared_copy(pending_.front());
    try {
      const Delivery delivery = try_send(pending_.front(), overdue);
      if (delivery == Delivery::kNoRoom) return;
      if (key) note_delivery(*key, delivery, std::move(sent_copy));
    } catch (const zmq::error_t& error) {
      spdlog::error("slices endpoint: cannot publish a {} message: {}", pending_.front().topic,
                    error.what());
    }
    pending_.pop_front();
  }
  resend_missed();
}

void SlicePublisher::note_delivery(const PendingPublications::Key& key, Delivery delivery,
                                   std::optional<OutgoingPublication> sent_copy) {
  if (delivery == Delivery::kMissedBySome) {
    // ZeroMQ now leaves the full subscriber out of every publication until its queue has room,
    // and says nothing when that happens. It has room once it passed on all that was sent so far.
    // Every miss adds a barrier: a subscriber left out since an earlier one still holds its own.
    stall_barriers_.erase(std::remove_if(stall_barriers_.begin(), stall_barriers_.end(),
                                         [](const auto& barrier) { return barrier.expired(); }),
                          stall_barriers_.end());
    stall_barriers_.push_back(epoch_);
    epoch_ = std::make_shared<const int>(0);
    stalled_ = true;
  }
  if (!stalled_) {
    missed_.erase(key);  // this one went to every subscriber
    return;
  }
  if (!sent_copy) return;
  missed_.put_latest(key.first, key.second, std::move(*sent_copy), /*moved=*/false,
                     PendingPublications::Clock::now());
  if (missed_.size() <= kMaxWaiting) return;
  // The stream missed longest ago is dropped: a stalled subscriber keeps an old image of it.
  counters_.add("publications_not_resent");
  spdlog::warn(
      "slices endpoint: more than {} streams missed by a stalled subscriber; a '{}' "
      "publication will not be sent again",
      kMaxWaiting, missed_.front().topic);
  missed_.pop_front();
}

void SlicePublisher::resend_missed() {
  for (const auto& barrier : stall_barriers_)
    if (!barrier.expired()) return;
  stall_barriers_.clear();
  stalled_ = false;
  if (missed_.empty()) return;
  try {
    drain_subscriptions();  // and so takes in ZeroMQ's word that the subscriber has room again
  } catch (const zmq::error_t& error) {
    spdlog::error("slices endpoint: {}", error.what());
  }
  while (!missed_.empty()) {
    try {
      if (try_send(missed_.front(), /*lossy=*/false) == Delivery::kNoRoom) return;
      counters_.add("publications_resent_after_stall");
      std::uint64_t suppressed = 0;
      if (!resend_logged_ && resend_log_throttle_.allow(&suppressed)) {
        spdlog::info(
            "slices endpoint: every subscriber has room again; sending again the latest "
            "publication of {} streams a stalled subscriber missed{}",
            missed_.size(),
            suppressed ? " (" + std::to_string(suppressed) + " similar lines suppressed)" : "");
      }
      resend_logged_ = true;
    } catch (const zmq::error_t& error) {
      spdlog::error("slices endpoint: cannot send a missed {} message again: {}",
                    missed_.front().topic, error.what());
    }
    missed_.pop_front();
  }
  resend_logged_ = false;  // the episode is over
}

bool SlicePublisher::values_match(const SliceImage& slice, const char* what) {
  const std::size_t expected = static_cast<std::size_t>(std::max(slice.width, 0)) *
                               static_cast<std::size_t>(std::max(slice.height, 0));
  if (expected > 0 && slice.values.size() == expected) return true;
  ++counters_.publications_invalid;
  spdlog::error("not publishing {} {}: {} values for {} x {}", what, slice.slice_id,
                slice.values.size(), slice.width, slice.height);
  return false;
}

void SlicePublisher::publish_slice(const SliceImage& slice) {
  publish_shared_slice(std::make_shared<const SliceImage>(slice));
}

void SlicePublisher::publish_shared_slice(std::shared_ptr<const SliceImage> slice) {
  if (!values_match(*slice, "slice")) return;
  const std::uint32_t id = slice->slice_id;
  const bool moved = slice->moved;
  const v1::PublishHeader header = encode_slice(*slice, steady_now_ns());
  std::optional<OutgoingPublication> half;
  if (half_slices_wanted_) {
    half = half_outgoing(kHalfSliceTopic, header, slice->values.data(), slice->values.size(), id);
  }
  OutgoingPublication publication = outgoing(kSliceTopic, header, nullptr);
  publication.payload = image_payload(std::move(slice));
  put_latest(PendingPublications::Stream::kSlice, id, std::move(publication), moved);
  if (half) put_latest(PendingPublications::Stream::kHalfSlice, id, std::move(*half), moved);
}

void SlicePublisher::publish_refined(const RefinedSliceImage& refined) {
  if (!values_match(refined.slice, "refined slice")) return;
  const std::uint32_t id = refined.slice.slice_id;
  const v1::PublishHeader header = encode_refined(refined, steady_now_ns());
  std::optional<OutgoingPublication> half;
  if (half_refined_wanted_) {
    half = half_outgoing(kHalfRefinedTopic, header, refined.slice.values.data(),
                         refined.slice.values.size(), id);
  }
  OutgoingPublication publication = outgoing(kRefinedTopic, header, nullptr);
  // A copy of the image, whose values are shared with the pipeline's (slice_values.hpp).
  publication.payload = image_payload(std::make_shared<const SliceImage>(refined.slice));
  put_latest(PendingPublications::Stream::kRefined, id, std::move(publication));
  if (half) put_latest(PendingPublications::Stream::kHalfRefined, id, std::move(*half));
}

std::optional<OutgoingPublication> SlicePublisher::half_outgoing(const char* topic,
                                                                 v1::PublishHeader header,
                                                                 const float* values,
                                                                 std::size_t count,
                                                                 std::uint32_t id) {
  std::shared_ptr<MemoryCharge> charge;
  if (budget_) {
    charge = budget_->try_charge(2 * count);
    if (!charge) {
      counters_.add("publications_fp16_over_budget");
      std::uint64_t suppressed = 0;
      if (budget_log_throttle_.allow(&suppressed)) {
        spdlog::warn(
            "slices endpoint: not encoding a '{}' publication (slice id {}): {}{}", topic, id,
            budget_->shortfall(2 * count, "the fp16 image"),
            suppressed ? " (" + std::to_string(suppressed) + " similar lines suppressed)" : "");
      }
      return std::nullopt;
    }
  }
  const float scale = half_image_scale(values, count, *encoder_);
  mark_half_payload(scale, &header);
  OutgoingPublication publication = outgoing(topic, header, nullptr);
  publication.payload = half_payload_message(values, count, scale, *encoder_, std::move(charge));
  return publication;
}

void SlicePublisher::publish_preview(const PreviewVolume& preview) {
  const std::size_t expected = static_cast<std::size_t>(std::max(preview.size_x, 0)) *
                               static_cast<std::size_t>(std::max(preview.size_y, 0)) *
                               static_cast<std::size_t>(std::max(preview.size_z, 0));
  if (expected == 0 || preview.values.size() != expected) {
    ++counters_.publications_invalid;
    spdlog::error("not publishing preview: {} values for {} x {} x {}", preview.values.size(),
                  preview.size_x, preview.size_y, preview.size_z);
    return;
  }
  const v1::PublishHeader header = encode_preview(preview, steady_now_ns());
  std::optional<OutgoingPublication> half;
  if (half_previews_wanted_) {
    half =
        half_outgoing(kHalfPreviewTopic, header, preview.values.data(), preview.values.size(), 0);
  }
  put_latest(PendingPublications::Stream::kPreview, 0,
             outgoing(kPreviewTopic, header, &preview.values, preview.memory));
  if (half) put_latest(PendingPublications::Stream::kHalfPreview, 0, std::move(*half));
}

void SlicePublisher::publish_event(const ServerEvent& event) {
  OutgoingPublication publication =
      outgoing(kEventTopic, encode_event(event, steady_now_ns()), nullptr);
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  pending_.put_event(std::move(publication), PendingPublications::Clock::now());
  send_pending();
}

OutgoingPublication SlicePublisher::outgoing(const char* topic, const v1::PublishHeader& header,
                                             const std::vector<float>* values,
                                             std::shared_ptr<const void> memory) {
  OutgoingPublication publication;
  publication.topic = topic;
  publication.header = header.SerializeAsString();
  if (values) publication.payload = payload_message(*values, std::move(memory));
  return publication;
}

void SlicePublisher::put_latest(PendingPublications::Stream stream, std::uint32_t id,
                                OutgoingPublication publication, bool moved) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  try {
    drain_subscriptions();
  } catch (const zmq::error_t& error) {
    spdlog::error("slices endpoint: {}", error.what());
  }
  if (pending_.put_latest(stream, id, std::move(publication), moved,
                          PendingPublications::Clock::now())) {
    ++counters_.publications_superseded;
  }
  send_pending();
}

std::size_t SlicePublisher::waiting() {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

std::size_t SlicePublisher::missed() {
  std::lock_guard<std::mutex> lock(mutex_);
  return missed_.size();
}

void SlicePublisher::send_waiting_at_close() {
  const auto deadline = PendingPublications::Clock::now() + kWaitingAtClose;
  send_pending();
  while ((!pending_.empty() || !missed_.empty()) && PendingPublications::Clock::now() < deadline) {
    std::this_thread::sleep_for(kRetryInterval);
    send_pending();
  }
  send_pending(/*lossy=*/true);
  while (!missed_.empty())
    missed_.pop_front();  // their images and memory charges go now, not with the endpoint
}

void SlicePublisher::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_) {
      closed_ = true;
      send_waiting_at_close();
      socket_.set(zmq::sockopt::linger, kLingerAtCloseMs);
      socket_.close();
    }
  }
  closing_.notify_all();
  if (housekeeper_.joinable() && housekeeper_.get_id() != std::this_thread::get_id()) {
    housekeeper_.join();
  }
}

}  // namespace slicestream

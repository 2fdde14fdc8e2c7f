#include "server/slice_publisher.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "kernels/steady_clock.hpp"
#include "server/codec/publish_codec.hpp"
#include "server/socket_binding.hpp"

namespace slicestream {
namespace {

// How often the housekeeping thread reads subscriptions while nothing waits to be sent.
constexpr std::chrono::milliseconds kHousekeepingInterval{100};
// How often it tries again while something waits for a subscriber's room.
constexpr std::chrono::milliseconds kRetryInterval{1};
// More waiting publications than this (events are never merged) go out at once, a subscriber
// without room missing them: what waits here stays bounded.
constexpr std::size_t kMaxWaiting = 256;
// Subscriptions are topic prefixes: a few bytes. Bigger messages from a subscriber close its
// connection (ZeroMQ's transport cap).
constexpr std::int64_t kMaxSubscriptionBytes = 1024;
// At close: how long what still waits, then the last publications in ZeroMQ, may take to leave.
constexpr auto kWaitingAtClose = std::chrono::milliseconds(1000);
constexpr int kLingerAtCloseMs = 1000;

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
  std::unique_lock<std::mutex> lock(mutex_);
  while (!closed_) {
    closing_.wait_for(lock, pending_.empty() ? kHousekeepingInterval : kRetryInterval);
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
  while (socket_.recv(subscription, zmq::recv_flags::dontwait)) {
  }
}

bool SlicePublisher::send_first_part(zmq::message_t& part, const char* topic, bool lossy) {
  if (socket_.send(part, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
    last_sent_to_all_ = PendingPublications::Clock::now();
    return true;
  }
  if (!lossy) return false;
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
  return true;
}

bool SlicePublisher::try_send(OutgoingPublication& publication, bool lossy) {
  zmq::message_t first(publication.topic, std::strlen(publication.topic));
  if (!send_first_part(first, publication.topic, lossy)) return false;
  // The rest follows the first part to the same subscribers.
  const bool payload = publication.payload.has_value();
  socket_.send(zmq::buffer(publication.header),
               payload ? zmq::send_flags::sndmore : zmq::send_flags::none);
  if (payload) socket_.send(*publication.payload, zmq::send_flags::none);
  ++counters_.publications;
  return true;
}

void SlicePublisher::send_pending(bool lossy) {
  const auto now = PendingPublications::Clock::now();
  while (!pending_.empty()) {
    // Stalled: no subscriber took anything while this waited.
    const auto stalled_since = std::max(pending_.front_since(), last_sent_to_all_);
    const bool overdue =
        lossy || pending_.size() > kMaxWaiting || now - stalled_since >= slow_subscriber_wait_;
    try {
      if (!try_send(pending_.front(), overdue)) return;
    } catch (const zmq::error_t& error) {
      spdlog::error("slices endpoint: cannot publish a {} message: {}", pending_.front().topic,
                    error.what());
    }
    pending_.pop_front();
  }
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
  OutgoingPublication publication =
      outgoing(kSliceTopic, encode_slice(*slice, steady_now_ns()), nullptr);
  const std::vector<float>& values = slice->values;
  publication.payload = payload_message(values.data(), values.size(), std::move(slice));
  put_latest(PendingPublications::Stream::kSlice, id, std::move(publication), moved);
}

void SlicePublisher::publish_refined(const RefinedSliceImage& refined) {
  if (!values_match(refined.slice, "refined slice")) return;
  put_latest(PendingPublications::Stream::kRefined, refined.slice.slice_id,
             outgoing(kRefinedTopic, encode_refined(refined, steady_now_ns()),
                      &refined.slice.values, refined.slice.memory));
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
  put_latest(PendingPublications::Stream::kPreview, 0,
             outgoing(kPreviewTopic, encode_preview(preview, steady_now_ns()), &preview.values,
                      preview.memory));
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

void SlicePublisher::send_waiting_at_close() {
  const auto deadline = PendingPublications::Clock::now() + kWaitingAtClose;
  send_pending();
  while (!pending_.empty() && PendingPublications::Clock::now() < deadline) {
    std::this_thread::sleep_for(kRetryInterval);
    send_pending();
  }
  send_pending(/*lossy=*/true);
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

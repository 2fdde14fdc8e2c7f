#include "server/slice_publisher.hpp"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>

#include "kernels/steady_clock.hpp"
#include "server/codec/publish_codec.hpp"
#include "server/socket_binding.hpp"

namespace slicestream {
namespace {

// How often the housekeeping thread reads subscriptions while nothing is published.
constexpr std::chrono::milliseconds kHousekeepingInterval{100};
// Subscriptions are topic prefixes: a few bytes. Bigger messages from a subscriber close its
// connection (ZeroMQ's transport cap).
constexpr std::int64_t kMaxSubscriptionBytes = 1024;
// At close: how long the last publications may take to leave.
constexpr int kLingerAtCloseMs = 1000;

}  // namespace

SlicePublisher::SlicePublisher(zmq::context_t& context, const std::string& address, int send_hwm,
                               const ServerSecurity& security, ServerCounters& counters)
    : socket_(context, zmq::socket_type::xpub), counters_(counters) {
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
    closing_.wait_for(lock, kHousekeepingInterval);
    if (closed_) break;
    try {
      drain_subscriptions();
    } catch (const zmq::error_t& error) {
      if (error.num() == ETERM) break;
      spdlog::error("slices endpoint: {}", error.what());
    }
  }
}

void SlicePublisher::drain_subscriptions() {
  zmq::message_t subscription;
  while (socket_.recv(subscription, zmq::recv_flags::dontwait)) {
  }
}

void SlicePublisher::send_first_part(zmq::message_t& part, const char* topic) {
  if (socket_.send(part, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return;
  // Some subscriber's queue is full: it misses this publication, the others get it.
  counters_.add("publications_missed_by_slow_subscribers");
  std::uint64_t suppressed = 0;
  if (log_throttle_.allow(&suppressed)) {
    spdlog::warn(
        "slices endpoint: a subscriber too slow to take a '{}' publication misses it (its queue "
        "holds --slices-hwm publications){}",
        topic, suppressed ? " (" + std::to_string(suppressed) + " similar lines suppressed)" : "");
  }
  socket_.set(zmq::sockopt::xpub_nodrop, false);
  try {
    socket_.send(part, zmq::send_flags::sndmore);
  } catch (...) {
    socket_.set(zmq::sockopt::xpub_nodrop, true);
    throw;
  }
  socket_.set(zmq::sockopt::xpub_nodrop, true);
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
  if (!values_match(slice, "slice")) return;
  send(kSliceTopic, encode_slice(slice, steady_now_ns()), &slice.values, slice.memory);
}

void SlicePublisher::publish_refined(const RefinedSliceImage& refined) {
  if (!values_match(refined.slice, "refined slice")) return;
  send(kRefinedTopic, encode_refined(refined, steady_now_ns()), &refined.slice.values,
       refined.slice.memory);
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
  send(kPreviewTopic, encode_preview(preview, steady_now_ns()), &preview.values, preview.memory);
}

void SlicePublisher::publish_event(const ServerEvent& event) {
  send(kEventTopic, encode_event(event, steady_now_ns()), nullptr);
}

void SlicePublisher::send(const char* topic, const v1::PublishHeader& header,
                          const std::vector<float>* values, std::shared_ptr<const void> memory) {
  const std::string bytes = header.SerializeAsString();
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  try {
    drain_subscriptions();
    zmq::message_t first(topic, std::strlen(topic));
    send_first_part(first, topic);
    // The rest follows the first part to the same subscribers.
    socket_.send(zmq::buffer(bytes), values ? zmq::send_flags::sndmore : zmq::send_flags::none);
    if (values) socket_.send(payload_message(*values, std::move(memory)), zmq::send_flags::none);
    ++counters_.publications;
  } catch (const zmq::error_t& error) {
    spdlog::error("slices endpoint: cannot publish a {} message: {}", topic, error.what());
  }
}

void SlicePublisher::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!closed_) {
      closed_ = true;
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

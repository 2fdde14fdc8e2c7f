#include "clients/common/slice_subscriber.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <utility>
#include <zmq_addon.hpp>

#include "kernels/half_float.hpp"
#include "wire/wire_text.hpp"

namespace slicestream::client {

namespace {

std::size_t expected_values(const v1::PublishHeader& header) {
  if (header.has_slice()) {
    return std::size_t{header.slice().width()} * std::size_t{header.slice().height()};
  }
  if (header.has_refined()) {
    const auto& slice = header.refined().slice();
    return std::size_t{slice.width()} * std::size_t{slice.height()};
  }
  if (header.has_preview()) {
    const auto& p = header.preview();
    return std::size_t{p.size_x()} * std::size_t{p.size_y()} * std::size_t{p.size_z()};
  }
  return 0;
}

// One pass over the payload: the vector is filled from the message as it is allocated (no
// zero-fill first). ZeroMQ's buffers of large messages are malloc'ed and float-aligned; a
// payload that is not (a few-byte message kept inside ZeroMQ's own struct) is copied bytewise.
void copy_values(const zmq::message_t& payload, std::size_t count, std::vector<float>* values) {
  if (count == 0) {
    values->clear();
    return;
  }
  const auto address = reinterpret_cast<std::uintptr_t>(payload.data());
  if (address % alignof(float) == 0) {
    const float* first = static_cast<const float*>(payload.data());
    values->assign(first, first + count);
    return;
  }
  values->resize(count);
  std::memcpy(values->data(), payload.data(), count * sizeof(float));
}

// Binary16 values h (little-endian) decoded to h * scale.
void decode_half_values(const zmq::message_t& payload, std::size_t count, float scale,
                        std::vector<float>* values) {
  values->resize(count);
  halves_to_floats(payload.data(), count, scale, values->data());
}

// The topic part of `topic` as a Topic and whether it carries binary16 values.
std::optional<std::pair<Topic, bool>> parse_topic(const std::string& topic) {
  if (topic == "slice") return std::make_pair(Topic::kSlice, false);
  if (topic == "fp16-slice") return std::make_pair(Topic::kSlice, true);
  if (topic == "preview") return std::make_pair(Topic::kPreview, false);
  if (topic == "fp16-preview") return std::make_pair(Topic::kPreview, true);
  if (topic == "event") return std::make_pair(Topic::kEvent, false);
  if (topic == "refined") return std::make_pair(Topic::kRefined, false);
  if (topic == "fp16-refined") return std::make_pair(Topic::kRefined, true);
  return std::nullopt;
}

}  // namespace

const char* topic_name(Topic topic) {
  switch (topic) {
    case Topic::kSlice:
      return "slice";
    case Topic::kPreview:
      return "preview";
    case Topic::kEvent:
      return "event";
    case Topic::kRefined:
      return "refined";
  }
  return "?";
}

SliceSubscriber::SliceSubscriber(const std::string& endpoint, const std::vector<Topic>& topics,
                                 int receive_hwm, const ClientSecurity& security,
                                 SliceValueType slice_values)
    : endpoint_(endpoint), context_(1), socket_(context_, zmq::socket_type::sub) {
  socket_.set(zmq::sockopt::rcvhwm, receive_hwm);
  socket_.set(zmq::sockopt::linger, 0);
  secure_client_socket(socket_, security);
  for (Topic topic : topics) {
    const bool half = slice_values == SliceValueType::kHalf && topic != Topic::kEvent;
    socket_.set(zmq::sockopt::subscribe, (half ? "fp16-" : "") + std::string(topic_name(topic)));
  }
  try {
    socket_.connect(endpoint);
  } catch (const zmq::error_t& error) {
    throw ClientError("cannot connect to the slices endpoint '" + endpoint + "': " + error.what());
  }
}

std::optional<Publication> SliceSubscriber::receive(int timeout_ms) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  while (true) {
    const int left_ms =
        timeout_ms < 0
            ? -1
            : static_cast<int>(std::max<std::int64_t>(
                  0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())
                         .count()));
    std::optional<Publication> publication = receive_any(left_ms);
    if (!publication || !repeats_last(*publication)) return publication;
  }
}

bool SliceSubscriber::repeats_last(const Publication& publication) {
  const v1::SliceHeader* slice = nullptr;
  std::pair<std::uint64_t, std::uint64_t> stamp;
  if (publication.topic == Topic::kSlice) slice = &publication.header.slice();
  if (publication.topic == Topic::kRefined) slice = &publication.header.refined().slice();
  if (slice) {
    stamp = {slice->sequence(), slice->published_ns()};
  } else if (publication.topic == Topic::kPreview) {
    stamp = {publication.header.preview().sequence(), publication.header.preview().published_ns()};
  } else {
    return false;  // events are never sent twice
  }
  const auto stream = std::make_pair(publication.topic, slice ? slice->slice_id() : 0u);
  const auto [last, first_of_stream] = last_stamps_.try_emplace(stream, stamp);
  if (first_of_stream) return false;
  if (last->second == stamp) return true;
  last->second = stamp;
  return false;
}

std::optional<Publication> SliceSubscriber::receive_any(int timeout_ms) {
  zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
  try {
    zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms));
  } catch (const zmq::error_t& error) {
    if (error.num() == EINTR) return std::nullopt;  // a signal: the caller decides what next
    throw ClientError("slices endpoint " + endpoint_ + ": " + error.what());
  }
  if ((item.revents & ZMQ_POLLIN) == 0) return std::nullopt;
  std::vector<zmq::message_t> parts;
  (void)zmq::recv_multipart(socket_, std::back_inserter(parts));

  const std::string where = " from " + endpoint_;
  if (parts.size() < 2) throw ProtocolError("a publication" + where + " has fewer than 2 parts");
  Publication publication;
  const std::string topic = parts[0].to_string();
  const auto parsed = parse_topic(topic);
  if (!parsed) throw ProtocolError("unknown topic '" + escape_wire_text(topic) + "'" + where);
  publication.topic = parsed->first;
  const bool half = parsed->second;
  if (!publication.header.ParseFromArray(parts[1].data(), static_cast<int>(parts[1].size()))) {
    throw ProtocolError("a '" + topic + "' header" + where + " is not a PublishHeader");
  }
  const v1::PayloadEncoding encoding =
      half ? v1::PAYLOAD_ENCODING_FLOAT16 : v1::PAYLOAD_ENCODING_FLOAT32;
  if (publication.header.payload_encoding() != encoding) {
    throw ProtocolError("a '" + topic + "' header" + where + " names another payload encoding");
  }
  const bool has_body =
      (publication.topic == Topic::kSlice && publication.header.has_slice()) ||
      (publication.topic == Topic::kPreview && publication.header.has_preview()) ||
      (publication.topic == Topic::kEvent && publication.header.has_event()) ||
      (publication.topic == Topic::kRefined && publication.header.has_refined());
  if (!has_body) throw ProtocolError("a '" + topic + "' message" + where + " has another body");
  const std::size_t values = expected_values(publication.header);
  const std::size_t payload_parts = parts.size() - 2;
  if (publication.topic == Topic::kEvent) {
    if (payload_parts != 0) throw ProtocolError("an event" + where + " has a payload part");
    return publication;
  }
  if (half) {
    const float scale = publication.header.payload_scale();
    if (payload_parts != 1 || parts[2].size() != values * 2 || !std::isfinite(scale)) {
      throw ProtocolError("a '" + topic + "' message" + where + " lacks its " +
                          std::to_string(values) + "-value binary16 payload or its scale");
    }
    decode_half_values(parts[2], values, scale, &publication.values);
    return publication;
  }
  if (payload_parts != 1 || parts[2].size() != values * sizeof(float)) {
    throw ProtocolError("a '" + topic + "' message" + where + " lacks its " +
                        std::to_string(values) + "-value float32 payload");
  }
  copy_values(parts[2], values, &publication.values);
  return publication;
}

}  // namespace slicestream::client

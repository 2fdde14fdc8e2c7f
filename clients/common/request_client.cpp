#include "clients/common/request_client.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <string>

#include <sstream>
#include <zmq_addon.hpp>

namespace slicestream::client {

namespace {

// The payload a reply announces: GetSlice's slice, GetVolume's chunk of planes.
struct PayloadShape {
  std::size_t values = 0;
  std::string request;
  std::string what;
};
std::optional<PayloadShape> payload_shape(const Response& response) {
  if (!response.ok()) return std::nullopt;
  if (response.reply.has_slice()) {
    const auto& slice = response.reply.slice();
    return PayloadShape{std::size_t{slice.width()} * std::size_t{slice.height()}, "GetSlice",
                        std::to_string(slice.width()) + " x " + std::to_string(slice.height())};
  }
  if (response.reply.has_volume_chunk()) {
    const auto& chunk = response.reply.volume_chunk();
    return PayloadShape{std::size_t{chunk.size_x()} * std::size_t{chunk.size_y()} *
                            std::size_t{chunk.plane_count()},
                        "GetVolume",
                        std::to_string(chunk.plane_count()) + " planes of " +
                            std::to_string(chunk.size_x()) + " x " +
                            std::to_string(chunk.size_y())};
  }
  return std::nullopt;
}

constexpr std::uint32_t kProtocolVersion = 1;

void set_orientation(const Orientation& orientation, v1::SliceOrientation* wire) {
  for (float value : orientation)
    wire->add_values(value);
}

std::string seconds(int ms) {
  std::ostringstream out;
  out << ms / 1000.0 << " s";
  return out.str();
}

}  // namespace

RequestClient::RequestClient(std::string endpoint, int timeout_ms, ClientSecurity security)
    : endpoint_(std::move(endpoint)),
      timeout_ms_(timeout_ms),
      security_(std::move(security)),
      context_(1) {
  connect();
}

RequestClient::~RequestClient() = default;

void RequestClient::connect() {
  socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::dealer);
  socket_->set(zmq::sockopt::linger, 0);
  // A DEALER without a connection (e.g. after the server refused its CURVE key) blocks in send:
  // bounded by the timeout too.
  socket_->set(zmq::sockopt::sndtimeo, timeout_ms_);
  secure_client_socket(*socket_, security_);
  try {
    socket_->connect(endpoint_);
  } catch (const zmq::error_t& error) {
    throw ClientError("cannot connect to the requests endpoint '" + endpoint_ +
                      "': " + error.what());
  }
}

void RequestClient::set_timeout_ms(int timeout_ms) {
  timeout_ms_ = timeout_ms;
  socket_->set(zmq::sockopt::sndtimeo, timeout_ms_);
}

TimeoutError RequestClient::timed_out(const std::string& what) const {
  return TimeoutError(what + endpoint_ + " within " + seconds(timeout_ms_) +
                      " (is slicestream-server running and listening there?)");
}

Response RequestClient::call(v1::Request request) {
  const std::uint64_t request_id = next_request_id_++;
  request.set_protocol_version(kProtocolVersion);
  request.set_request_id(request_id);
  const std::string bytes = request.SerializeAsString();
  if (!socket_->send(zmq::buffer(bytes), zmq::send_flags::none)) {
    connect();
    throw timed_out("no connection to ");
  }
  return receive_reply(request_id);
}

Response RequestClient::receive_reply(std::uint64_t request_id) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_);
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    zmq::pollitem_t item{socket_->handle(), 0, ZMQ_POLLIN, 0};
    if (left.count() > 0) {
      try {
        zmq::poll(&item, 1, left);
      } catch (const zmq::error_t& error) {
        if (error.num() == EINTR) continue;  // a signal: keep waiting until the deadline
        throw ClientError("requests endpoint " + endpoint_ + ": " + error.what());
      }
    }
    if ((item.revents & ZMQ_POLLIN) == 0) {
      connect();  // drop the unanswered request (see the header)
      throw timed_out("no reply from ");
    }
    std::vector<zmq::message_t> parts;
    (void)zmq::recv_multipart(*socket_, std::back_inserter(parts));
    // A REQ-style server envelope would start with an empty delimiter; skip it.
    std::size_t first = (parts.size() > 1 && parts[0].size() == 0) ? 1 : 0;
    if (parts.size() <= first) throw ProtocolError("empty reply from " + endpoint_);
    Response response;
    const zmq::message_t& header = parts[first];
    if (!response.reply.ParseFromArray(header.data(), static_cast<int>(header.size()))) {
      throw ProtocolError("the reply from " + endpoint_ + " is not a slicestream.v1.Reply");
    }
    if (response.reply.request_id() != request_id && response.reply.request_id() != 0) {
      continue;  // stale (cannot happen after a reconnect, kept as a guard)
    }
    const std::size_t payload_parts = parts.size() - first - 1;
    const std::optional<PayloadShape> shape = payload_shape(response);
    if (shape) {
      const std::size_t expected = shape->values * sizeof(float);
      if (payload_parts != 1 || parts[first + 1].size() != expected) {
        throw ProtocolError(shape->request + " reply from " + endpoint_ + " lacks its " +
                            shape->what + " float32 payload");
      }
      response.values.resize(shape->values);
      std::memcpy(response.values.data(), parts[first + 1].data(), expected);
    } else if (payload_parts != 0) {
      throw ProtocolError("unexpected payload part in a reply from " + endpoint_);
    }
    return response;
  }
}

Response RequestClient::set_slice(std::uint32_t slice_id, const Orientation& orientation,
                                  std::uint32_t width, std::uint32_t height, bool box_coordinates) {
  v1::Request request;
  v1::SetSlice* body = request.mutable_set_slice();
  body->set_slice_id(slice_id);
  set_orientation(orientation, body->mutable_orientation());
  body->set_width(width);
  body->set_height(height);
  body->set_box_coordinates(box_coordinates);
  return call(std::move(request));
}

Response RequestClient::remove_slice(std::uint32_t slice_id) {
  v1::Request request;
  request.mutable_remove_slice()->set_slice_id(slice_id);
  return call(std::move(request));
}

Response RequestClient::reset_slices() {
  v1::Request request;
  request.mutable_reset_slices();
  return call(std::move(request));
}

Response RequestClient::get_slice(const Orientation& orientation, std::uint32_t width,
                                  std::uint32_t height) {
  v1::Request request;
  v1::GetSlice* body = request.mutable_get_slice();
  set_orientation(orientation, body->mutable_orientation());
  body->set_width(width);
  body->set_height(height);
  return call(std::move(request));
}

Response RequestClient::get_volume(const v1::GetVolume& chunk) {
  v1::Request request;
  *request.mutable_get_volume() = chunk;
  return call(std::move(request));
}

Response RequestClient::get_status() {
  v1::Request request;
  request.mutable_get_status();
  return call(std::move(request));
}

Response RequestClient::set_parameters(const v1::SetParameters& parameters) {
  v1::Request request;
  *request.mutable_set_parameters() = parameters;
  return call(std::move(request));
}

Response RequestClient::set_refinement(std::uint32_t slice_id, bool enabled,
                                       std::uint32_t iterations, double interval_s,
                                       const v1::RefinementSettings* settings) {
  v1::Request request;
  v1::SetRefinement* body = request.mutable_set_refinement();
  body->set_slice_id(slice_id);
  body->set_enabled(enabled);
  body->set_iterations(iterations);
  body->set_interval_s(interval_s);
  if (settings != nullptr) *body->mutable_settings() = *settings;
  return call(std::move(request));
}

Response RequestClient::set_capture(bool enabled, const std::string& label) {
  v1::Request request;
  v1::SetCapture* body = request.mutable_set_capture();
  body->set_enabled(enabled);
  body->set_label(label);
  return call(std::move(request));
}

}  // namespace slicestream::client

#include "server/recast3d_session.hpp"

#include <zmq.h>

#include <array>
#include <cstring>
#include <utility>

#include "server/tomop/tomop_codec.hpp"

namespace slicestream::tomop {

namespace {

// What the bridge listens to: the viewer's slice set, scene deletion and parameter controls.
constexpr std::array<PacketId, 6> kUpdates = {PacketId::kSetSlice,      PacketId::kRemoveSlice,
                                              PacketId::kKillScene,     PacketId::kParameterFloat,
                                              PacketId::kParameterBool, PacketId::kParameterEnum};

zmq::message_t encode_message(const Packet& packet) {
  zmq::message_t message(encoded_size(packet));
  encode_into(packet, static_cast<std::byte*>(message.data()));
  return message;
}

}  // namespace

Recast3dSession::Recast3dSession(zmq::context_t& context, std::string requests_address,
                                 std::string updates_address,
                                 std::chrono::milliseconds reply_timeout)
    : context_(context),
      requests_address_(std::move(requests_address)),
      updates_address_(std::move(updates_address)),
      reply_timeout_(reply_timeout),
      sub_(context, zmq::socket_type::sub) {
  sub_.set(zmq::sockopt::linger, 0);
  // The SUB connection outlives every REQ socket: when it drops, the viewer process has gone.
  sub_monitor_ = monitor(sub_, "sub");
  sub_.connect(updates_address_);
  open_requests();
}

zmq::socket_t Recast3dSession::monitor(zmq::socket_t& socket, const char* what) {
  const std::string address = "inproc://recast3d-" + std::string(what) + "-monitor-" +
                              std::to_string(reinterpret_cast<std::uintptr_t>(this)) + "-" +
                              std::to_string(++monitor_serial_);
  if (zmq_socket_monitor(socket.handle(), address.c_str(), ZMQ_EVENT_DISCONNECTED) != 0) {
    throw zmq::error_t();
  }
  zmq::socket_t events(context_, zmq::socket_type::pair);
  events.set(zmq::sockopt::linger, 0);
  events.connect(address);
  return events;
}

Recast3dSession::~Recast3dSession() {
  close_requests();
  zmq_socket_monitor(sub_.handle(), nullptr, 0);
}

void Recast3dSession::open_requests() {
  req_ = zmq::socket_t(context_, zmq::socket_type::req);
  req_.set(zmq::sockopt::linger, 0);
  req_.set(zmq::sockopt::immediate, true);
  monitor_ = monitor(req_, "req");
  req_.connect(requests_address_);
}

void Recast3dSession::close_requests() {
  if (req_.handle() != nullptr) {
    zmq_socket_monitor(req_.handle(), nullptr, 0);
    req_.close();
  }
  if (monitor_.handle() != nullptr) monitor_.close();
}

bool Recast3dSession::drain(zmq::socket_t& events) {
  bool dropped = false;
  zmq::message_t event;
  while (events.recv(event, zmq::recv_flags::dontwait)) {
    // Two parts: [uint16 event, uint32 value] and the endpoint.
    std::uint16_t id = 0;
    if (event.size() >= sizeof id) std::memcpy(&id, event.data(), sizeof id);
    while (event.more())
      (void)events.recv(event, zmq::recv_flags::none);
    if (id == ZMQ_EVENT_DISCONNECTED) dropped = true;
  }
  return dropped;
}

bool Recast3dSession::disconnected() {
  const bool requests_dropped = drain(monitor_);
  const bool updates_dropped = drain(sub_monitor_);
  const bool dropped = lost_connection_ || requests_dropped || updates_dropped;
  lost_connection_ = false;
  if (dropped) {
    ++disconnects_;
    why_ = "the viewer closed the connection";
  }
  return dropped;
}

void Recast3dSession::forget_scene() {
  if (scene_) subscribe(*scene_, false);
  scene_.reset();
}

std::optional<std::int32_t> Recast3dSession::scene() {
  if (scene_ && disconnected()) {
    subscribe(*scene_, false);
    scene_.reset();
  }
  return scene_;
}

bool Recast3dSession::exchange(const Packet& packet, zmq::message_t* reply) {
  zmq::message_t request = encode_message(packet);
  if (!req_.send(request, zmq::send_flags::dontwait)) {
    why_ = "the viewer is not connected at " + requests_address_;
    return false;
  }
  zmq::pollitem_t item{req_.handle(), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, reply_timeout_);
  if ((item.revents & ZMQ_POLLIN) == 0 || !req_.recv(*reply, zmq::recv_flags::dontwait)) {
    ++timeouts_;
    why_ = "the viewer did not answer within " + std::to_string(reply_timeout_.count()) + " ms";
    // A REQ socket without its answer accepts nothing more: start over with a new one (a
    // disconnect its monitor saw meanwhile still counts).
    lost_connection_ = drain(monitor_) || lost_connection_;
    close_requests();
    open_requests();
    return false;
  }
  return true;
}

std::optional<std::int32_t> Recast3dSession::make_scene(const std::string& name) {
  if (scene_) subscribe(*scene_, false);
  scene_.reset();
  (void)disconnected();  // events of the previous connection belong to the previous scene
  zmq::message_t reply;
  if (!exchange(MakeScene{name, 3}, &reply)) return std::nullopt;
  std::int32_t scene_id = -1;
  if (reply.size() != sizeof scene_id) {
    why_ = "MakeScene was answered with " + std::to_string(reply.size()) + " bytes, not a scene id";
    return std::nullopt;
  }
  std::memcpy(&scene_id, reply.data(), sizeof scene_id);
  if (scene_id < 0) {
    why_ = "MakeScene was answered with scene id " + std::to_string(scene_id);
    return std::nullopt;
  }
  subscribe(scene_id, true);
  scene_ = scene_id;
  return scene_;
}

bool Recast3dSession::send(const Packet& packet) {
  if (!scene()) return false;
  zmq::message_t reply;
  if (exchange(packet, &reply)) return true;
  // An answer that did not come loses this packet; the scene goes only with the viewer (a busy
  // viewer keeps its scene: a new one would leave the old one behind in its scene list).
  (void)scene();
  return false;
}

void Recast3dSession::subscribe(std::int32_t scene_id, bool on) {
  for (PacketId id : kUpdates) {
    const std::array<std::int32_t, 2> filter = {static_cast<std::int32_t>(id), scene_id};
    if (on) {
      sub_.set(zmq::sockopt::subscribe, zmq::buffer(filter));
    } else {
      sub_.set(zmq::sockopt::unsubscribe, zmq::buffer(filter));
    }
  }
}

std::optional<zmq::message_t> Recast3dSession::receive_update() {
  zmq::message_t update;
  if (!sub_.recv(update, zmq::recv_flags::dontwait)) return std::nullopt;
  if (!update.more()) return update;
  // The viewer publishes single parts: anything else is skipped whole (and read as empty).
  zmq::message_t rest;
  do {
    (void)sub_.recv(rest, zmq::recv_flags::none);
  } while (rest.more());
  return zmq::message_t();
}

}  // namespace slicestream::tomop

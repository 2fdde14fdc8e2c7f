// The sockets toward a running RECAST3D viewer, in SliceRecon's role: REQ to its REP (packets
// out, each answered), SUB to its PUB (the viewer's slice and parameter changes in).
//
// What keeps the real viewer alive (docs/recast3d.md): it dies on a packet id its REP does not
// know and on a scene id it did not hand out, so
//   - only a scene id this connection's MakeScene returned is ever sent, and the scene is
//     forgotten the moment the connection drops (a socket monitor sees every disconnect): a
//     restarted viewer gets a new MakeScene before anything else;
//   - the REQ socket queues nothing for a viewer that is not connected (ZMQ_IMMEDIATE), and an
//     answer that does not come within the reply timeout replaces the socket (a REQ socket
//     without its answer is stuck); that packet is lost, the scene stays unless the viewer's
//     connections dropped (the SUB connection, which outlives every REQ socket, shows it).
// Used by one thread (the bridge's).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "server/tomop/tomop_packets.hpp"

namespace slicestream::tomop {

class Recast3dSession {
 public:
  Recast3dSession(zmq::context_t& context, std::string requests_address,
                  std::string updates_address, std::chrono::milliseconds reply_timeout);
  ~Recast3dSession();
  Recast3dSession(const Recast3dSession&) = delete;
  Recast3dSession& operator=(const Recast3dSession&) = delete;

  // MakeScene and the subscriptions for the new scene id. nullopt (with why()) when the viewer
  // is not there or did not answer in time.
  std::optional<std::int32_t> make_scene(const std::string& name);
  // Sends a packet of the current scene and waits for its answer; false (the scene is gone) when
  // the viewer did not take it. Never sends without a scene.
  bool send(const Packet& packet);
  // The current scene, after looking for disconnects.
  std::optional<std::int32_t> scene();
  // Ends the scene locally (the viewer killed it).
  void forget_scene();

  // The SUB socket and the monitor, for the owner's poll.
  zmq::socket_t& updates() { return sub_; }
  // One update published by the viewer for this scene, if one is waiting (already filtered by
  // packet id and scene id through the subscriptions).
  std::optional<zmq::message_t> receive_update();

  const std::string& why() const { return why_; }
  std::uint64_t timeouts() const { return timeouts_; }
  std::uint64_t disconnects() const { return disconnects_; }

 private:
  zmq::socket_t monitor(zmq::socket_t& socket, const char* what);  // DISCONNECTED events
  void open_requests();
  void close_requests();
  static bool drain(zmq::socket_t& events);  // true when one was a disconnect
  bool disconnected();  // drains monitor events; true when the viewer's connection dropped
  bool exchange(const Packet& packet, zmq::message_t* reply);
  void subscribe(std::int32_t scene_id, bool on);

  zmq::context_t& context_;
  std::string requests_address_;
  std::string updates_address_;
  std::chrono::milliseconds reply_timeout_;
  zmq::socket_t req_;
  zmq::socket_t monitor_;
  zmq::socket_t sub_;
  zmq::socket_t sub_monitor_;
  int monitor_serial_ = 0;
  bool lost_connection_ = false;  // seen on a REQ socket replaced since
  std::optional<std::int32_t> scene_;
  std::string why_;
  std::uint64_t timeouts_ = 0;
  std::uint64_t disconnects_ = 0;
};

}  // namespace slicestream::tomop

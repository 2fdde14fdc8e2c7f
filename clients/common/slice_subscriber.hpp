// Subscribes to the server's slices endpoint (a SUB socket): slices, preview volumes, server
// events and refined slices, each checked against slicestream.v1's framing
// [topic][PublishHeader][float32 payload].
//
// Like every ZeroMQ subscriber it sees only what is published after its subscription reached the
// server (a few milliseconds after construction).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "clients/common/client_error.hpp"
#include "clients/common/client_security.hpp"
#include "slicestream.pb.h"

namespace slicestream::client {

enum class Topic { kSlice, kPreview, kEvent, kRefined };
const char* topic_name(Topic topic);  // "slice", "preview", "event", "refined"

struct Publication {
  Topic topic = Topic::kEvent;
  v1::PublishHeader header;   // header.slice(), .preview(), .event() or .refined()
  std::vector<float> values;  // slice, refined: width * height; preview: size_x * size_y * size_z
};

class SliceSubscriber {
 public:
  explicit SliceSubscriber(const std::string& endpoint,
                           const std::vector<Topic>& topics = {Topic::kSlice, Topic::kPreview,
                                                               Topic::kEvent, Topic::kRefined},
                           int receive_hwm = 100, const ClientSecurity& security = {});

  // The next publication, or nothing after timeout_ms (-1: wait forever). Throws ProtocolError
  // for a malformed message (it is consumed; the next call goes on with the next one).
  std::optional<Publication> receive(int timeout_ms);

 private:
  std::string endpoint_;
  zmq::context_t context_;
  zmq::socket_t socket_;
};

}  // namespace slicestream::client

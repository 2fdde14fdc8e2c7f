// Subscribes to the server's slices endpoint (a SUB socket): slices, preview volumes, server
// events and refined slices, each checked against slicestream.v1's framing
// [topic][PublishHeader][float32 or binary16 payload].
//
// Like every ZeroMQ subscriber it sees only what is published after its subscription reached the
// server (a few milliseconds after construction).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "clients/common/client_error.hpp"
#include "clients/common/client_security.hpp"
#include "slicestream.pb.h"

namespace slicestream::client {

enum class Topic { kSlice, kPreview, kEvent, kRefined };
const char* topic_name(Topic topic);  // "slice", "preview", "event", "refined"

// How slices, refined slices and preview volumes travel: float32 (topics "slice", "refined",
// "preview") or binary16 ("fp16-slice", "fp16-refined", "fp16-preview": half the bytes, 11
// significant bits relative to the image's largest value), decoded to float32 here.
enum class SliceValueType { kFloat32, kHalf };

struct Publication {
  Topic topic = Topic::kEvent;  // kSlice, kRefined, kPreview whether float32 or fp16 carried them
  v1::PublishHeader header;     // header.slice(), .preview(), .event() or .refined()
  std::vector<float> values;    // slice, refined: width * height; preview: size_x * size_y * size_z
};

class SliceSubscriber {
 public:
  explicit SliceSubscriber(const std::string& endpoint,
                           const std::vector<Topic>& topics = {Topic::kSlice, Topic::kPreview,
                                                               Topic::kEvent, Topic::kRefined},
                           int receive_hwm = 100, const ClientSecurity& security = {},
                           SliceValueType slice_values = SliceValueType::kFloat32);

  // The next publication, or nothing after timeout_ms (-1: wait forever). Throws ProtocolError
  // for a malformed message (it is consumed; the next call goes on with the next one). A
  // publication the server sent again (the same stream, sequence and published_ns as the last
  // one received of that stream: after another subscriber stalled, docs/protocol.md) is skipped.
  std::optional<Publication> receive(int timeout_ms);

 private:
  std::optional<Publication> receive_any(int timeout_ms);
  // True when `publication` repeats the last one received of its stream; remembers it if not.
  bool repeats_last(const Publication& publication);

  // The last (sequence, published_ns) received per stream (topic, slice id; 0: the preview).
  std::map<std::pair<Topic, std::uint32_t>, std::pair<std::uint64_t, std::uint64_t>> last_stamps_;
  std::string endpoint_;
  zmq::context_t context_;
  zmq::socket_t socket_;
};

}  // namespace slicestream::client

// The slices endpoint: a PUB socket (bound) implementing PublishSink. Every message is
// [topic "slice"|"preview"|"event"|"refined"][PublishHeader][float32 payload (all but events)].
//
// The pipeline calls it from its publish stage thread; a mutex makes a call from any other thread
// (e.g. an event reported while stopping) safe as well. PUB never blocks: a subscriber that cannot
// keep up loses messages at its SNDHWM (ZeroMQ's PUB semantics; viewers want the latest image).
#pragma once

#include <mutex>
#include <string>

#include <zmq.hpp>

#include "pipeline/messages/publish_sink.hpp"
#include "server/server_counters.hpp"
#include "slicestream.pb.h"

namespace slicestream {

class SlicePublisher : public PublishSink {
 public:
  // Binds at once (throws std::runtime_error naming the address on failure).
  SlicePublisher(zmq::context_t& context, const std::string& address, int send_hwm,
                 ServerCounters& counters);

  const std::string& address() const { return address_; }  // as bound (resolved port)

  void publish_slice(const SliceImage& slice) override;
  void publish_preview(const PreviewVolume& preview) override;
  void publish_refined(const RefinedSliceImage& refined) override;
  void publish_event(const ServerEvent& event) override;

  void close();  // later publications are ignored

 private:
  // Counts and logs a slice whose values do not fill width x height; true when they do.
  bool values_match(const SliceImage& slice, const char* what);
  void send(const char* topic, const v1::PublishHeader& header, const std::vector<float>* values);

  std::mutex mutex_;
  zmq::socket_t socket_;
  std::string address_;
  ServerCounters& counters_;
  bool closed_ = false;
};

}  // namespace slicestream

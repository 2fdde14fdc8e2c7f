// The slices endpoint: an XPUB socket (bound) implementing PublishSink. Every message is
// [topic "slice"|"preview"|"event"|"refined"][PublishHeader][float32 payload (all but events)].
//
// The pipeline calls it from its publish stage thread; a mutex makes a call from any other thread
// (e.g. an event reported while stopping) safe as well. Publishing never blocks: a subscriber that
// cannot keep up misses publications beyond its queue of --slices-hwm (viewers want the newest
// image, not a backlog). Unlike PUB, the XPUB socket says when that happens (ZMQ_XPUB_NODROP makes
// the send fail while some subscriber's queue is full; the publication then goes to every
// subscriber with room), so every publication a slow subscriber misses is counted
// ("publications_missed_by_slow_subscribers") and logged. The subscriptions the XPUB socket
// receives are read (and dropped) on every publication and by a small housekeeping thread, so
// that they cannot pile up. At close the socket lingers a moment, so that the last publications
// (the final slices of a scan) leave.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "pipeline/messages/publish_sink.hpp"
#include "server/log_throttle.hpp"
#include "server/server_counters.hpp"
#include "server/socket_security.hpp"
#include "server/transport_monitor.hpp"
#include "slicestream.pb.h"

namespace slicestream {

class SlicePublisher : public PublishSink {
 public:
  // Binds at once (throws std::runtime_error naming the address on failure).
  SlicePublisher(zmq::context_t& context, const std::string& address, int send_hwm,
                 const ServerSecurity& security, ServerCounters& counters);
  ~SlicePublisher() override;

  const std::string& address() const { return address_; }  // as bound (resolved port)
  void watch_transport(TransportMonitor& monitor);         // before the first publication

  void publish_slice(const SliceImage& slice) override;
  void publish_preview(const PreviewVolume& preview) override;
  void publish_refined(const RefinedSliceImage& refined) override;
  void publish_event(const ServerEvent& event) override;

  void close();  // later publications are ignored

 private:
  // Counts and logs a slice whose values do not fill width x height; true when they do.
  bool values_match(const SliceImage& slice, const char* what);
  // `memory`: the values' charge in the memory budget, held until ZeroMQ lets go of its copy.
  void send(const char* topic, const v1::PublishHeader& header, const std::vector<float>* values,
            std::shared_ptr<const void> memory = nullptr);
  // Sends the first part; when a subscriber's queue is full, counts the miss and sends it to the
  // subscribers with room.
  void send_first_part(zmq::message_t& part, const char* topic);
  void drain_subscriptions();  // mutex held
  void housekeeping();

  std::mutex mutex_;
  zmq::socket_t socket_;
  std::string address_;
  ServerCounters& counters_;
  LogThrottle log_throttle_;
  bool closed_ = false;
  std::condition_variable closing_;
  std::thread housekeeper_;
};

}  // namespace slicestream

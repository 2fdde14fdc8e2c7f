// The server: the three ZeroMQ endpoints and the HTTP endpoint around one Pipeline
// (docs/architecture.md, docs/protocol.md, docs/viewer.md).
//
// Used by main() and, in-process, by the integration tests. Addresses may end in ":*" (":0" for
// HTTP) for an ephemeral port; the *_address() accessors return what was actually bound.
#pragma once

#include <memory>
#include <string>

#include <zmq.hpp>

#include "pipeline/backend/cpu/worker_pool.hpp"
#include "pipeline/pipeline.hpp"
#include "server/data_endpoint.hpp"
#include "server/http/http_endpoint.hpp"
#include "server/http/server_port.hpp"
#include "server/metrics/http_counters.hpp"
#include "server/metrics/request_counters.hpp"
#include "server/publish_fanout.hpp"
#include "server/recast3d_bridge.hpp"
#include "server/request_dispatcher.hpp"
#include "server/request_endpoint.hpp"
#include "server/server_config.hpp"
#include "server/server_counters.hpp"
#include "server/slice_publisher.hpp"
#include "server/tomop_data_endpoint.hpp"
#include "server/transport_monitor.hpp"
#include "server/zap_authenticator.hpp"

namespace slicestream {

class Server {
 public:
  // Binds all three endpoints (throws std::runtime_error naming the endpoint on failure).
  Server(const ServerConfig& config, std::unique_ptr<Backend> backend);
  ~Server();  // stop(drain = false) if still running
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void start();
  // drain: stop reading the data socket (it unbinds), hand on what it had already received, finish
  // everything accepted, answer the requests still pending or queued, then close the sockets.
  // Otherwise what is queued is counted as "shutdown" discards.
  // Idempotent; returns when every thread has ended.
  void stop(bool drain);

  const std::string& data_address() const { return data_->address(); }
  const std::string& slices_address() const { return publisher_->address(); }
  const std::string& requests_address() const { return requests_->address(); }
  // "http://host:port", empty with --http off.
  std::string http_address() const { return http_ ? http_->address() : std::string(); }
  // The tomop data port as bound; empty without --tomop-data.
  std::string tomop_data_address() const { return tomop_data_ ? tomop_data_->address() : ""; }

  MetricsSnapshot metrics() const { return pipeline_->metrics(); }
  CounterMap counters() const { return counters_.snapshot(); }
  const Backend& backend() const { return pipeline_->backend(); }
  // Blocks until everything read from the data socket so far is processed (tests).
  void wait_idle() { pipeline_->wait_idle(); }

 private:
  // Helpers beside the publishing thread and the HTTP thread: their passes over an image (fp16
  // encoding, copies) are bound by memory bandwidth, which a few cores take up.
  static constexpr int kPublicationEncoders = 3;

  ServerCounters counters_;
  RequestCounters request_counters_;
  HttpCounters http_counters_;
  zmq::context_t context_;
  std::unique_ptr<ZapAuthenticator> authenticator_;  // with CURVE: bound before any endpoint
  TransportMonitor monitor_{context_, counters_};
  // Helpers of the publishing thread for fp16 images and of the HTTP thread for the browsers'
  // images (idle unless a viewer takes fp16 images or a browser is connected).
  WorkerPool publication_encoders_{kPublicationEncoders};
  std::unique_ptr<SlicePublisher> publisher_;
  PublishFanout publications_;  // the publisher, the RECAST3D bridge, the WebSocket hub
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<PipelinePort> port_;
  std::unique_ptr<RequestDispatcher> dispatcher_;
  std::unique_ptr<ServerPort> server_port_;
  std::unique_ptr<DataEndpoint> data_;
  std::unique_ptr<RequestEndpoint> requests_;
  std::unique_ptr<HttpEndpoint> http_;
  std::unique_ptr<tomop::TomopDataEndpoint> tomop_data_;
  std::unique_ptr<tomop::Recast3dBridge> recast3d_;
  std::unique_ptr<CaptureRecorder> capture_;  // with a capture directory only
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace slicestream

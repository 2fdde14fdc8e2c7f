#include "server/server.hpp"

#include <spdlog/spdlog.h>

namespace slicestream {

namespace {

// The endpoints' view of the Pipeline.
class PipelineAdapter final : public PipelinePort {
 public:
  explicit PipelineAdapter(Pipeline& pipeline) : pipeline_(pipeline) {}
  bool submit(DataMessage message) override { return pipeline_.submit(std::move(message)); }
  void submit_command(Command command, ReplyCallback on_reply) override {
    pipeline_.submit_command(std::move(command), std::move(on_reply));
  }
  void report_rejected(const std::string& reason, const std::string& message,
                       std::uint64_t scan_id) override {
    pipeline_.report_rejected(reason, message, scan_id);
  }
  void report_warning(const std::string& reason, const std::string& message) override {
    pipeline_.report_warning(reason, message);
  }

 private:
  Pipeline& pipeline_;
};

// The HTTP endpoint's view of the server: the request path every endpoint shares.
class ServerAccess final : public ServerPort {
 public:
  ServerAccess(RequestDispatcher& dispatcher, PipelinePort& pipeline,
               const ServerCounters& counters, const RequestCounters& requests)
      : dispatcher_(dispatcher), pipeline_(pipeline), counters_(counters), requests_(requests) {}

  void request(const std::string& endpoint, const v1::Request& request,
               std::function<void(WireReply)> on_reply) override {
    dispatcher_.call(endpoint, request, std::move(on_reply));
  }
  WireReply refuse(const std::string& endpoint, std::uint64_t request_id, const std::string& kind,
                   const WireError& error) override {
    return dispatcher_.refuse(endpoint, request_id, kind, error);
  }
  void status(std::function<void(CommandReply)> on_reply) override {
    pipeline_.submit_command(GetStatusCommand{}, std::move(on_reply));
  }
  CounterMap server_counters() const override { return counters_.snapshot(); }
  std::map<RequestCountKey, std::uint64_t> request_counts() const override {
    return requests_.snapshot();
  }

 private:
  RequestDispatcher& dispatcher_;
  PipelinePort& pipeline_;
  const ServerCounters& counters_;
  const RequestCounters& requests_;
};

}  // namespace

Server::Server(const ServerConfig& config, std::unique_ptr<Backend> backend) : context_(1) {
  const ServerSecurity& security = config.security;
  if (security.encrypted()) {
    authenticator_ =
        std::make_unique<ZapAuthenticator>(context_, security.allowed_clients, counters_);
  }
  publisher_ = std::make_unique<SlicePublisher>(context_, config.endpoints.slices,
                                                config.slices_hwm, security, counters_);
  publications_.add(*publisher_);
  pipeline_ = std::make_unique<Pipeline>(config.pipeline, std::move(backend), publications_);
  publisher_->charge_to(pipeline_->backend().host_memory());
  publisher_->encode_on(publication_encoders_);
  port_ = std::make_unique<PipelineAdapter>(*pipeline_);
  dispatcher_ =
      std::make_unique<RequestDispatcher>(config.limits, *port_, counters_, request_counters_);
  server_port_ = std::make_unique<ServerAccess>(*dispatcher_, *port_, counters_, request_counters_);
  data_ = std::make_unique<DataEndpoint>(context_, config.endpoints.data, config.data_hwm,
                                         config.limits, security, *port_, counters_);
  requests_ = std::make_unique<RequestEndpoint>(context_, config.endpoints.requests, security,
                                                *dispatcher_, counters_);
  if (!config.capture.directory.empty()) {
    capture_ = std::make_unique<CaptureRecorder>(config.capture);
    data_->attach_capture(*capture_);
    dispatcher_->attach_capture(*capture_);
  }
  if (config.http.enabled()) {
    http_ =
        std::make_unique<HttpEndpoint>(config.http, *server_port_, http_counters_,
                                       pipeline_->backend().host_memory(), &publication_encoders_);
    publications_.add(http_->publish_sink());  // before the pipeline starts
    warn_if_exposed("tcp://" + config.http.listen, "HTTP", /*encrypted=*/false,
                    "CURVE does not cover HTTP: put it behind a reverse proxy with TLS and "
                    "authentication, or bind it to 127.0.0.1.");
  }
  const tomop::TomopConfig& tomop = config.tomop;
  if (!tomop.data.empty()) {
    tomop_data_ = std::make_unique<tomop::TomopDataEndpoint>(
        context_, tomop.data, tomop.data_socket, config.data_hwm, config.limits, security, *port_,
        counters_);
  }
  if (!tomop.recast3d.requests.empty()) {
    recast3d_ = std::make_unique<tomop::Recast3dBridge>(
        context_, tomop.recast3d, config.pipeline.default_slice_size, config.limits.max_slice_side,
        *port_, counters_, pipeline_->backend().host_memory());
    publications_.add(*recast3d_);
  }
  publisher_->watch_transport(monitor_);
  data_->watch_transport(monitor_);
  requests_->watch_transport(monitor_);
  if (tomop_data_) tomop_data_->watch_transport(monitor_);
  if (security.encrypted()) {
    spdlog::info("CURVE on every endpoint: server public key {}, {} client keys allowed",
                 security.curve->public_key, security.allowed_clients.size());
  }
}

Server::~Server() {
  stop(/*drain=*/false);
}

void Server::start() {
  if (started_ || stopped_) return;
  started_ = true;
  // spdlog's registry (the default logger) is built on first use; built here, before the first
  // of the server's threads logs, its construction never overlaps their first log line.
  spdlog::default_logger_raw();
  if (authenticator_) authenticator_->start();
  monitor_.start();
  pipeline_->start();
  requests_->start();
  data_->start();
  if (tomop_data_) tomop_data_->start();
  if (recast3d_) recast3d_->start();
  if (http_) http_->start();
  spdlog::info("slicestream-server ready: data {} | slices {} | requests {} | http {}",
               data_address(), slices_address(), requests_address(),
               http_ ? http_address() : "off");
}

void Server::stop(bool drain) {
  if (stopped_) return;
  stopped_ = true;
  // Without drain the pipeline stops first, so that a data thread blocked in submit() returns.
  if (!drain) pipeline_->stop(false);
  data_->stop();
  if (tomop_data_) tomop_data_->stop();
  // Nothing more arrives: the file being written is closed and what is queued is written.
  if (capture_) capture_->shutdown();
  if (drain) {
    spdlog::info("draining: finishing every frame accepted so far");
    pipeline_->stop(true);
  }
  // The pipeline has answered every command it took; the rest are answered UNAVAILABLE.
  requests_->stop();
  if (http_) http_->stop();
  if (recast3d_) recast3d_->stop();
  publisher_->close();
  monitor_.stop();
  if (authenticator_) authenticator_->stop();
  const MetricsSnapshot m = pipeline_->metrics();
  spdlog::info("server stopped: {} frames received, {} projections integrated, {} discards",
               m.frames_received, m.projections_integrated, [&] {
                 std::uint64_t total = 0;
                 for (const auto& [reason, count] : m.discards)
                   total += count;
                 return total;
               }());
}

}  // namespace slicestream

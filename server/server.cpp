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

 private:
  Pipeline& pipeline_;
};

}  // namespace

Server::Server(const ServerConfig& config, std::unique_ptr<Backend> backend) : context_(1) {
  publisher_ = std::make_unique<SlicePublisher>(context_, config.endpoints.slices,
                                                config.slices_hwm, counters_);
  sinks_.add(*publisher_);
  pipeline_ = std::make_unique<Pipeline>(config.pipeline, std::move(backend), sinks_);
  port_ = std::make_unique<PipelineAdapter>(*pipeline_);
  data_ = std::make_unique<DataEndpoint>(context_, config.endpoints.data, config.data_hwm,
                                         config.limits, *port_, counters_);
  requests_ = std::make_unique<RequestEndpoint>(context_, config.endpoints.requests, config.limits,
                                                *port_, counters_);
  const tomop::TomopConfig& tomop = config.tomop;
  if (!tomop.data.empty()) {
    tomop_data_ = std::make_unique<tomop::TomopDataEndpoint>(
        context_, tomop.data, tomop.data_socket, config.data_hwm, config.limits, *port_, counters_);
  }
  if (!tomop.recast3d.requests.empty()) {
    recast3d_ = std::make_unique<tomop::Recast3dBridge>(
        context_, tomop.recast3d, config.pipeline.default_slice_size, config.limits.max_slice_side,
        *port_, counters_);
    sinks_.add(*recast3d_);
  }
}

Server::~Server() {
  stop(/*drain=*/false);
}

void Server::start() {
  if (started_ || stopped_) return;
  started_ = true;
  pipeline_->start();
  requests_->start();
  data_->start();
  if (tomop_data_) tomop_data_->start();
  if (recast3d_) recast3d_->start();
  spdlog::info("slicestream-server ready: data {} | slices {} | requests {}", data_address(),
               slices_address(), requests_address());
}

void Server::stop(bool drain) {
  if (stopped_) return;
  stopped_ = true;
  // Without drain the pipeline stops first, so that a data thread blocked in submit() returns.
  if (!drain) pipeline_->stop(false);
  data_->stop();
  if (tomop_data_) tomop_data_->stop();
  if (drain) {
    spdlog::info("draining: finishing every frame accepted so far");
    pipeline_->stop(true);
  }
  // The pipeline has answered every command it took; the rest are answered UNAVAILABLE.
  requests_->stop();
  if (recast3d_) recast3d_->stop();
  publisher_->close();
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

// Everything the server is configured with (filled from flags and the config file by
// server_options.cpp, or directly by tests).
#pragma once

#include <string>

#include "pipeline/backend/backend.hpp"
#include "pipeline/messages/pipeline_config.hpp"
#include "server/codec/wire_limits.hpp"
#include "server/http/http_config.hpp"
#include "server/tomop_config.hpp"

namespace slicestream {

struct EndpointAddresses {
  std::string data = "tcp://127.0.0.1:5570";      // PULL: detector frames in
  std::string slices = "tcp://127.0.0.1:5571";    // PUB: slices, preview, events out
  std::string requests = "tcp://127.0.0.1:5572";  // ROUTER: requests and replies
};

struct ServerConfig {
  EndpointAddresses endpoints;
  // Messages the data socket buffers while the pipeline is full, before the detector's sends
  // block; small, because the pipeline's queues already hold queue_depth frames per stage.
  static constexpr int kDefaultDataHwm = 16;
  int data_hwm = kDefaultDataHwm;
  int slices_hwm = 32;  // publications queued per subscriber before a slow one misses some
  HttpConfig http;      // the viewer, /metrics, /api/status, /healthz, /ws
  WireLimits limits;
  PipelineConfig pipeline;
  BackendKind backend = BackendKind::kAuto;
  BackendOptions backend_options;
  double stats_interval_s = 10;  // 0: no periodic stats log
  std::string log_level = "info";
  tomop::TomopConfig tomop;  // RECAST3D's protocol: the adapters' data port, the viewer bridge
};

}  // namespace slicestream

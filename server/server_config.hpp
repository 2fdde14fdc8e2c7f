// Everything the server is configured with (filled from flags and the config file by
// server_options.cpp, or directly by tests).
#pragma once

#include <string>

#include "cli/heap_retention.hpp"
#include "pipeline/backend/backend.hpp"
#include "pipeline/messages/pipeline_config.hpp"
#include "server/capture/capture_config.hpp"
#include "server/codec/wire_limits.hpp"
#include "server/http/http_config.hpp"
#include "server/socket_security.hpp"
#include "server/tomop_config.hpp"

namespace slicestream {

struct EndpointAddresses {
  std::string data = "tcp://127.0.0.1:5570";      // PULL: detector frames in
  std::string slices = "tcp://127.0.0.1:5571";    // PUB: slices, preview, events out
  std::string requests = "tcp://127.0.0.1:5572";  // ROUTER: requests and replies
};

// CURVE key files (docs/operations.md, "Authentication"); both empty: plain sockets.
struct CurveFiles {
  std::string secret_key;       // the server's secret key file (its public key is derived)
  std::string allowed_clients;  // the public keys of the clients admitted, one per line
};

struct ServerConfig {
  EndpointAddresses endpoints;
  CurveFiles curve_files;
  ServerSecurity security;  // loaded from curve_files by finalize_server_config (or set by tests)
  // Messages the data socket buffers while the pipeline is full, before the detector's sends
  // block; small, because the pipeline's queues already hold queue_depth frames per stage.
  static constexpr int kDefaultDataHwm = 16;
  int data_hwm = kDefaultDataHwm;
  // Messages ZeroMQ queues per subscriber; beyond them the slices endpoint keeps the latest
  // of each stream (server/slice_publisher.hpp).
  int slices_hwm = 1;
  HttpConfig http;  // the viewer, /metrics, /api/status, /healthz, /ws
  WireLimits limits;
  PipelineConfig pipeline;
  BackendKind backend = BackendKind::kAuto;
  BackendOptions backend_options;
  // Freed memory the process keeps mapped for its next slice images (cli/heap_retention.hpp).
  std::size_t retain_freed_mb = cli::kDefaultHeapRetentionMb;
  double stats_interval_s = 10;  // 0: no periodic stats log
  std::string log_level = "info";
  tomop::TomopConfig tomop;  // RECAST3D's protocol: the adapters' data port, the viewer bridge
  CaptureConfig capture;     // raw frames to DXchange HDF5 (server/capture/)
};

}  // namespace slicestream

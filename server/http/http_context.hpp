// What every HTTP and WebSocket session of one endpoint shares (HTTP thread).
#pragma once

#include <memory>

#include "server/http/connection_registry.hpp"
#include "server/http/http_config.hpp"
#include "server/http/io_mailbox.hpp"
#include "server/http/server_port.hpp"
#include "server/http/static_files.hpp"
#include "server/metrics/http_counters.hpp"

namespace slicestream {

class WebSocketHub;

struct HttpContext {
  const HttpConfig& config;
  ServerPort& port;
  HttpCounters& counters;
  StaticFiles files;
  WebSocketHub& hub;
  std::shared_ptr<IoMailbox> mailbox;
  ConnectionRegistry connections;
};

}  // namespace slicestream

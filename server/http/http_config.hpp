// Settings of the HTTP + WebSocket endpoint (flags --http, --http-root, --http-*; docs/viewer.md).
#pragma once

#include <cstddef>
#include <string>

namespace slicestream {

struct HttpConfig {
  // "host:port" to listen on (port 0: an ephemeral one), or "off". Loopback by default: the
  // endpoint has no authentication, like the ZeroMQ endpoints.
  std::string listen = "127.0.0.1:8080";
  // The viewer's files; empty: the first of <program dir>/../clients/web/dist (build tree) and
  // <program dir>/../share/slicestream/web (install tree) that exists.
  std::string root;
  int max_connections = 64;        // HTTP and WebSocket connections open at once
  double max_update_rate_hz = 30;  // images per second per slice (or preview) and connection
  std::size_t max_message_bytes = 64u << 10;  // a WebSocket message from a client
  double max_requests_per_s = 50;             // per WebSocket connection (bursts of twice that)
  int max_requests_in_flight = 16;            // per WebSocket connection
  std::size_t max_events_queued = 256;        // per WebSocket connection, then dropped and told
  double status_timeout_s = 5;                // /metrics and /api/status wait this long
  double idle_timeout_s = 60;  // an HTTP connection without a request, a silent WebSocket peer

  bool enabled() const { return listen != "off"; }
};

}  // namespace slicestream

// Sends a scan to the server's data endpoint: [DataHeader][payload] over a ZeroMQ PUSH socket.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <zmq.hpp>

#include "clients/common/client_security.hpp"
#include "clients/common/connection_watch.hpp"
#include "slicestream.pb.h"

namespace slicestream::client {

class DataSender {
 public:
  // send_hwm: messages queued before send() blocks (the server's back-pressure reaches us here).
  explicit DataSender(const std::string& endpoint, int send_hwm = 256,
                      const ClientSecurity& security = {});

  void send_scan_begin(const v1::ScanBegin& scan_begin);
  // The payload is copied once into the outgoing ZeroMQ message (never into a protobuf).
  void send_frame(const v1::Frame& frame, const void* pixels, std::size_t bytes);
  void send_scan_end(const v1::ScanEnd& scan_end);

  // Waits up to `timeout_ms` for a server to complete the connection (ZeroMQ queues messages for
  // an address nobody listens on without a word); true when one did.
  bool wait_for_server(int timeout_ms);
  // Handshakes, refused handshakes and lost connections so far (ConnectionWatch).
  ConnectionState connection();

  // Waits up to `timeout_ms` for queued messages to leave (ZMQ_LINGER on close).
  void close(int timeout_ms = 10000);

 private:
  void send_header(const v1::DataHeader& header, bool more);

  zmq::context_t context_;
  zmq::socket_t socket_;
  std::unique_ptr<ConnectionWatch> watch_;  // closed before the socket
  ConnectionState final_state_;             // after close()
};

}  // namespace slicestream::client

// Talks to the server's requests endpoint (a DEALER socket): one request at a time, each with its
// own request id, answered by one Reply (+ the float32 slice for GetSlice) or a TimeoutError.
//
// After a timeout the socket is replaced (ZeroMQ's "lazy pirate" pattern), so a request that was
// never delivered is dropped instead of reaching the server later, and a late reply to it can
// never be mistaken for the answer to the next request.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "clients/common/client_error.hpp"
#include "clients/common/client_security.hpp"
#include "slicestream.pb.h"

namespace slicestream::client {

struct Response {
  v1::Reply reply;
  std::vector<float> values;  // GetSlice: width * height, row 0 at the bottom, x fastest;
                              // GetVolume: plane_count * size_y * size_x, x fastest
  bool ok() const { return reply.code() == v1::STATUS_CODE_OK; }
};

using Orientation = std::array<float, 9>;  // RECAST3D: x-axis, y-axis, base point (world mm)

class RequestClient {
 public:
  explicit RequestClient(std::string endpoint, int timeout_ms = 5000, ClientSecurity security = {});
  ~RequestClient();
  RequestClient(const RequestClient&) = delete;
  RequestClient& operator=(const RequestClient&) = delete;

  // Sets protocol_version and request_id, sends, waits for the matching reply. A non-OK code is
  // a normal Response (check ok(), reply.message()); throws TimeoutError / ProtocolError.
  Response call(v1::Request request);

  // box_coordinates: `orientation` is in the box's normalised coordinates [-1, 1]^3 and the slice
  // follows every scan's box.
  Response set_slice(std::uint32_t slice_id, const Orientation& orientation, std::uint32_t width,
                     std::uint32_t height, bool box_coordinates = false);
  Response remove_slice(std::uint32_t slice_id);
  Response reset_slices();
  Response get_slice(const Orientation& orientation, std::uint32_t width, std::uint32_t height);
  // One chunk of planes of a volume (GetVolume).
  Response get_volume(const v1::GetVolume& chunk);
  Response get_status();
  Response set_parameters(const v1::SetParameters& parameters);
  // iterations 0: residual only; enabled false switches the slice's refinement off; settings
  // absent (the default argument): the server's defaults.
  Response set_refinement(std::uint32_t slice_id, bool enabled, std::uint32_t iterations,
                          double interval_s, const v1::RefinementSettings* settings = nullptr);
  // enabled: start capturing scans on the server (label goes into the file name); else stop.
  Response set_capture(bool enabled, const std::string& label = {});

  const std::string& endpoint() const { return endpoint_; }
  // Bounds both the send and the wait for each reply from the next call on.
  void set_timeout_ms(int timeout_ms);

 private:
  void connect();
  Response receive_reply(std::uint64_t request_id);
  // "<what><endpoint> within <timeout> (...)", for a send or a reply that did not come in time.
  TimeoutError timed_out(const std::string& what) const;

  std::string endpoint_;
  int timeout_ms_;
  ClientSecurity security_;
  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> socket_;
  std::uint64_t next_request_id_ = 1;
};

}  // namespace slicestream::client

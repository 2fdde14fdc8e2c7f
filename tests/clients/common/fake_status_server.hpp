// A requests endpoint stand-in for client tests: a ROUTER on its own thread that answers every
// GetStatus with the StatusReport a test function gives for that call (0, 1, ...), so that a test
// decides what "the server" says at each poll.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "slicestream.pb.h"

namespace slicestream::test {

class FakeStatusServer {
 public:
  using Answer = std::function<v1::StatusReport(int call)>;

  FakeStatusServer(const std::string& endpoint, Answer answer)
      : socket_(context_, zmq::socket_type::router), answer_(std::move(answer)) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.bind(endpoint);
    thread_ = std::thread([this] { run(); });
  }
  ~FakeStatusServer() {
    stop_ = true;
    thread_.join();
  }
  FakeStatusServer(const FakeStatusServer&) = delete;
  FakeStatusServer& operator=(const FakeStatusServer&) = delete;

  int calls() const { return calls_.load(); }

 private:
  void run() {
    while (!stop_) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(10));
      if ((item.revents & ZMQ_POLLIN) == 0) continue;
      std::vector<zmq::message_t> parts;
      (void)zmq::recv_multipart(socket_, std::back_inserter(parts));
      if (parts.size() < 2) continue;
      v1::Request request;
      request.ParseFromArray(parts.back().data(), static_cast<int>(parts.back().size()));
      v1::Reply reply;
      reply.set_protocol_version(1);
      reply.set_request_id(request.request_id());
      reply.set_code(v1::STATUS_CODE_OK);
      *reply.mutable_status() = answer_(calls_++);
      const std::string bytes = reply.SerializeAsString();
      socket_.send(parts.front(), zmq::send_flags::sndmore);
      socket_.send(zmq::buffer(bytes), zmq::send_flags::none);
    }
  }

  zmq::context_t context_{1};
  zmq::socket_t socket_;
  Answer answer_;
  std::atomic<bool> stop_{false};
  std::atomic<int> calls_{0};
  std::thread thread_;
};

// A status with the scan and the counters the confirmation reads.
inline v1::StatusReport status_of(std::uint64_t scan_id, const std::string& state,
                                  std::uint64_t scans_started, std::uint64_t frames_received,
                                  std::uint64_t projections_integrated = 0) {
  v1::StatusReport status;
  status.set_scan_id(scan_id);
  status.set_scan_state(state);
  status.set_scan_active(state != "ended" && state != "idle");
  (*status.mutable_counters())["scans_started"] = scans_started;
  (*status.mutable_counters())["frames_received"] = frames_received;
  (*status.mutable_counters())["projections_integrated"] = projections_integrated;
  return status;
}

}  // namespace slicestream::test

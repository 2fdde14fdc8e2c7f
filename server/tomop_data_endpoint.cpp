#include "server/tomop_data_endpoint.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>

#include "kernels/steady_clock.hpp"
#include "kernels/thread_name.hpp"
#include "server/socket_binding.hpp"

namespace slicestream::tomop {

namespace {
constexpr std::chrono::milliseconds kPollInterval{50};
}  // namespace

TomopDataEndpoint::TomopDataEndpoint(zmq::context_t& context, const std::string& address,
                                     DataSocketKind kind, int receive_hwm, const WireLimits& limits,
                                     const ServerSecurity& security, PipelinePort& pipeline,
                                     ServerCounters& counters)
    : socket_(context,
              kind == DataSocketKind::kRep ? zmq::socket_type::rep : zmq::socket_type::pull),
      kind_(kind),
      feed_(limits),
      pipeline_(pipeline),
      counters_(counters) {
  socket_.set(zmq::sockopt::rcvhwm, receive_hwm);
  socket_.set(zmq::sockopt::linger, 0);
  // A packet is a header and one frame's pixels; far bigger ones make ZeroMQ drop the connection.
  const std::size_t cap = 2 * std::max(limits.max_frame_bytes, limits.max_header_bytes);
  socket_.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(cap));
  address_ = bind_endpoint(socket_, address, "tomop_data", security);
}

TomopDataEndpoint::~TomopDataEndpoint() {
  stop();
}

void TomopDataEndpoint::start() {
  thread_ = std::thread([this] { run(); });
}

void TomopDataEndpoint::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

bool TomopDataEndpoint::receive_one() {
  zmq::message_t first;
  if (!socket_.recv(first, zmq::recv_flags::dontwait)) return false;
  ++counters_.tomop_packets;
  // ZeroMQ delivers multipart messages atomically: once the first part is here, all are.
  std::size_t parts = 1;
  for (bool more = first.more(); more; ++parts) {
    zmq::message_t extra;
    (void)socket_.recv(extra, zmq::recv_flags::none);
    more = extra.more();
  }
  bool accepted = false;
  if (parts > 1) {
    ++counters_.tomop_rejected;
    pipeline_.report_rejected(
        wire_reason::kBadParts,
        "tomop data: a packet is one message part, got " + std::to_string(parts), 0);
  } else {
    accepted = handle(std::move(first));
  }
  if (kind_ == DataSocketKind::kRep) answer(accepted);
  return true;
}

bool TomopDataEndpoint::handle(zmq::message_t&& message) {
  const std::uint64_t arrival_ns = steady_now_ns();
  const std::size_t size = message.size();
  auto holder = std::make_shared<zmq::message_t>(std::move(message));
  std::shared_ptr<const std::byte> bytes(holder, static_cast<const std::byte*>(holder->data()));
  TomopFeed::Outcome outcome = feed_.handle(std::move(bytes), size, arrival_ns);
  if (outcome.refused) {
    ++counters_.tomop_rejected;
    pipeline_.report_rejected(outcome.refused->reason, "tomop data: " + outcome.refused->message,
                              outcome.refused->scan_id);
    return false;
  }
  if (!outcome.note.empty()) spdlog::info("tomop data: {}", outcome.note);
  if (outcome.message) return pipeline_.submit(std::move(*outcome.message));
  return true;
}

void TomopDataEndpoint::answer(bool accepted) {
  const std::int32_t value = accepted ? 1 : 0;
  // A REP socket that does not answer wedges its REQ peer: the answer is never skipped.
  socket_.send(zmq::buffer(&value, sizeof value), zmq::send_flags::dontwait);
}

void TomopDataEndpoint::run() {
  name_this_thread("ss-tomop");
  spdlog::info("tomop data endpoint listening on {} ({})", address_,
               kind_ == DataSocketKind::kRep ? "REP" : "PULL");
  while (!stopping_) {
    try {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, kPollInterval);
      if ((item.revents & ZMQ_POLLIN) == 0) continue;
      while (!stopping_ && receive_one()) {
      }
    } catch (const zmq::error_t& error) {
      if (error.num() == ETERM) break;
      spdlog::error("tomop data endpoint: {}", error.what());
    } catch (const std::exception& error) {
      ++counters_.tomop_rejected;
      pipeline_.report_rejected("internal_error",
                                std::string("tomop data endpoint: ") + error.what(), 0);
      if (kind_ == DataSocketKind::kRep) {
        try {
          answer(false);
        } catch (const zmq::error_t&) {
        }
      }
    }
  }
  spdlog::info("tomop data endpoint stopped reading");
}

}  // namespace slicestream::tomop

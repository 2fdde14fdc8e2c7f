#include "server/data_endpoint.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "kernels/steady_clock.hpp"
#include "kernels/thread_name.hpp"
#include "server/codec/data_codec.hpp"
#include "server/socket_binding.hpp"

namespace slicestream {

namespace {
// How often the thread looks at the stop flag while no data arrives.
constexpr std::chrono::milliseconds kPollInterval{50};
// A valid data message has at most 2 parts; a third is kept only to say "too many".
constexpr std::size_t kPartsKept = 3;
// After the stop, the receive queue is read until nothing arrived for this long.
constexpr std::chrono::milliseconds kQuietAfterStop{100};
}  // namespace

DataEndpoint::DataEndpoint(zmq::context_t& context, const std::string& address, int receive_hwm,
                           const WireLimits& limits, const ServerSecurity& security,
                           PipelinePort& pipeline, ServerCounters& counters)
    : socket_(context, zmq::socket_type::pull),
      limits_(limits),
      pipeline_(pipeline),
      counters_(counters) {
  socket_.set(zmq::sockopt::rcvhwm, receive_hwm);
  socket_.set(zmq::sockopt::linger, 0);
  // A hard transport cap well above the codec's limit: parts up to the cap reach the codec, which
  // counts and reports every oversized frame; a bigger part makes ZeroMQ close the connection
  // before allocating it (a sender must not make the server allocate what it likes), reported
  // through the transport monitor.
  transport_cap_ = 2 * std::max(limits.max_frame_bytes, limits.max_header_bytes);
  socket_.set(zmq::sockopt::maxmsgsize, static_cast<std::int64_t>(transport_cap_));
  address_ = bind_endpoint(socket_, address, "data", security);
  parts_.reserve(kPartsKept);
}

DataEndpoint::~DataEndpoint() {
  stop();
}

void DataEndpoint::watch_transport(TransportMonitor& monitor) {
  monitor.watch(socket_, "data", [this](const std::string& address) {
    pipeline_.report_warning(
        "data_connection_closed",
        "a sender's connection to the data endpoint " + address +
            " closed. Normal when a detector finishes; otherwise ZeroMQ closed it over a message "
            "part above the transport cap of " +
            std::to_string(transport_cap_) +
            " bytes (2 x --max-frame-bytes), and what that sender still had queued was lost");
  });
}

void DataEndpoint::start() {
  thread_ = std::thread([this] { run(); });
}

void DataEndpoint::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

bool DataEndpoint::receive(std::size_t* part_count) {
  parts_.clear();
  *part_count = 0;
  zmq::message_t part;
  if (!socket_.recv(part, zmq::recv_flags::dontwait)) return false;
  // ZeroMQ delivers multipart messages atomically: once the first part is here, all are.
  while (true) {
    ++*part_count;
    const bool more = part.more();
    if (parts_.size() < kPartsKept) parts_.push_back(std::move(part));
    if (!more) break;
    part = zmq::message_t();
    (void)socket_.recv(part, zmq::recv_flags::none);
  }
  return true;
}

void DataEndpoint::handle(std::size_t part_count) {
  const std::uint64_t arrival_ns = steady_now_ns();
  ++counters_.data_messages;
  DataDecodeInfo info;
  Decoded<DataMessage> decoded =
      decode_data_message(parts_, part_count, arrival_ns, limits_, &info);
  if (info.payload_realigned) ++counters_.payloads_realigned;
  if (!decoded.ok()) {
    ++counters_.data_rejected;
    const WireError& error = decoded.error();
    pipeline_.report_rejected(error.reason, error.message, error.scan_id);
    return;
  }
  if (capture_ != nullptr) show_capture(decoded.value());
  pipeline_.submit(std::move(decoded.value()));
}

void DataEndpoint::show_capture(const DataMessage& message) {
  if (const auto* frame = std::get_if<RawFrame>(&message)) {
    std::uint64_t suppressed = 0;
    if (!capture_->observe_frame(*frame) && capture_log_throttle_.allow(&suppressed)) {
      spdlog::warn(
          "capture: the writer is behind (--capture-queue-bytes full): {} frame {} of "
          "scan {} is not captured (it is still reconstructed){}",
          to_string(frame->kind), frame->index, frame->scan_id,
          suppressed ? fmt::format(" ({} similar messages suppressed)", suppressed) : "");
    }
  } else if (const auto* begin = std::get_if<ScanBegin>(&message)) {
    // The header as received: a replay sends the detector's own ScanBegin again.
    capture_->observe_scan_begin(begin->scan.scan_id,
                                 std::string(parts_[0].data<char>(), parts_[0].size()));
  } else {
    capture_->observe_scan_end(std::get<ScanEnd>(message).scan_id);
  }
}

DataEndpoint::ReadOutcome DataEndpoint::read_one(std::chrono::milliseconds wait) {
  try {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, wait);
    if ((item.revents & ZMQ_POLLIN) == 0) return ReadOutcome::kNothing;
    std::size_t part_count = 0;
    if (!receive(&part_count)) return ReadOutcome::kRead;
    handle(part_count);
  } catch (const zmq::error_t& error) {
    if (error.num() == ETERM) return ReadOutcome::kTerminated;
    spdlog::error("data endpoint: {}", error.what());
  } catch (const std::exception& error) {
    // E.g. out of memory while decoding: the message is lost, so it is counted and reported.
    ++counters_.data_rejected;
    pipeline_.report_rejected("internal_error", std::string("data endpoint: ") + error.what(), 0);
  }
  return ReadOutcome::kRead;
}

void DataEndpoint::run() {
  name_this_thread("ss-data");
  spdlog::info("data endpoint listening on {} (PULL)", address_);
  while (!stopping_) {
    if (read_one(kPollInterval) == ReadOutcome::kTerminated) return;
  }
  read_what_was_received();
}

void DataEndpoint::read_what_was_received() {
  try {
    socket_.unbind(address_);
  } catch (const zmq::error_t& error) {
    spdlog::warn("data endpoint: cannot unbind {}: {}", address_, error.what());
  }
  std::uint64_t read = 0;
  while (read_one(kQuietAfterStop) == ReadOutcome::kRead)
    ++read;
  counters_.add("data_read_at_stop", read);
  spdlog::info(
      "data endpoint stopped reading ({} unbound); {} messages it had already received went to "
      "the pipeline (which counts them as shutdown discards unless it drains)",
      address_, read);
}

}  // namespace slicestream

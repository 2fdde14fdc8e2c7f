#include "bare_push_pull.hpp"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "clients/common/data_sender.hpp"
#include "kernels/steady_clock.hpp"

namespace slicestream::bench {

namespace {

v1::Frame frame_header(const BareOptions& options, std::uint32_t index) {
  v1::Frame frame;
  frame.set_scan_id(1);
  frame.set_kind(v1::FRAME_KIND_PROJECTION);
  frame.set_index(index);
  frame.set_position(index);
  frame.set_rows(static_cast<std::uint32_t>(options.rows));
  frame.set_cols(static_cast<std::uint32_t>(options.cols));
  frame.set_pixel_type(v1::PIXEL_TYPE_UINT16);
  frame.set_timestamp_ns(static_cast<std::uint64_t>(SteadyClock::now().time_since_epoch().count()));
  return frame;
}

}  // namespace

BareResult measure_bare_push_pull(const BareOptions& options) {
  zmq::context_t context(1);
  zmq::socket_t pull(context, zmq::socket_type::pull);
  pull.set(zmq::sockopt::rcvhwm, options.receive_hwm);
  pull.set(zmq::sockopt::linger, 0);
  pull.bind(options.endpoint);
  const std::string endpoint = pull.get(zmq::sockopt::last_endpoint);

  const std::size_t bytes = static_cast<std::size_t>(options.rows) * options.cols * 2;
  std::atomic<bool> stop{false};
  std::atomic<bool> sender_done{false};
  std::exception_ptr sender_failure;
  std::thread sender_thread([&] {
    try {
      std::vector<std::uint16_t> pixels(bytes / 2);
      for (std::size_t i = 0; i < pixels.size(); ++i)
        pixels[i] = static_cast<std::uint16_t>(i * 2654435761u >> 16);
      client::DataSender sender(endpoint, options.send_hwm);
      for (std::uint32_t index = 0; !stop.load(); ++index) {
        sender.send_frame(frame_header(options, index), pixels.data(), bytes);
      }
      sender.close(0);
    } catch (...) {
      sender_failure = std::current_exception();
    }
    sender_done = true;
  });

  // Receives until the measured interval is over, then drains until the sender has stopped (it
  // may be blocked in a send at the high-water mark).
  BareResult result;
  std::uint64_t received = 0;
  SteadyClock::time_point measure_start;
  SteadyClock::time_point last;
  const auto measured = clock_duration(options.seconds);
  const SteadyClock::time_point give_up = SteadyClock::now() + std::chrono::seconds(30) + measured;
  zmq::message_t part;
  while (!sender_done.load()) {
    zmq::pollitem_t item{pull.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(20));
    if ((item.revents & ZMQ_POLLIN) == 0) {
      if (SteadyClock::now() > give_up) stop = true;
      continue;
    }
    bool more = true;
    while (more) {
      (void)pull.recv(part, zmq::recv_flags::none);
      more = part.more();
    }
    if (stop.load()) continue;
    const SteadyClock::time_point now = SteadyClock::now();
    ++received;
    if (received == options.warmup_frames + 1) measure_start = now;
    if (received > options.warmup_frames + 1) {
      last = now;
      ++result.frames;
      if (now - measure_start >= measured) stop = true;
    }
  }
  sender_thread.join();
  if (sender_failure) std::rethrow_exception(sender_failure);
  result.seconds = std::chrono::duration<double>(last - measure_start).count();
  if (result.frames > 0 && result.seconds > 0) {
    result.frames_per_s = static_cast<double>(result.frames) / result.seconds;
    result.bytes_per_s = result.frames_per_s * static_cast<double>(bytes);
  }
  return result;
}

}  // namespace slicestream::bench

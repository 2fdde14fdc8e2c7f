#include "server/slice_publisher.hpp"

#include <spdlog/spdlog.h>

#include <cstring>

#include "kernels/steady_clock.hpp"
#include "server/codec/publish_codec.hpp"
#include "server/socket_binding.hpp"

namespace slicestream {

SlicePublisher::SlicePublisher(zmq::context_t& context, const std::string& address, int send_hwm,
                               ServerCounters& counters)
    : socket_(context, zmq::socket_type::pub), counters_(counters) {
  socket_.set(zmq::sockopt::sndhwm, send_hwm);
  socket_.set(zmq::sockopt::linger, 0);
  address_ = bind_endpoint(socket_, address, "slices");
}

bool SlicePublisher::values_match(const SliceImage& slice, const char* what) {
  const std::size_t expected = static_cast<std::size_t>(std::max(slice.width, 0)) *
                               static_cast<std::size_t>(std::max(slice.height, 0));
  if (expected > 0 && slice.values.size() == expected) return true;
  ++counters_.publications_invalid;
  spdlog::error("not publishing {} {}: {} values for {} x {}", what, slice.slice_id,
                slice.values.size(), slice.width, slice.height);
  return false;
}

void SlicePublisher::publish_slice(const SliceImage& slice) {
  if (!values_match(slice, "slice")) return;
  send(kSliceTopic, encode_slice(slice, steady_now_ns()), &slice.values);
}

void SlicePublisher::publish_refined(const RefinedSliceImage& refined) {
  if (!values_match(refined.slice, "refined slice")) return;
  send(kRefinedTopic, encode_refined(refined, steady_now_ns()), &refined.slice.values);
}

void SlicePublisher::publish_preview(const PreviewVolume& preview) {
  const std::size_t expected = static_cast<std::size_t>(std::max(preview.size_x, 0)) *
                               static_cast<std::size_t>(std::max(preview.size_y, 0)) *
                               static_cast<std::size_t>(std::max(preview.size_z, 0));
  if (expected == 0 || preview.values.size() != expected) {
    ++counters_.publications_invalid;
    spdlog::error("not publishing preview: {} values for {} x {} x {}", preview.values.size(),
                  preview.size_x, preview.size_y, preview.size_z);
    return;
  }
  send(kPreviewTopic, encode_preview(preview, steady_now_ns()), &preview.values);
}

void SlicePublisher::publish_event(const ServerEvent& event) {
  send(kEventTopic, encode_event(event, steady_now_ns()), nullptr);
}

void SlicePublisher::send(const char* topic, const v1::PublishHeader& header,
                          const std::vector<float>* values) {
  const std::string bytes = header.SerializeAsString();
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  try {
    socket_.send(zmq::buffer(topic, std::strlen(topic)), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(bytes), values ? zmq::send_flags::sndmore : zmq::send_flags::none);
    if (values) socket_.send(payload_message(*values), zmq::send_flags::none);
    ++counters_.publications;
  } catch (const zmq::error_t& error) {
    spdlog::error("slices endpoint: cannot publish a {} message: {}", topic, error.what());
  }
}

void SlicePublisher::close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  closed_ = true;
  socket_.close();
}

}  // namespace slicestream

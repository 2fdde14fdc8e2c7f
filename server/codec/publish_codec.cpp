#include "server/codec/publish_codec.hpp"

#include <cstring>
#include <memory>
#include <utility>

#include "kernels/half_float.hpp"
#include "server/codec/common_codec.hpp"
#include "server/codec/enum_codec.hpp"
#include "server/codec/refinement_codec.hpp"

namespace slicestream {

namespace {
constexpr std::uint32_t kProtocolVersion = 1;
}

void encode_slice_header(const SliceImage& slice, std::uint64_t published_ns,
                         v1::SliceHeader* wire) {
  wire->set_slice_id(slice.slice_id);
  encode_orientation(slice.orientation, wire->mutable_orientation());
  wire->set_width(static_cast<std::uint32_t>(slice.width));
  wire->set_height(static_cast<std::uint32_t>(slice.height));
  wire->set_projections_integrated(slice.projections_integrated);
  wire->set_scan_id(slice.scan_id);
  wire->set_sequence(slice.sequence);
  wire->set_detector_timestamp_ns(slice.newest_detector_timestamp_ns);
  wire->set_arrival_ns(slice.newest_arrival_ns);
  wire->set_published_ns(published_ns);
  wire->set_filter(to_wire(slice.filter.window));
  wire->set_filter_cutoff(slice.filter.cutoff);
}

v1::PublishHeader encode_slice(const SliceImage& slice, std::uint64_t published_ns) {
  v1::PublishHeader header;
  header.set_protocol_version(kProtocolVersion);
  encode_slice_header(slice, published_ns, header.mutable_slice());
  return header;
}

v1::PublishHeader encode_refined(const RefinedSliceImage& refined, std::uint64_t published_ns) {
  v1::PublishHeader header;
  header.set_protocol_version(kProtocolVersion);
  v1::RefinedSliceHeader* wire = header.mutable_refined();
  encode_slice_header(refined.slice, published_ns, wire->mutable_slice());
  wire->set_iterations(static_cast<std::uint32_t>(refined.iterations));
  wire->set_residual_before(refined.residual_before);
  wire->set_residual_after(refined.residual_after);
  wire->set_duration_ms(refined.duration_ms);
  wire->set_solver(refined.solver);
  encode_refinement_summary(refined.summary, wire->mutable_summary());
  return header;
}

v1::PublishHeader encode_preview(const PreviewVolume& preview, std::uint64_t published_ns) {
  v1::PublishHeader header;
  header.set_protocol_version(kProtocolVersion);
  v1::PreviewHeader* wire = header.mutable_preview();
  wire->set_scan_id(preview.scan_id);
  encode_volume_box(preview.box, wire->mutable_volume());
  wire->set_size_x(static_cast<std::uint32_t>(preview.size_x));
  wire->set_size_y(static_cast<std::uint32_t>(preview.size_y));
  wire->set_size_z(static_cast<std::uint32_t>(preview.size_z));
  wire->set_projections_integrated(preview.projections_integrated);
  wire->set_sequence(preview.sequence);
  wire->set_published_ns(published_ns);
  return header;
}

v1::PublishHeader encode_event(const ServerEvent& event, std::uint64_t time_ns) {
  v1::PublishHeader header;
  header.set_protocol_version(kProtocolVersion);
  v1::Event* wire = header.mutable_event();
  wire->set_kind(to_wire(event.kind));
  wire->set_scan_id(event.scan_id);
  wire->set_reason(event.reason);
  wire->set_message(event.message);
  wire->set_time_ns(time_ns);
  return header;
}

namespace {

// The values of an outgoing message and what must live as long as they do.
struct OwnedPayload {
  std::vector<float> values;
  std::shared_ptr<const void> keep_alive;
};

// An fp16 payload's buffer and what must live as long as it does.
struct OwnedBytes {
  std::unique_ptr<unsigned char[]> bytes;
  std::shared_ptr<const void> keep_alive;
};

// `size` bytes that stay where they are: the part points at them and holds a share of `owner`.
zmq::message_t owned_bytes_message(const void* data, std::size_t size,
                                   std::shared_ptr<const void> owner) {
  // ZeroMQ frees the part from its I/O thread once sent (or dropped): the free function drops
  // this message's share of the owner, and with the last share the bytes and their charge go.
  auto* share = new std::shared_ptr<const void>(std::move(owner));
  try {
    return zmq::message_t(
        const_cast<void*>(data), size,
        [](void*, void* hint) { delete static_cast<std::shared_ptr<const void>*>(hint); }, share);
  } catch (...) {
    delete share;  // ZeroMQ took nothing over
    throw;
  }
}

}  // namespace

zmq::message_t payload_message(const std::vector<float>& values,
                               std::shared_ptr<const void> keep_alive) {
  return payload_message(std::vector<float>(values), std::move(keep_alive));
}

zmq::message_t payload_message(std::vector<float>&& values,
                               std::shared_ptr<const void> keep_alive) {
  if (values.empty()) return zmq::message_t();
  auto owned =
      std::make_shared<const OwnedPayload>(OwnedPayload{std::move(values), std::move(keep_alive)});
  const std::vector<float>& kept = owned->values;
  return payload_message(kept.data(), kept.size(), std::move(owned));
}

zmq::message_t payload_message(const float* values, std::size_t count,
                               std::shared_ptr<const void> owner) {
  if (count == 0) return zmq::message_t();
  return owned_bytes_message(values, count * sizeof(float), std::move(owner));
}

zmq::message_t half_payload_message(const float* values, std::size_t count, float scale,
                                    Executor& executor, std::shared_ptr<const void> keep_alive) {
  if (count == 0) return zmq::message_t();
  auto owned = std::make_shared<OwnedBytes>();
  owned->bytes = std::make_unique<unsigned char[]>(2 * count);
  owned->keep_alive = std::move(keep_alive);
  floats_to_halves(values, count, 1.0f / scale, owned->bytes.get(), executor);
  const unsigned char* bytes = owned->bytes.get();
  return owned_bytes_message(bytes, 2 * count, std::move(owned));
}

void mark_half_payload(float scale, v1::PublishHeader* header) {
  header->set_payload_encoding(v1::PAYLOAD_ENCODING_FLOAT16);
  header->set_payload_scale(scale);
}

}  // namespace slicestream

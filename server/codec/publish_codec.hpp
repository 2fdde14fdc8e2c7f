// The slices endpoint's codec: pipeline results -> PublishHeader (the float32 payload travels as
// its own message part, see payload_message).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <zmq.hpp>

#include "kernels/executor.hpp"
#include "pipeline/messages/command.hpp"
#include "pipeline/messages/publish_sink.hpp"
#include "slicestream.pb.h"

namespace slicestream {

// Topic frames (first part of every slices-endpoint message; subscribe by prefix).
inline constexpr const char* kSliceTopic = "slice";
inline constexpr const char* kPreviewTopic = "preview";
inline constexpr const char* kEventTopic = "event";
// Not a prefix of the others (nor they of it): subscribers of "slice" never see refined slices.
inline constexpr const char* kRefinedTopic = "refined";
// The same images and preview volumes with binary16 values (half the bytes,
// PAYLOAD_ENCODING_FLOAT16), encoded only while someone subscribes to them. None is a prefix of
// another topic, nor another of them.
inline constexpr const char* kHalfSliceTopic = "fp16-slice";
inline constexpr const char* kHalfRefinedTopic = "fp16-refined";
inline constexpr const char* kHalfPreviewTopic = "fp16-preview";

void encode_slice_header(const SliceImage& slice, std::uint64_t published_ns,
                         v1::SliceHeader* wire);
v1::PublishHeader encode_slice(const SliceImage& slice, std::uint64_t published_ns);
v1::PublishHeader encode_refined(const RefinedSliceImage& refined, std::uint64_t published_ns);
v1::PublishHeader encode_preview(const PreviewVolume& preview, std::uint64_t published_ns);
v1::PublishHeader encode_event(const ServerEvent& event, std::uint64_t time_ns);

// float32 values as a message part. The rvalue overload takes the vector over without copying.
// `keep_alive` (the values' memory charge, a requester's reply backlog) lives until ZeroMQ has
// sent or dropped the part.
zmq::message_t payload_message(const std::vector<float>& values,
                               std::shared_ptr<const void> keep_alive = nullptr);
zmq::message_t payload_message(std::vector<float>&& values,
                               std::shared_ptr<const void> keep_alive = nullptr);
// `count` values that stay where they are: the part points at them, and `owner` (what holds them
// and their memory charge) lives until ZeroMQ has sent or dropped the part. No copy.
zmq::message_t payload_message(const float* values, std::size_t count,
                               std::shared_ptr<const void> owner);
// `count` values as binary16 h = value / scale in a buffer of the part's own, which holds
// `keep_alive` (the buffer's memory charge) until ZeroMQ has sent or dropped the part. Converted
// in chunks on `executor`.
zmq::message_t half_payload_message(const float* values, std::size_t count, float scale,
                                    Executor& executor,
                                    std::shared_ptr<const void> keep_alive = nullptr);
// Makes `header` (a slice's, refined slice's or preview's) the header of its fp16 publication.
void mark_half_payload(float scale, v1::PublishHeader* header);

}  // namespace slicestream

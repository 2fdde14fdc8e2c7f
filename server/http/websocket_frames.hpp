// The WebSocket messages the server sends (docs/viewer.md, "WebSocket protocol").
//
// Text messages are JSON objects with a "type": "hello", "reply" (a Reply without values),
// "event", "notice". Images travel as binary messages:
//
//   [uint32 little-endian n][n bytes: JSON header, padded with spaces][values]
//
// so that the values start at a multiple of 4 bytes. The header's "type" is "slice", "refined",
// "preview" or "reply" (an OK GetSlice), "encoding" is "f32" (float32 values) or "f16"
// (binary16 values h, the value being h * "scale"), "count" the number of values; "header"
// holds the PublishHeader of the publication or "reply" the Reply.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/executor.hpp"
#include "pipeline/backend/memory_budget.hpp"
#include "pipeline/messages/slice_values.hpp"
#include "slicestream.pb.h"

namespace slicestream {

enum class ImageEncoding { kFloat32, kHalf };
const char* to_string(ImageEncoding encoding);  // "f32", "f16"

// `fields`: the header's JSON members after type, encoding, scale and count, e.g.
// "\"header\":{...}" (no leading comma). `executor`: helpers for the passes over the values (a
// large slice's f16 scale and conversion or f32 copy take milliseconds on one thread); null: the
// calling thread alone. The message is the same either way.
std::string encode_image_message(const std::string& type, const std::string& fields,
                                 const float* values, std::size_t count, ImageEncoding encoding,
                                 Executor* executor = nullptr);

// Bytes of the image message of `count` values in `encoding`, at most (the header included).
std::size_t image_message_bytes(std::size_t count, ImageEncoding encoding);

// A publication waiting to be sent: encoded at most once per encoding, when first sent (on the
// HTTP thread), and shared by every connection that sends it. Its copies of the values count
// against the server's memory budget: the values by the charge it is made with, each encoding by
// a charge taken before it is encoded. Create it with std::make_shared (encoded() shares it).
class ImageUpdate : public std::enable_shared_from_this<ImageUpdate> {
 public:
  // `place`: the slice's orientation (none for the preview). `budget`: where encodings are
  // charged (null: nowhere); `values_charge`: the charge of `values`; `encoder`: helpers of the
  // encoding (encode_image_message; null: the HTTP thread alone; must outlive the update).
  ImageUpdate(std::string type, std::uint32_t slice_id, v1::PublishHeader header,
              SliceValues values, std::array<float, 9> place = {},
              SharedMemoryBudget budget = nullptr,
              std::shared_ptr<MemoryCharge> values_charge = nullptr, Executor* encoder = nullptr);
  const std::string& type() const { return type_; }
  std::uint32_t slice_id() const { return slice_id_; }
  const std::array<float, 9>& place() const { return place_; }
  // The message in `encoding`; null while the memory budget has no room to encode it. The
  // message keeps this update, with its charges, alive until it is let go (sent).
  std::shared_ptr<const std::string> encoded(ImageEncoding encoding);

 private:
  std::string type_;  // "slice", "refined", "preview"
  std::uint32_t slice_id_ = 0;
  std::array<float, 9> place_{};
  v1::PublishHeader header_;
  SliceValues values_;  // shares a published image's buffer (no copy)
  SharedMemoryBudget budget_;
  std::shared_ptr<MemoryCharge> values_charge_;
  Executor* encoder_ = nullptr;
  std::string encoded_[2];
  std::shared_ptr<MemoryCharge> encoded_charges_[2];
  bool is_encoded_[2] = {false, false};
};

std::string event_message(const v1::Event& event);
std::string reply_message(const v1::Reply& reply);  // a reply without values (text)
std::string notice_message(const std::string& text);

}  // namespace slicestream

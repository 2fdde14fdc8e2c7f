#include "server/http/websocket_frames.hpp"

#include <fmt/format.h>

#include <cstring>

#include "kernels/half_float.hpp"
#include "server/http/proto_json.hpp"

namespace slicestream {

namespace {

// Bytes of an f32 message's values one helper copies at a time.
constexpr std::size_t kCopyGrainBytes = std::size_t{1} << 20;

void append_le32(std::string& out, std::uint32_t value) {
  for (int i = 0; i < 4; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xffu);
}

}  // namespace

const char* to_string(ImageEncoding encoding) {
  return encoding == ImageEncoding::kHalf ? "f16" : "f32";
}

std::string encode_image_message(const std::string& type, const std::string& fields,
                                 const float* values, std::size_t count, ImageEncoding encoding,
                                 Executor* executor) {
  InlineExecutor calling_thread;
  Executor& run = executor ? *executor : calling_thread;
  const bool half = encoding == ImageEncoding::kHalf;
  const float scale = half ? half_image_scale(values, count, run) : 1.0f;
  std::string header = fmt::format(R"({{"type":{},"encoding":"{}","scale":{},"count":{},{}}})",
                                   json_string(type), to_string(encoding), scale, count, fields);
  header.append((4 - header.size() % 4) % 4, ' ');
  const std::size_t value_bytes = count * (encoding == ImageEncoding::kHalf ? 2 : 4);
  std::string out;
  out.reserve(4 + header.size() + value_bytes);
  append_le32(out, static_cast<std::uint32_t>(header.size()));
  out += header;
  const std::size_t offset = out.size();
  out.resize(offset + value_bytes);
  char* data = out.data() + offset;
  // Little-endian host (x86-64, aarch64): the values' bytes are the message's.
  if (half) {
    floats_to_halves(values, count, 1.0f / scale, data, run);
  } else {
    run.parallel_for(value_bytes, kCopyGrainBytes, [&](std::size_t begin, std::size_t end, int) {
      std::memcpy(data + begin, reinterpret_cast<const char*>(values) + begin, end - begin);
    });
  }
  return out;
}

std::size_t image_message_bytes(std::size_t count, ImageEncoding encoding) {
  // The length prefix and a header well above any PublishHeader or Reply in JSON.
  constexpr std::size_t kHeaderBytes = 4096;
  return kHeaderBytes + count * (encoding == ImageEncoding::kHalf ? 2 : 4);
}

ImageUpdate::ImageUpdate(std::string type, std::uint32_t slice_id, v1::PublishHeader header,
                         SliceValues values, std::array<float, 9> place, SharedMemoryBudget budget,
                         std::shared_ptr<MemoryCharge> values_charge, Executor* encoder)
    : type_(std::move(type)),
      slice_id_(slice_id),
      place_(place),
      header_(std::move(header)),
      values_(std::move(values)),
      budget_(std::move(budget)),
      values_charge_(std::move(values_charge)),
      encoder_(encoder) {}

std::shared_ptr<const std::string> ImageUpdate::encoded(ImageEncoding encoding) {
  const int index = encoding == ImageEncoding::kHalf ? 1 : 0;
  if (!is_encoded_[index]) {
    if (budget_) {
      encoded_charges_[index] = budget_->try_charge(image_message_bytes(values_.size(), encoding));
      if (!encoded_charges_[index]) return nullptr;
    }
    encoded_[index] = encode_image_message(type_, "\"header\":" + to_json(header_), values_.data(),
                                           values_.size(), encoding, encoder_);
    is_encoded_[index] = true;
  }
  // Shares ownership of this update: its charges last as long as the message.
  return std::shared_ptr<const std::string>(shared_from_this(), &encoded_[index]);
}

std::string event_message(const v1::Event& event) {
  return R"({"type":"event","event":)" + to_json(event) + "}";
}

std::string reply_message(const v1::Reply& reply) {
  return R"({"type":"reply","reply":)" + to_json(reply) + "}";
}

std::string notice_message(const std::string& text) {
  return R"({"type":"notice","message":)" + json_string(text) + "}";
}

}  // namespace slicestream

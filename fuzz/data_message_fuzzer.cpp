// libFuzzer target: the data endpoint's codec ([DataHeader][payload] -> DataMessage) with the
// server's default limits: header parsing, protocol version, ScanBegin geometry and volume checks,
// frame shape, pixel type and payload-size validation, and the zero-copy payload hand-over.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <zmq.hpp>

#include "fuzz/fuzz_parts.hpp"
#include "server/codec/data_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace slicestream;
  const std::vector<std::string> wire = fuzz::split_parts(data, size);
  if (wire.empty()) return 0;
  std::vector<zmq::message_t> parts;
  for (const std::string& part : wire)
    parts.emplace_back(part.data(), part.size());
  const WireLimits limits;
  Decoded<DataMessage> decoded = decode_data_message(parts, parts.size(), 1, limits);
  if (decoded.ok()) {
    // A frame's view must lie inside its payload: touch its first and last byte.
    if (auto* frame = std::get_if<RawFrame>(&decoded.value()); frame && frame->payload_bytes > 0) {
      const std::byte* bytes = frame->payload.get();
      volatile std::byte sink = bytes[0];
      sink = bytes[frame->payload_bytes - 1];
      (void)sink;
    }
  } else if (decoded.error().reason.empty() || decoded.error().message.empty()) {
    __builtin_trap();  // every refusal names its reason and explains itself
  }
  return 0;
}

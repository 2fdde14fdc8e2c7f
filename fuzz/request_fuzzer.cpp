// libFuzzer target: the requests endpoint's codec (Request -> Command) with the server's default
// limits: every request kind, enums, orientations, slice sizes, capture labels.
#include <cstddef>
#include <cstdint>

#include "server/codec/request_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace slicestream;
  const WireLimits limits;
  const DecodedRequest decoded = decode_request(data, size, limits);
  if (!decoded.command.ok() &&
      (decoded.command.error().reason.empty() || decoded.command.error().message.empty())) {
    __builtin_trap();  // every refusal names its reason and explains itself
  }
  if (decoded.capture && decoded.capture->ok() &&
      decoded.capture->value().label.size() > kMaxCaptureLabel) {
    __builtin_trap();  // a label goes into a file name: its bound must hold
  }
  return 0;
}

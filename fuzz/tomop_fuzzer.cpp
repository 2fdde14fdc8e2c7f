// libFuzzer target: RECAST3D's tomop packets. Each input is a sequence of packets (fuzz_parts
// layout) fed to one TomopFeed, so the feed's state (settings, box, active scan) is fuzzed too;
// every packet also goes through the GUI-direction decoding (control_change).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_parts.hpp"
#include "server/tomop/recast3d_controls.hpp"
#include "server/tomop/tomop_codec.hpp"
#include "server/tomop/tomop_feed.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace slicestream;
  WireLimits limits;
  tomop::TomopFeed feed(limits);
  for (const std::string& packet : fuzz::split_parts(data, size)) {
    // An owned copy of exactly its size (reads past the end are caught), as the endpoint holds it.
    std::shared_ptr<std::byte[]> bytes(new std::byte[packet.empty() ? 1 : packet.size()]);
    std::memcpy(bytes.get(), packet.data(), packet.size());
    const std::shared_ptr<const std::byte> message(bytes, bytes.get());
    const std::byte* raw = message.get();
    Decoded<tomop::Packet> decoded = tomop::decode_packet(raw, packet.size());
    if (decoded.ok()) {
      (void)tomop::control_change(decoded.value());
      // What decodes must encode to the same number of bytes (the bridge relies on it).
      if (tomop::encoded_size(decoded.value()) != packet.size()) __builtin_trap();
    }
    tomop::TomopFeed::Outcome outcome = feed.handle(message, packet.size(), 1);
    if (outcome.refused && outcome.refused->reason.empty()) __builtin_trap();
  }
  return 0;
}

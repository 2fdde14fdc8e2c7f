// What the capture tests share: a scan of random frames as the data endpoint decodes them, and
// a fresh directory.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "pipeline/messages/data_message.hpp"
#include "slicestream.pb.h"
#include "tests/common/temp_dir.hpp"

namespace slicestream::test {

// The directory a capture writes into: free at first (the server makes it), removed at scope exit.
class CaptureDir : public TempDir {
 public:
  CaptureDir() : TempDir("slicestream-capture-test", /*create=*/false) {}
};

// A parallel-beam scan of `slots` angles on rows x cols uint16 pixels, with random pixels.
struct RandomScan {
  v1::ScanBegin begin;
  std::mt19937 random{std::random_device{}()};

  RandomScan(std::uint64_t scan_id, int rows, int cols, int slots, int darks, int flats) {
    begin.set_scan_id(scan_id);
    begin.set_detector_rows(static_cast<std::uint32_t>(rows));
    begin.set_detector_cols(static_cast<std::uint32_t>(cols));
    begin.set_pixel_width_mm(0.5);
    begin.set_pixel_height_mm(0.5);
    begin.set_pixel_type(v1::PIXEL_TYPE_UINT16);
    begin.set_dark_count(static_cast<std::uint32_t>(darks));
    begin.set_flat_count(static_cast<std::uint32_t>(flats));
    begin.set_projections_per_rotation(static_cast<std::uint32_t>(slots));
    for (int k = 0; k < slots; ++k)
      begin.mutable_parallel()->add_angles_rad(3.14159 * k / slots);
    begin.set_description("random capture scan");
  }

  std::string header_bytes() const {
    v1::DataHeader header;
    header.set_protocol_version(1);
    *header.mutable_scan_begin() = begin;
    return header.SerializeAsString();
  }

  RawFrame frame(FrameKind kind, std::uint32_t index) {
    RawFrame frame;
    frame.scan_id = begin.scan_id();
    frame.kind = kind;
    frame.index = index;
    frame.detector_timestamp_ns = 1000 + index;
    frame.shape = {static_cast<int>(begin.detector_rows()),
                   static_cast<int>(begin.detector_cols())};
    frame.pixel_type = PixelType::kUint16;
    std::vector<std::uint16_t> pixels(frame.shape.pixels());
    std::uniform_int_distribution<int> value(0, 65535);
    for (auto& p : pixels)
      p = static_cast<std::uint16_t>(value(random));
    frame.payload_bytes = pixels.size() * sizeof(std::uint16_t);
    std::shared_ptr<std::byte[]> bytes(new std::byte[frame.payload_bytes]);
    std::memcpy(bytes.get(), pixels.data(), frame.payload_bytes);
    frame.payload = std::shared_ptr<const std::byte>(bytes, bytes.get());
    return frame;
  }
};

}  // namespace slicestream::test

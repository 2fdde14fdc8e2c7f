// Semantic checks of a scan description (the server has checked the wire format; the pipeline
// checks what it relies on, so that an in-process caller gets the same protection).
#pragma once

#include <string>

#include "pipeline/messages/scan_description.hpp"

namespace slicestream {

constexpr int kMaxDetectorSide = 65536;
constexpr int kMaxProjectionsPerRotation = 1 << 20;
constexpr int kMaxCalibrationFrames = 1 << 16;

// Empty when the scan can be reconstructed, else the first problem in words.
std::string validate_scan_description(const ScanDescription& scan);

bool is_valid(PixelType type);

}  // namespace slicestream

// Semantic checks of a scan description (the server has checked the wire format; the pipeline
// checks what it relies on, so that an in-process caller gets the same protection).
#pragma once

#include <string>

#include "pipeline/messages/scan_description.hpp"

namespace slicestream {

// Empty when the scan can be reconstructed, else the first problem in words.
std::string validate_scan_description(const ScanDescription& scan);
// Empty when `box` is finite with max > min on every axis.
std::string volume_box_problem(const VolumeBox& box);

bool is_valid(PixelType type);

}  // namespace slicestream

// ScanBegin -> ScanDescription: detector, pixel type, counts, volume box and the geometry
// (parallel, circular cone or per-projection vectors), all validated against WireLimits.
#pragma once

#include "pipeline/messages/scan_description.hpp"
#include "server/codec/wire_error.hpp"
#include "server/codec/wire_limits.hpp"
#include "slicestream.pb.h"

namespace slicestream {

Decoded<ScanDescription> decode_scan_begin(const v1::ScanBegin& wire, const WireLimits& limits);

}  // namespace slicestream

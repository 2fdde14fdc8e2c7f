// The scan parts of a StatusReport: the current scan as the server read its ScanBegin, and the
// records of the recent scans (what became of the messages carrying each scan's id).
#pragma once

#include "pipeline/messages/metrics_snapshot.hpp"
#include "pipeline/messages/scan_description.hpp"
#include "slicestream.pb.h"

namespace slicestream {

// What a user asks `status` for beyond the box and detector (encode_status_report sets those):
// pixel size, distances, pixel type, calibration counts, units.
void encode_scan_geometry(const ScanDescription& scan, v1::ScanSummary* wire);
void encode_scan_record(const ScanRecord& record, v1::ScanRecord* wire);

}  // namespace slicestream

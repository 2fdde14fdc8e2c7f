// The wire form of refinement settings and summaries (v1::RefinementSettings,
// v1::RefinementSummary): names checked against the pipeline's name tables
// (pipeline/backend/refinement_settings.hpp); the ranges are the pipeline's to check.
#pragma once

#include "pipeline/backend/refinement_settings.hpp"
#include "server/codec/wire_error.hpp"
#include "slicestream.pb.h"

namespace slicestream {

// Empty strings and absent fields keep the defaults; an unknown name is refused (bad_value).
Decoded<RefinementSettings> decode_refinement_settings(const v1::RefinementSettings& wire);
// With the defaults filled in (what the refinement will do).
void encode_refinement_settings(const RefinementSettings& settings, v1::RefinementSettings* wire);
void encode_refinement_summary(const RefinementSummary& summary, v1::RefinementSummary* wire);

}  // namespace slicestream

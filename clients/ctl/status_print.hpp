// Human-readable rendering of the server's replies (status, parameters).
#pragma once

#include <ostream>
#include <string>

#include "slicestream.pb.h"

namespace slicestream::ctl {

void print_parameters(std::ostream& out, const v1::Parameters& parameters);
void print_status(std::ostream& out, const v1::StatusReport& status);
// "fista, tv weight 0.001, x >= 0, stop at 1 x noise level"
std::string describe_refinement_settings(const v1::RefinementSettings& settings);
// "fista, tv weight 0.001, x >= 0: stopped at the noise level (0.0213, target 0.0213)"
std::string describe_refinement_summary(const v1::RefinementSummary& summary);

}  // namespace slicestream::ctl

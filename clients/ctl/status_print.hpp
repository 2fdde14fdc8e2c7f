// Human-readable rendering of the server's replies (status, parameters).
#pragma once

#include <ostream>

#include "slicestream.pb.h"

namespace slicestream::ctl {

void print_parameters(std::ostream& out, const v1::Parameters& parameters);
void print_status(std::ostream& out, const v1::StatusReport& status);

}  // namespace slicestream::ctl

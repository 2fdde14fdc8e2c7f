// Range checks for numeric flags whose messages people can read: "--rows: must be > 0 (got 0)"
// instead of CLI11's "Value 0 not in range 0.000000 to 1797693134862315...".
#pragma once

#include <CLI/CLI.hpp>

namespace slicestream::cli {

CLI::Validator positive();                        // > 0
CLI::Validator non_negative();                    // >= 0
CLI::Validator in_range(double min, double max);  // min <= value <= max

}  // namespace slicestream::cli

// Numbers from a text file: angles (one per line) or ASTRA vectors (12 per line). Separators are
// whitespace or commas; '#' starts a comment.
#pragma once

#include <string>
#include <vector>

namespace slicestream::detector {

// Throws std::runtime_error naming the file and line of anything that is not a finite number.
std::vector<double> read_number_file(const std::string& path);

}  // namespace slicestream::detector

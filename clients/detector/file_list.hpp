// Turns what a user types for "these images" into an ordered list of files: a directory (its
// .tif/.tiff files), a glob pattern ("scan/proj_*.tif") or one file. Natural order, so that
// proj_2.tif comes before proj_10.tif.
#pragma once

#include <string>
#include <vector>

namespace slicestream::detector {

// Throws std::runtime_error when nothing matches.
std::vector<std::string> expand_file_pattern(const std::string& pattern);

// a < b in natural order: runs of digits compare as numbers.
bool natural_less(const std::string& a, const std::string& b);

}  // namespace slicestream::detector

// "Did you mean ...?": the known name closest to a misspelt one.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace slicestream::cli {

// Edits (insert, delete, substitute, swap two neighbours) between `a` and `b`, ignoring case and
// treating '-' and '_' alike: "fliter" is 1 from "filter".
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate closest to `name`, or "" when none is close enough to be a likely typo (more
// than a third of the longer name, at least 2, differs).
std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace slicestream::cli

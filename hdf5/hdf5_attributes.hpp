// Attributes written the one way every writer of the project writes them.
#pragma once

#include <hdf5.h>

#include <string>

namespace slicestream::hdf5 {

// A scalar fixed-length string attribute `name` on `object` (file, group or dataset); an empty
// text is stored as one NUL byte, since HDF5 has no strings of length 0. False when HDF5 refused
// (the caller's message names the file).
[[nodiscard]] bool write_text_attribute(hid_t object, const char* name, const std::string& text);

}  // namespace slicestream::hdf5

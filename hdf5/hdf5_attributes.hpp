// Attributes written the one way every writer of the project writes them.
#pragma once

#include <hdf5.h>

#include <cstddef>
#include <string>

namespace slicestream::hdf5 {

// A scalar fixed-length string attribute `name` on `object` (file, group or dataset); an empty
// text is stored as one NUL byte, since HDF5 has no strings of length 0. False when HDF5 refused
// (the caller's message names the file).
[[nodiscard]] bool write_text_attribute(hid_t object, const char* name, const std::string& text);

// A numeric attribute of HDF5 type `type` (H5T_NATIVE_DOUBLE, ...): a scalar holding *value, or a
// 1D list of `count` values. False when HDF5 refused.
[[nodiscard]] bool write_scalar_attribute(hid_t object, const char* name, hid_t type,
                                          const void* value);
[[nodiscard]] bool write_list_attribute(hid_t object, const char* name, hid_t type,
                                        const void* values, std::size_t count);

}  // namespace slicestream::hdf5

// The kernels' PixelType and HDF5's types: the native type that reads or writes a PixelType's
// pixels, and the PixelType a stored dataset's type is read as.
#pragma once

#include <hdf5.h>

#include <optional>

#include "kernels/frame_view.hpp"

namespace slicestream::hdf5 {

// H5T_NATIVE_UINT16, H5T_NATIVE_UINT32 or H5T_NATIVE_FLOAT.
hid_t native_type(PixelType type);

// The PixelType that holds a stored type's values: integers of up to 2 bytes as kUint16, wider
// integers as kUint32, floating point as kFloat32 (HDF5 converts on read); nullopt for strings,
// compounds and the other classes that are not pixels.
std::optional<PixelType> pixel_type_of_stored(hid_t stored_type);

}  // namespace slicestream::hdf5

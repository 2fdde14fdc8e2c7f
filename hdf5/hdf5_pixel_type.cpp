#include "hdf5/hdf5_pixel_type.hpp"

namespace slicestream::hdf5 {

hid_t native_type(PixelType type) {
  switch (type) {
    case PixelType::kUint16:
      return H5T_NATIVE_UINT16;
    case PixelType::kUint32:
      return H5T_NATIVE_UINT32;
    case PixelType::kFloat32:
      return H5T_NATIVE_FLOAT;
  }
  return H5T_NATIVE_FLOAT;
}

std::optional<PixelType> pixel_type_of_stored(hid_t stored_type) {
  switch (H5Tget_class(stored_type)) {
    case H5T_INTEGER:
      return H5Tget_size(stored_type) <= 2 ? PixelType::kUint16 : PixelType::kUint32;
    case H5T_FLOAT:
      return PixelType::kFloat32;
    default:
      return std::nullopt;
  }
}

}  // namespace slicestream::hdf5

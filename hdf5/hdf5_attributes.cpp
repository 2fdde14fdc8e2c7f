#include "hdf5/hdf5_attributes.hpp"

#include "hdf5/hdf5_handle.hpp"

namespace slicestream::hdf5 {

bool write_text_attribute(hid_t object, const char* name, const std::string& text) {
  const std::string stored = text.empty() ? std::string(1, '\0') : text;
  const Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  const Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  if (!type.valid() || !space.valid() || H5Tset_size(type.get(), stored.size()) < 0) return false;
  const Handle attribute(
      H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  return attribute.valid() && H5Awrite(attribute.get(), type.get(), stored.data()) >= 0;
}

}  // namespace slicestream::hdf5

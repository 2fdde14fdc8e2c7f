#include "hdf5/hdf5_attributes.hpp"

#include "hdf5/hdf5_handle.hpp"

namespace slicestream::hdf5 {
namespace {

bool write_attribute(hid_t object, const char* name, hid_t type, const Handle& space,
                     const void* values) {
  if (!space.valid()) return false;
  const Handle attribute(H5Acreate2(object, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                         H5Aclose);
  return attribute.valid() && H5Awrite(attribute.get(), type, values) >= 0;
}

}  // namespace

bool write_text_attribute(hid_t object, const char* name, const std::string& text) {
  const std::string stored = text.empty() ? std::string(1, '\0') : text;
  const Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  const Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  if (!type.valid() || H5Tset_size(type.get(), stored.size()) < 0) return false;
  return write_attribute(object, name, type.get(), space, stored.data());
}

bool write_scalar_attribute(hid_t object, const char* name, hid_t type, const void* value) {
  return write_attribute(object, name, type, Handle(H5Screate(H5S_SCALAR), H5Sclose), value);
}

bool write_list_attribute(hid_t object, const char* name, hid_t type, const void* values,
                          std::size_t count) {
  const hsize_t n = count;
  return write_attribute(object, name, type, Handle(H5Screate_simple(1, &n, nullptr), H5Sclose),
                         values);
}

}  // namespace slicestream::hdf5

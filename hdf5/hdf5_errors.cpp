#include "hdf5/hdf5_errors.hpp"

#include <hdf5.h>

namespace slicestream::hdf5 {

void silence_error_printing() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

std::vector<std::string> error_descriptions() {
  std::vector<std::string> descriptions;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_DOWNWARD,
      [](unsigned, const H5E_error2_t* error, void* data) -> herr_t {
        if (error->desc != nullptr && *error->desc != '\0') {
          static_cast<std::vector<std::string>*>(data)->push_back(error->desc);
        }
        return 0;
      },
      &descriptions);
  return descriptions;
}

}  // namespace slicestream::hdf5

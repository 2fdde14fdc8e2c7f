// An HDF5 file that lives in memory only (the core driver without a backing store), for tests
// that write and read back without touching the disk.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "hdf5/hdf5_handle.hpp"

namespace slicestream::hdf5 {

inline Handle memory_file(const std::string& name) {
  const Handle access(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_core(access.get(), 1 << 16, 0);
  Handle file(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), H5Fclose);
  EXPECT_TRUE(file.valid());
  return file;
}

}  // namespace slicestream::hdf5

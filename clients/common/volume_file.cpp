#include "clients/common/volume_file.hpp"

#include <fmt/format.h>
#include <hdf5.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "clients/common/client_error.hpp"
#include "clients/common/image_file.hpp"
#include "clients/common/slice_metadata.hpp"
#include "hdf5/hdf5_attributes.hpp"
#include "hdf5/hdf5_errors.hpp"
#include "hdf5/hdf5_handle.hpp"

namespace slicestream::client {

namespace {

using hdf5::Handle;

bool is_hdf5_path(const std::string& path) {
  std::string extension = std::filesystem::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension == ".h5" || extension == ".hdf5";
}

std::array<double, 3> voxel_mm(const v1::VolumeChunkHeader& h) {
  const v1::VolumeBox& b = h.box();
  return {(b.max_mm().x() - b.min_mm().x()) / h.size_x(),
          (b.max_mm().y() - b.min_mm().y()) / h.size_y(),
          (b.max_mm().z() - b.min_mm().z()) / h.size_z()};
}

// -------------------------------------------------------------------------------- HDF5

class Hdf5VolumeWriter : public VolumeWriter {
 public:
  Hdf5VolumeWriter(const std::string& path, const v1::VolumeChunkHeader& h) : path_(path) {
    hdf5::silence_error_printing();  // our own messages instead of HDF5's stack
    const std::string temporary = path + ".tmp";
    file_ = Handle(H5Fcreate(temporary.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
    if (!file_.valid()) throw ClientError("cannot create " + temporary + " (HDF5)");
    const hsize_t dims[3] = {h.size_z(), h.size_y(), h.size_x()};
    space_ = Handle(H5Screate_simple(3, dims, nullptr), H5Sclose);
    dataset_ = Handle(H5Dcreate2(file_.get(), "/volume", H5T_NATIVE_FLOAT, space_.get(),
                                 H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                      H5Dclose);
    if (!dataset_.valid()) throw ClientError("cannot create the dataset /volume in " + temporary);
    const v1::VolumeBox& b = h.box();
    attribute("box_min_mm", {b.min_mm().x(), b.min_mm().y(), b.min_mm().z()});
    attribute("box_max_mm", {b.max_mm().x(), b.max_mm().y(), b.max_mm().z()});
    const std::array<double, 3> voxel = voxel_mm(h);
    attribute("voxel_size_mm", {voxel[0], voxel[1], voxel[2]});
    attribute("scan_id", {static_cast<double>(h.scan_id())});
    attribute("projections_integrated", {static_cast<double>(h.projections_integrated())});
    attribute("filter_cutoff", {h.filter_cutoff()});
    text_attribute("filter", filter_name(h.filter()));
    text_attribute("units", "1/mm");
    text_attribute("axes", "[z][y][x]; voxel centres at box_min_mm + (i + 1/2) * voxel_size_mm");
    dims_[0] = h.size_z();
    dims_[1] = h.size_y();
    dims_[2] = h.size_x();
  }
  ~Hdf5VolumeWriter() override {
    close();
    if (!finished_) std::filesystem::remove(path_ + ".tmp");
  }

  void write_planes(int first, int count, const std::vector<float>& values) override {
    const hsize_t start[3] = {static_cast<hsize_t>(first), 0, 0};
    const hsize_t extent[3] = {static_cast<hsize_t>(count), dims_[1], dims_[2]};
    const Handle memory(H5Screate_simple(3, extent, nullptr), H5Sclose);
    const bool ok =
        memory.valid() &&
        H5Sselect_hyperslab(space_.get(), H5S_SELECT_SET, start, nullptr, extent, nullptr) >= 0 &&
        H5Dwrite(dataset_.get(), H5T_NATIVE_FLOAT, memory.get(), space_.get(), H5P_DEFAULT,
                 values.data()) >= 0;
    if (!ok) throw ClientError("cannot write planes to " + path_ + ".tmp (disk full?)");
  }

  void finish() override {
    if (!close()) throw ClientError("cannot complete " + path_ + ".tmp (disk full?)");
    std::error_code error;
    std::filesystem::rename(path_ + ".tmp", path_, error);
    if (error) throw ClientError("cannot rename " + path_ + ".tmp: " + error.message());
    finished_ = true;
  }

  std::string describe() const override { return path_ + " (HDF5, dataset /volume [z][y][x])"; }

 private:
  void attribute(const char* name, const std::vector<double>& values) {
    check_attribute(name, hdf5::write_list_attribute(dataset_.get(), name, H5T_NATIVE_DOUBLE,
                                                     values.data(), values.size()));
  }
  void text_attribute(const char* name, const std::string& text) {
    check_attribute(name, hdf5::write_text_attribute(dataset_.get(), name, text));
  }
  void check_attribute(const char* name, bool written) const {
    if (!written) {
      throw ClientError(std::string("cannot write the attribute ") + name + " to " + path_ +
                        ".tmp");
    }
  }
  bool close() {
    const bool dataset_closed = dataset_.close();
    const bool space_closed = space_.close();
    const bool file_closed = file_.close();
    return dataset_closed && space_closed && file_closed;
  }

  std::string path_;
  Handle file_;
  Handle space_;
  Handle dataset_;
  hsize_t dims_[3] = {0, 0, 0};
  bool finished_ = false;
};

// -------------------------------------------------------------------------------- TIFF stack

class TiffStackWriter : public VolumeWriter {
 public:
  TiffStackWriter(const std::string& folder, const v1::VolumeChunkHeader& h)
      : folder_(folder), header_(h) {
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    if (error) throw ClientError("cannot create the folder " + folder + ": " + error.message());
  }

  void write_planes(int first, int count, const std::vector<float>& values) override {
    const std::size_t plane = std::size_t{header_.size_x()} * std::size_t{header_.size_y()};
    for (int k = 0; k < count; ++k) {
      const int z = first + k;
      const auto begin = values.begin() + static_cast<std::ptrdiff_t>(k * plane);
      const std::vector<float> slice(begin, begin + static_cast<std::ptrdiff_t>(plane));
      write_tiff_float32(path_of(z), static_cast<int>(header_.size_x()),
                         static_cast<int>(header_.size_y()), slice,
                         slice_metadata(plane_header(z), "volume plane"));
    }
  }

  void finish() override {}

  std::string describe() const override {
    return folder_ + "/ (TIFF stack, plane_" + std::string(digits(), '0') + ".tiff ...)";
  }

 private:
  int digits() const {
    return std::max(4, static_cast<int>(std::to_string(header_.size_z()).size()));
  }
  std::string path_of(int z) const {
    return folder_ + "/" + fmt::format("plane_{:0{}d}.tiff", z, digits());
  }
  // Plane z as an axial slice: its header gives each TIFF its metadata.
  v1::SliceHeader plane_header(int z) const {
    const v1::VolumeBox& b = header_.box();
    const double plane_mm = (b.max_mm().z() - b.min_mm().z()) / header_.size_z();
    v1::SliceHeader slice;
    slice.set_slice_id(static_cast<std::uint32_t>(z));
    slice.set_scan_id(header_.scan_id());
    slice.set_width(header_.size_x());
    slice.set_height(header_.size_y());
    slice.set_projections_integrated(header_.projections_integrated());
    slice.set_filter(header_.filter());
    slice.set_filter_cutoff(header_.filter_cutoff());
    const double values[9] = {b.max_mm().x() - b.min_mm().x(),
                              0,
                              0,
                              0,
                              b.max_mm().y() - b.min_mm().y(),
                              0,
                              b.min_mm().x(),
                              b.min_mm().y(),
                              b.min_mm().z() + (z + 0.5) * plane_mm};
    for (double v : values)
      slice.mutable_orientation()->add_values(static_cast<float>(v));
    return slice;
  }

  std::string folder_;
  v1::VolumeChunkHeader header_;
};

}  // namespace

std::unique_ptr<VolumeWriter> open_volume_writer(const std::string& path,
                                                 const v1::VolumeChunkHeader& first) {
  if (is_hdf5_path(path)) return std::make_unique<Hdf5VolumeWriter>(path, first);
  return std::make_unique<TiffStackWriter>(path, first);
}

}  // namespace slicestream::client

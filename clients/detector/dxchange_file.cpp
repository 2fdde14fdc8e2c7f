#include "clients/detector/dxchange_file.hpp"

#include <hdf5.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "hdf5/hdf5_errors.hpp"
#include "hdf5/hdf5_handle.hpp"
#include "hdf5/hdf5_pixel_type.hpp"

namespace slicestream::detector {

namespace {

using hdf5::Handle;

// Why H5Fopen failed, in words: a truncated file says how many bytes are missing.
std::string open_failure(const std::string& path) {
  const std::vector<std::string> errors = hdf5::error_descriptions();
  for (const std::string& error : errors) {
    unsigned long long eof = 0, base = 0, stored_eof = 0;
    if (std::sscanf(error.c_str(),
                    "truncated file: eof = %llu, sblock->base_addr = %llu, "
                    "stored_eof = %llu",
                    &eof, &base, &stored_eof) == 3) {
      return path + ": truncated HDF5 file: it has " + std::to_string(eof) +
             " bytes but its superblock says " + std::to_string(stored_eof) + " (the last " +
             std::to_string(stored_eof - eof) +
             " bytes are missing: an interrupted copy or download, or a writer that did not "
             "close the file)";
    }
  }
  std::string text = path + ": cannot open the HDF5 file";
  for (const std::string& error : errors)
    text += ": " + error;
  return text;
}

// True when every component of `path` exists (H5Lexists fails on a missing intermediate group).
bool path_exists(hid_t file, const std::string& path) {
  std::string prefix;
  std::istringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    prefix += "/" + part;
    if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
  }
  return !prefix.empty();
}

PixelType stored_pixel_type(hid_t dataset, const std::string& where) {
  const Handle type(H5Dget_type(dataset), H5Tclose);
  const std::optional<PixelType> pixels = hdf5::pixel_type_of_stored(type.get());
  if (!pixels) throw std::runtime_error(where + ": pixel data must be integers or floating point");
  return *pixels;
}

}  // namespace

struct DxchangeFile::Dataset {
  std::string path;
  Handle id;
  Handle space;
  std::size_t frames = 0;
  int rank = 0;

  Dataset(std::string dataset_path, hid_t dataset)
      : path(std::move(dataset_path)),
        id(dataset, H5Dclose),
        space(H5Dget_space(dataset), H5Sclose) {}
};

DxchangeFile::DxchangeFile(const std::string& path, const DxchangeLayout& layout) : path_(path) {
  hdf5::silence_error_printing();
  if (!std::filesystem::exists(path)) throw std::runtime_error(path + ": no such file");
  if (H5Fis_hdf5(path.c_str()) <= 0) throw std::runtime_error(path + ": not an HDF5 file");
  file_ = std::make_unique<Handle>(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file_->valid()) throw std::runtime_error(open_failure(path));

  auto open_frames = [&](FrameKind kind, const std::string& dataset_path, bool required) {
    if (!path_exists(file_->get(), dataset_path)) {
      if (required) throw std::runtime_error(path + ": has no dataset " + dataset_path);
      return;
    }
    const hid_t id = H5Dopen2(file_->get(), dataset_path.c_str(), H5P_DEFAULT);
    if (id < 0) throw std::runtime_error(path + ": " + dataset_path + " is not a dataset");
    auto dataset = std::make_unique<Dataset>(dataset_path, id);
    const std::string where = path + ":" + dataset_path;
    dataset->rank = H5Sget_simple_extent_ndims(dataset->space.get());
    // Projections are a stack (frames x rows x cols); a single dark or flat may be 2D.
    const bool stack_only = kind == FrameKind::kProjection;
    if (dataset->rank != 3 && (stack_only || dataset->rank != 2)) {
      throw std::runtime_error(where + " has " + std::to_string(dataset->rank) +
                               " dimensions; expected frames x rows x cols" +
                               (stack_only ? "" : " (or rows x cols for one frame)"));
    }
    hsize_t dims[3] = {1, 0, 0};
    H5Sget_simple_extent_dims(dataset->space.get(), dataset->rank == 3 ? dims : dims + 1, nullptr);
    dataset->frames = static_cast<std::size_t>(dims[0]);
    const DetectorShape frame_shape{static_cast<int>(dims[1]), static_cast<int>(dims[2])};
    if (kind == FrameKind::kProjection) {
      if (dims[1] == 0 || dims[2] == 0 || dims[1] > (1u << 20) || dims[2] > (1u << 20)) {
        throw std::runtime_error(where + ": implausible frame size " + std::to_string(dims[1]) +
                                 "x" + std::to_string(dims[2]));
      }
      shape_ = frame_shape;
      pixel_type_ = stored_pixel_type(id, where);
    } else if (dataset->frames > 0 && frame_shape != shape_) {
      throw std::runtime_error(where + " frames are " + std::to_string(frame_shape.rows) + "x" +
                               std::to_string(frame_shape.cols) + " but the projections are " +
                               std::to_string(shape_.rows) + "x" + std::to_string(shape_.cols));
    } else {
      stored_pixel_type(id, where);  // reject strings and other non-numeric data
    }
    datasets_[static_cast<int>(kind)] = std::move(dataset);
  };
  // On a throw the members close what was opened: the datasets first, then the file.
  open_frames(FrameKind::kProjection, layout.projections, true);
  open_frames(FrameKind::kFlat, layout.flats, false);
  open_frames(FrameKind::kDark, layout.darks, false);
  if (std::optional<std::vector<double>> angles = read_numbers(layout.theta_deg)) {
    if (angles->size() != count(FrameKind::kProjection)) {
      throw std::runtime_error(path + ":" + layout.theta_deg + " has " +
                               std::to_string(angles->size()) + " angles but " +
                               layout.projections + " has " +
                               std::to_string(count(FrameKind::kProjection)) + " projections");
    }
    angles_deg_ = std::move(*angles);
  }
}

namespace {

// A 1D dataset read whole as `type` into a `Values` (std::vector<double>, std::string); nothing
// when the file has no such dataset.
template <typename Values>
std::optional<Values> read_list(hid_t file, const std::string& file_path,
                                const std::string& dataset, hid_t type, const char* what) {
  if (!path_exists(file, dataset)) return std::nullopt;
  Handle id(H5Dopen2(file, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  Handle space(id.valid() ? H5Dget_space(id.get()) : -1, H5Sclose);
  if (!space.valid() || H5Sget_simple_extent_ndims(space.get()) > 1) {
    throw std::runtime_error(file_path + ":" + dataset + " must be a 1D list of " + what);
  }
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  Values values(static_cast<std::size_t>(n), typename Values::value_type{});
  if (n > 0 && H5Dread(id.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) {
    throw std::runtime_error(file_path + ":" + dataset + " cannot be read as " + what);
  }
  return values;
}

}  // namespace

std::optional<std::vector<double>> DxchangeFile::read_numbers(const std::string& dataset) const {
  return read_list<std::vector<double>>(file_->get(), path_, dataset, H5T_NATIVE_DOUBLE, "numbers");
}

std::optional<std::string> DxchangeFile::read_bytes(const std::string& dataset) const {
  return read_list<std::string>(file_->get(), path_, dataset, H5T_NATIVE_UINT8, "bytes");
}

DxchangeFile::~DxchangeFile() = default;

std::size_t DxchangeFile::count(FrameKind kind) const {
  const auto& dataset = datasets_[static_cast<int>(kind)];
  return dataset ? dataset->frames : 0;
}

DxchangeFile::Dataset& DxchangeFile::dataset(FrameKind kind) {
  const auto& dataset = datasets_[static_cast<int>(kind)];
  if (!dataset) throw std::out_of_range(path_ + ": has no " + to_string(kind) + " frames");
  return *dataset;
}

void DxchangeFile::read(FrameKind kind, std::size_t index, PixelBuffer& out) {
  Dataset& data = dataset(kind);
  const std::string where = path_ + ":" + data.path + " frame " + std::to_string(index);
  if (index >= data.frames) {
    throw std::out_of_range(where + " is beyond its " + std::to_string(data.frames) + " frames");
  }
  if (out.shape != shape_ || out.type != pixel_type_) out = PixelBuffer(pixel_type_, shape_);
  const hsize_t start[3] = {index, 0, 0};
  const hsize_t extent[3] = {1, static_cast<hsize_t>(shape_.rows),
                             static_cast<hsize_t>(shape_.cols)};
  const int skip = data.rank == 3 ? 0 : 1;  // a 2D dataset is its own single frame
  Handle file_space(H5Scopy(data.space.get()), H5Sclose);
  const hsize_t frame_dims[2] = {extent[1], extent[2]};
  Handle memory_space(H5Screate_simple(2, frame_dims, nullptr), H5Sclose);
  if (!file_space.valid() || !memory_space.valid() ||
      H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start + skip, nullptr, extent + skip,
                          nullptr) < 0 ||
      H5Dread(data.id.get(), hdf5::native_type(pixel_type_), memory_space.get(), file_space.get(),
              H5P_DEFAULT, out.bytes.data()) < 0) {
    std::string text = where + ": HDF5 read failed (corrupt or truncated file?)";
    for (const std::string& error : hdf5::error_descriptions())
      text += ": " + error;
    throw std::runtime_error(text);
  }
}

std::string DxchangeFile::describe() const {
  std::ostringstream text;
  text << path_ << ": " << count(FrameKind::kProjection) << " projections " << shape_.rows << "x"
       << shape_.cols << " " << to_string(pixel_type_) << ", " << count(FrameKind::kFlat)
       << " flats, " << count(FrameKind::kDark) << " darks, "
       << (angles_deg_ ? "angles from the file" : "no angles in the file");
  return text.str();
}

}  // namespace slicestream::detector

#include "server/capture/dxchange_writer.hpp"

#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <vector>

#include "hdf5/hdf5_attributes.hpp"
#include "hdf5/hdf5_errors.hpp"
#include "hdf5/hdf5_handle.hpp"
#include "hdf5/hdf5_pixel_type.hpp"
#include "slicestream.pb.h"
#include "wire/kernel_enums.hpp"

namespace slicestream {

namespace {

constexpr double kDegreesPerRadian = 180.0 / 3.14159265358979323846;

using hdf5::Handle;

// An extendible dataset of `item` elements (a frame of rows x cols, or a number when item_rank 0)
// that grows by one item per append.
class Appendable {
 public:
  Appendable(hid_t parent, const std::string& name, hid_t type, std::vector<hsize_t> item)
      : type_(type), item_(std::move(item)) {
    std::vector<hsize_t> dims{0}, max{H5S_UNLIMITED}, chunk{item_.empty() ? hsize_t{4096} : 1};
    for (hsize_t extent : item_) {
      dims.push_back(extent);
      max.push_back(extent);
      chunk.push_back(extent);
    }
    Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), max.data()),
                 H5Sclose);
    Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    H5Pset_chunk(properties.get(), static_cast<int>(chunk.size()), chunk.data());
    dataset_ = Handle(H5Dcreate2(parent, name.c_str(), type, space.get(), H5P_DEFAULT,
                                 properties.get(), H5P_DEFAULT),
                      H5Dclose);
    if (!dataset_.valid()) throw std::runtime_error("cannot create dataset " + name);
  }

  void append(const void* values) {
    std::vector<hsize_t> size{count_ + 1}, start{count_}, extent{1};
    for (hsize_t e : item_) {
      size.push_back(e);
      start.push_back(0);
      extent.push_back(e);
    }
    if (H5Dset_extent(dataset_.get(), size.data()) < 0) throw std::runtime_error("cannot extend");
    Handle file_space(H5Dget_space(dataset_.get()), H5Sclose);
    H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, extent.data(),
                        nullptr);
    Handle memory_space(H5Screate_simple(static_cast<int>(extent.size()), extent.data(), nullptr),
                        H5Sclose);
    if (H5Dwrite(dataset_.get(), type_, memory_space.get(), file_space.get(), H5P_DEFAULT, values) <
        0) {
      throw std::runtime_error("cannot write");
    }
    ++count_;
  }

 private:
  hid_t type_;
  std::vector<hsize_t> item_;
  Handle dataset_;
  hsize_t count_ = 0;
};

Handle create_group(hid_t parent, const char* name) {
  Handle group(H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!group.valid()) throw std::runtime_error(std::string("cannot create group ") + name);
  return group;
}

void write_bytes(hid_t parent, const char* name, const std::string& bytes) {
  const hsize_t size = bytes.size();
  Handle space(H5Screate_simple(1, &size, nullptr), H5Sclose);
  Handle dataset(H5Dcreate2(parent, name, H5T_NATIVE_UINT8, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                            H5P_DEFAULT),
                 H5Dclose);
  if (!dataset.valid() || (size > 0 && H5Dwrite(dataset.get(), H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL,
                                                H5P_DEFAULT, bytes.data()) < 0)) {
    throw std::runtime_error(std::string("cannot write ") + name);
  }
}

template <typename T>
void write_attribute(hid_t object, const char* name, hid_t type, T value) {
  if (!hdf5::write_scalar_attribute(object, name, type, &value)) {
    throw std::runtime_error(std::string("cannot write attribute ") + name);
  }
}

void write_text_attribute(hid_t object, const char* name, const std::string& text) {
  if (!hdf5::write_text_attribute(object, name, text)) {
    throw std::runtime_error(std::string("cannot write attribute ") + name);
  }
}

// The slot angles of a circular geometry, empty for vector geometries.
std::vector<double> slot_angles_rad(const v1::ScanBegin& scan) {
  if (scan.has_parallel())
    return {scan.parallel().angles_rad().begin(), scan.parallel().angles_rad().end()};
  if (scan.has_cone()) return {scan.cone().angles_rad().begin(), scan.cone().angles_rad().end()};
  return {};
}

}  // namespace

struct DxchangeWriter::File {
  v1::ScanBegin scan;
  PixelType pixel_type = PixelType::kUint16;
  std::vector<double> slot_angles_rad;
  Handle file;
  Handle exchange;
  Handle meta;
  std::unique_ptr<Appendable> frames[3];  // by FrameKind
  std::unique_ptr<Appendable> theta_deg, index, position, angle_rad, timestamp_ns;
};

DxchangeWriter::DxchangeWriter(const std::string& path, const std::string& data_header)
    : path_(path), file_(std::make_unique<File>()) {
  hdf5::silence_error_printing();  // our messages name the file
  v1::DataHeader header;
  if (!header.ParseFromString(data_header) || !header.has_scan_begin()) {
    throw std::invalid_argument("capture: the scan's header is not a ScanBegin");
  }
  File& f = *file_;
  f.scan = header.scan_begin();
  const std::optional<PixelType> type = pixel_type_from_wire(f.scan.pixel_type());
  if (!type) throw std::invalid_argument("capture: the scan has no valid pixel type");
  f.pixel_type = *type;
  f.slot_angles_rad = slot_angles_rad(f.scan);

  f.file = Handle(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!f.file.valid()) throw std::runtime_error("capture: cannot create " + path);
  try {
    write_text_attribute(f.file.get(), "implements", "exchange");
    f.exchange = create_group(f.file.get(), "exchange");
    f.meta = create_group(f.file.get(), "slicestream");
    const std::vector<hsize_t> frame{f.scan.detector_rows(), f.scan.detector_cols()};
    const hid_t pixels = hdf5::native_type(f.pixel_type);
    f.frames[static_cast<int>(FrameKind::kDark)] =
        std::make_unique<Appendable>(f.exchange.get(), "data_dark", pixels, frame);
    f.frames[static_cast<int>(FrameKind::kFlat)] =
        std::make_unique<Appendable>(f.exchange.get(), "data_white", pixels, frame);
    f.frames[static_cast<int>(FrameKind::kProjection)] =
        std::make_unique<Appendable>(f.exchange.get(), "data", pixels, frame);
    if (!f.slot_angles_rad.empty()) {
      f.theta_deg = std::make_unique<Appendable>(f.exchange.get(), "theta", H5T_NATIVE_DOUBLE,
                                                 std::vector<hsize_t>{});
    }
    write_bytes(f.meta.get(), "data_header", data_header);
    f.index = std::make_unique<Appendable>(f.meta.get(), "projection_index", H5T_NATIVE_UINT32,
                                           std::vector<hsize_t>{});
    f.position = std::make_unique<Appendable>(f.meta.get(), "projection_position", H5T_NATIVE_INT64,
                                              std::vector<hsize_t>{});
    f.angle_rad = std::make_unique<Appendable>(f.meta.get(), "projection_angle_rad",
                                               H5T_NATIVE_DOUBLE, std::vector<hsize_t>{});
    f.timestamp_ns = std::make_unique<Appendable>(f.meta.get(), "projection_timestamp_ns",
                                                  H5T_NATIVE_UINT64, std::vector<hsize_t>{});
    write_attribute(f.meta.get(), "scan_id", H5T_NATIVE_UINT64, f.scan.scan_id());
  } catch (const std::exception& error) {
    throw std::runtime_error("capture: " + path + ": " + error.what());
  }
}

DxchangeWriter::~DxchangeWriter() = default;

std::uint64_t DxchangeWriter::scan_id() const {
  return file_->scan.scan_id();
}

bool DxchangeWriter::append(const RawFrame& frame) {
  File& f = *file_;
  if (frame.scan_id != f.scan.scan_id() || frame.pixel_type != f.pixel_type ||
      frame.shape.rows != static_cast<int>(f.scan.detector_rows()) ||
      frame.shape.cols != static_cast<int>(f.scan.detector_cols())) {
    ++frames_skipped_;
    return false;
  }
  try {
    f.frames[static_cast<int>(frame.kind)]->append(frame.payload.get());
    if (frame.kind == FrameKind::kProjection) {
      const std::uint32_t slot_count = f.scan.projections_per_rotation();
      const std::uint32_t slot =
          frame.position.value_or(slot_count > 0 ? frame.index % slot_count : 0);
      const double nan = std::numeric_limits<double>::quiet_NaN();
      const double angle_rad = frame.angle_rad.value_or(nan);
      const std::int64_t position = frame.angle_rad ? -1 : static_cast<std::int64_t>(slot);
      f.index->append(&frame.index);
      f.position->append(&position);
      f.angle_rad->append(&angle_rad);
      f.timestamp_ns->append(&frame.detector_timestamp_ns);
      if (f.theta_deg) {
        const double theta = (frame.angle_rad                   ? *frame.angle_rad
                              : slot < f.slot_angles_rad.size() ? f.slot_angles_rad[slot]
                                                                : nan) *
                             kDegreesPerRadian;
        f.theta_deg->append(&theta);
      }
    }
  } catch (const std::exception& error) {
    throw std::runtime_error("capture: " + path_ + ": " + error.what());
  }
  ++frames_written_;
  return true;
}

void DxchangeWriter::finish(const CaptureSummary& summary) {
  File& f = *file_;
  const int complete = summary.scan_ended && summary.frames_dropped == 0 ? 1 : 0;
  write_attribute(f.meta.get(), "complete", H5T_NATIVE_INT, complete);
  write_attribute(f.meta.get(), "frames_dropped", H5T_NATIVE_UINT64, summary.frames_dropped);
  write_attribute(f.meta.get(), "frames_skipped", H5T_NATIVE_UINT64, frames_skipped_);
  write_text_attribute(f.meta.get(), "end_reason", summary.end_reason);
  for (auto& frames : f.frames)
    frames.reset();
  f.theta_deg.reset();
  f.index.reset();
  f.position.reset();
  f.angle_rad.reset();
  f.timestamp_ns.reset();
  f.meta.close();
  f.exchange.close();
  if (H5Fflush(f.file.get(), H5F_SCOPE_GLOBAL) < 0) {
    throw std::runtime_error("capture: cannot flush " + path_);
  }
  f.file.close();
}

}  // namespace slicestream

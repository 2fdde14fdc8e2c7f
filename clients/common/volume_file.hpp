// Where a saved volume goes, chunk of planes by chunk of planes (GetVolume), so that no volume has
// to fit in memory: an HDF5 file (path ending .h5 / .hdf5: dataset /volume, float32, index
// [z][y][x], attributes box_min_mm, box_max_mm, voxel_size_mm, scan_id, projections_integrated,
// filter, filter_cutoff, units) or a TIFF stack (any other path: a folder of plane_0000.tiff ...,
// each an axial slice with the metadata of slice_metadata.hpp). Voxel (x, y, z) is centred at
// box.min + (i + 1/2) * extent / size on each axis.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "slicestream.pb.h"

namespace slicestream::client {

class VolumeWriter {
 public:
  virtual ~VolumeWriter() = default;
  // `values`: `count` planes from `first` on, x fastest, then y. Throws ClientError.
  virtual void write_planes(int first, int count, const std::vector<float>& values) = 0;
  // Completes the file (HDF5: closes it); the volume is not readable before.
  virtual void finish() = 0;
  virtual std::string describe() const = 0;  // "volume.h5 (HDF5, dataset /volume)"
};

// `first` is the header of the first chunk: the volume's box, sizes, scan, filter.
std::unique_ptr<VolumeWriter> open_volume_writer(const std::string& path,
                                                 const v1::VolumeChunkHeader& first);

}  // namespace slicestream::client

// Replays a RecordedScan: darks, flats, then the projections (optionally several times over, as a
// continuous rotation), with the geometry from the file's angles or from flags.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "clients/detector/frame_source.hpp"
#include "clients/detector/recorded_scan.hpp"
#include "clients/detector/scan_geometry_spec.hpp"

namespace slicestream::detector {

struct ReplayConfig {
  // Beam, pixel size, distances, offsets, volume, vectors; the slot angles come from the angles.
  GeometrySpec geometry;
  // Angles of every projection in degrees, overriding the file's (--angles-file).
  std::optional<std::vector<double>> angles_deg;
  double arc_deg = 180;              // without angles: the projections spread evenly over this arc
  int projections_per_rotation = 0;  // window length; 0: all projections (or the vector count)
  int repeat = 1;                    // send the projections this many times (continuing indices)
  bool flip_rows = false;            // the file stores row 0 at the top
  bool already_linear = false;       // the projections hold line integrals (float32)
  Placement placement = Placement::kPosition;
  std::string description;
};

class ReplaySource final : public FrameSource {
 public:
  // Throws std::invalid_argument / std::runtime_error with a clear message.
  ReplaySource(std::unique_ptr<RecordedScan> scan, ReplayConfig config);

  const v1::ScanBegin& scan_begin() const override { return scan_begin_; }
  FrameSequence sequence() const override { return sequence_; }
  OutgoingFrame render(std::uint64_t frame) override;
  int max_parallel_renders() const override { return 1; }  // one file reader

  const ResolvedGeometry& geometry() const { return *geometry_; }
  // Things the user should know (angles that do not repeat per rotation, skipped flats, ...).
  const std::vector<std::string>& warnings() const { return warnings_; }
  const RecordedScan& recording() const { return *scan_; }

 private:
  std::vector<double> projection_angles_deg() const;
  // Checks that `vectors` (12 numbers per projection) has one vector per projection of the
  // recording, warns about projections whose vector differs from their slot's, and keeps the
  // first `window` as the slots' vectors.
  void take_slot_vectors(std::vector<double>& vectors, std::size_t count, std::size_t window);

  std::unique_ptr<RecordedScan> scan_;
  ReplayConfig config_;
  std::vector<double> angles_rad_;  // per projection of the file
  std::unique_ptr<ResolvedGeometry> geometry_;
  FrameSequence sequence_;
  v1::ScanBegin scan_begin_;
  std::vector<std::string> warnings_;
};

}  // namespace slicestream::detector

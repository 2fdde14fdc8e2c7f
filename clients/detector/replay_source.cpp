#include "clients/detector/replay_source.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace slicestream::detector {

namespace {

constexpr double kPi = 3.14159265358979323846;

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument(message);
}

// Difference of two angles folded into [-180, 180).
double angle_difference_deg(double a, double b) {
  return std::remainder(a - b, 360.0);
}

// How many projections beyond the first `window` have a vector other than their slot's.
std::size_t vectors_off_their_slot(const std::vector<double>& vectors, std::size_t window) {
  constexpr std::size_t kNumbers = 12;
  std::size_t off = 0;
  for (std::size_t i = window; i < vectors.size() / kNumbers; ++i) {
    const std::size_t slot = i % window;
    for (std::size_t k = 0; k < kNumbers; ++k) {
      const double a = vectors[i * kNumbers + k];
      const double b = vectors[slot * kNumbers + k];
      if (std::abs(a - b) > 1e-6 * std::max(1.0, std::abs(b))) {
        ++off;
        break;
      }
    }
  }
  return off;
}

}  // namespace

void ReplaySource::take_slot_vectors(std::vector<double>& vectors, std::size_t count,
                                     std::size_t window) {
  // The rule of --angles-file: one per projection of the recording, never cycled silently.
  const std::size_t vector_count = vectors.size() / 12;
  require(vector_count == count,
          "the vectors file has " + std::to_string(vector_count) + " vectors but the scan has " +
              std::to_string(count) +
              " projections: give one vector per projection, as --angles-file gives one angle "
              "per projection (--projections-per-rotation N then slides a window of N over them)");
  const std::size_t off = vectors_off_their_slot(vectors, window);
  if (off > 0) {
    warnings_.push_back(std::to_string(off) + " projections beyond the first " +
                        std::to_string(window) +
                        " have another vector than the slot they fill (frames are placed by slot: "
                        "projection i fills slot i mod " +
                        std::to_string(window) + ")");
  }
  vectors.resize(window * 12);
}

std::vector<double> ReplaySource::projection_angles_deg() const {
  const std::size_t count = scan_->count(FrameKind::kProjection);
  if (config_.angles_deg) {
    require(config_.angles_deg->size() == count,
            "the angles file has " + std::to_string(config_.angles_deg->size()) +
                " angles but the scan has " + std::to_string(count) + " projections");
    return *config_.angles_deg;
  }
  if (std::optional<std::vector<double>> from_file = scan_->angles_deg()) return *from_file;
  std::vector<double> angles(count);
  for (std::size_t i = 0; i < count; ++i) {
    angles[i] = config_.arc_deg * static_cast<double>(i) / static_cast<double>(count);
  }
  return angles;
}

ReplaySource::ReplaySource(std::unique_ptr<RecordedScan> scan, ReplayConfig config)
    : scan_(std::move(scan)), config_(std::move(config)) {
  const std::size_t count = scan_->count(FrameKind::kProjection);
  require(count > 0, "the scan has no projections");
  require(count <= std::numeric_limits<std::uint32_t>::max(), "too many projections");
  require(config_.repeat >= 1, "--repeat must be at least 1");
  require(config_.projections_per_rotation >= 0, "--projections-per-rotation cannot be negative");
  require(!config_.already_linear || scan_->pixel_type() == PixelType::kFloat32,
          std::string("--already-linear needs float32 line integrals; the scan holds ") +
              to_string(scan_->pixel_type()));

  const std::vector<double> angles_deg = projection_angles_deg();
  for (std::size_t i = 0; i < angles_deg.size(); ++i) {
    require(std::isfinite(angles_deg[i]),
            "projection " + std::to_string(i) + " has a non-finite angle");
    angles_rad_.push_back(angles_deg[i] * kPi / 180.0);
  }

  GeometrySpec spec = config_.geometry;
  spec.detector = scan_->shape();
  std::size_t window = config_.projections_per_rotation > 0
                           ? static_cast<std::size_t>(config_.projections_per_rotation)
                           : count;
  require(window <= count, "--projections-per-rotation (" + std::to_string(window) +
                               ") exceeds the " + std::to_string(count) + " projections");
  if (!spec.vectors.empty()) take_slot_vectors(spec.vectors, count, window);
  spec.slot_angles_rad.assign(angles_rad_.begin(),
                              angles_rad_.begin() + static_cast<std::ptrdiff_t>(window));
  geometry_ = std::make_unique<ResolvedGeometry>(std::move(spec));
  require(config_.placement == Placement::kPosition || geometry_->is_circular(),
          "--placement angle needs a circular geometry (no --vectors, no parallel-beam detector "
          "offset)");

  if (config_.placement == Placement::kPosition) {
    require(config_.repeat == 1 || count % window == 0,
            "--repeat needs the number of projections (" + std::to_string(count) +
                ") to be a multiple of the projections per rotation (" + std::to_string(window) +
                ") so that every frame stays in its slot");
    if (geometry_->is_circular()) {
      // Frame i fills slot i % window: its angle must be that slot's angle (mod 360).
      const double half_step_deg = 0.5 * 360.0 / static_cast<double>(window);
      double worst_deg = 0;
      for (std::size_t i = window; i < count; ++i) {
        worst_deg = std::max(worst_deg,
                             std::abs(angle_difference_deg(angles_deg[i], angles_deg[i % window])));
      }
      if (worst_deg > half_step_deg) {
        std::ostringstream warning;
        warning << "projection angles differ from their slot's angle by up to " << worst_deg
                << " degrees; --placement angle sends each frame's own angle";
        warnings_.push_back(warning.str());
      }
    }
  }
  const double span_deg = angles_deg.back() - angles_deg.front();
  if (config_.projections_per_rotation == 0 && std::abs(span_deg) > 360.0 + 1e-6) {
    warnings_.push_back("the angles span " + std::to_string(span_deg) +
                        " degrees: pass --projections-per-rotation to slide a window over one "
                        "rotation instead of keeping all projections");
  }

  std::uint64_t darks = scan_->count(FrameKind::kDark);
  std::uint64_t flats = scan_->count(FrameKind::kFlat);
  if (config_.already_linear && darks + flats > 0) {
    warnings_.push_back("already-linear projections need no darks or flats: skipping the " +
                        std::to_string(darks) + " darks and " + std::to_string(flats) +
                        " flats in the scan");
    darks = flats = 0;
  }
  if (!config_.already_linear && flats == 0) {
    warnings_.push_back("the scan has no flats: the server cannot flat-field correct raw counts");
  }
  sequence_ = {darks, flats,
               static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(config_.repeat)};

  geometry_->fill_scan_begin(scan_begin_);
  scan_begin_.set_pixel_type(to_wire(scan_->pixel_type()));
  scan_begin_.set_dark_count(static_cast<std::uint32_t>(darks));
  scan_begin_.set_flat_count(static_cast<std::uint32_t>(flats));
  scan_begin_.set_already_linear(config_.already_linear);
  scan_begin_.set_description(config_.description);
}

OutgoingFrame ReplaySource::render(std::uint64_t frame) {
  OutgoingFrame out;
  out.kind = sequence_.kind_of(frame);
  const std::uint64_t index = sequence_.index_within_kind(frame);
  out.index = static_cast<std::uint32_t>(index);
  const std::size_t count = scan_->count(FrameKind::kProjection);
  std::size_t file_index = static_cast<std::size_t>(index);
  if (out.kind == FrameKind::kProjection) {
    file_index = static_cast<std::size_t>(index % count);
    out.position =
        static_cast<std::uint32_t>(index % static_cast<std::uint64_t>(geometry_->slot_count()));
    if (config_.placement == Placement::kAngle) out.angle_rad = angles_rad_[file_index];
  }
  auto pixels = std::make_shared<PixelBuffer>(scan_->pixel_type(), scan_->shape());
  scan_->read(out.kind, file_index, *pixels);
  if (config_.flip_rows) flip_rows(*pixels);
  out.pixels = std::move(pixels);
  return out;
}

}  // namespace slicestream::detector

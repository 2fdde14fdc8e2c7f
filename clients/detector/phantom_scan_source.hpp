// The simulator: the 3D modified Shepp-Logan phantom projected exactly (analytic line integrals)
// in the scan's geometry, seen by a DetectorModel, over one or more continuous rotations.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "clients/detector/detector_model.hpp"
#include "clients/detector/frame_source.hpp"
#include "clients/detector/scan_geometry_spec.hpp"
#include "kernels/phantom/ellipsoid_phantom.hpp"

namespace slicestream::detector {

struct SimulationConfig {
  GeometrySpec geometry;  // slot angles k * arc / N (circular) or vectors
  Placement placement = Placement::kPosition;
  double angle_step_rad = 0;  // Placement::kAngle: frame j is at slot_angles[0] + j * step
  int rotations = 1;
  std::uint64_t projections = 0;  // projections to stream; 0: rotations x slots
  int darks = 0;
  int flats = 0;
  DetectorModel detector;
  int supersample = 1;            // line integrals averaged over supersample^2 rays per pixel
  bool dynamic = false;           // add moving_inclusion(): projections are recomputed per frame
  double attenuation_per_mm = 0;  // of the phantom's outer shell; <= 0: kDefaultMaxLineIntegral
  int threads = 1;
  std::size_t cache_limit_bytes = std::size_t{8} << 30;
  std::string description;
};

// With the default attenuation the longest chord through the phantom integrates to this value
// (about 14% transmission), whatever the phantom's size in mm.
inline constexpr double kDefaultMaxLineIntegral = 2.0;

class PhantomScanSource final : public FrameSource {
 public:
  // Throws std::invalid_argument for an invalid configuration.
  explicit PhantomScanSource(SimulationConfig config);

  // Computes the projections of every distinct position ahead of streaming (they repeat every
  // rotation), in parallel; `progress(done, total)` is called as positions complete. Returns
  // false when `cancel` was set before the end. Without it (or without the cache, over
  // cache_limit_bytes) render() computes every frame itself: slower, same frames.
  bool prepare(const std::function<void(int, int)>& progress = {},
               const std::atomic<bool>* cancel = nullptr);

  const v1::ScanBegin& scan_begin() const override { return scan_begin_; }
  FrameSequence sequence() const override { return sequence_; }
  OutgoingFrame render(std::uint64_t frame) override;
  int max_parallel_renders() const override { return config_.threads; }

  // Introspection for tests and logs.
  const ResolvedGeometry& geometry() const { return geometry_; }
  // The phantom at projection `projection_index` (the static head plus, with --dynamic, the
  // inclusion at that moment).
  std::vector<phantom::Ellipsoid> phantom_at(std::uint64_t projection_index) const;
  // The vector projection `projection_index` was simulated with.
  ProjectionVector vector_of(std::uint64_t projection_index) const;
  int distinct_positions() const { return distinct_positions_; }
  bool cached() const { return cache_mode_ != CacheMode::kNone; }  // fits the cache limit
  bool prepared() const { return prepared_; }
  std::size_t cache_bytes() const { return cache_bytes_; }
  double outer_attenuation_per_mm() const { return outer_attenuation_per_mm_; }

 private:
  enum class CacheMode { kNone, kEncoded, kLineIntegrals };

  double scan_fraction(std::uint64_t projection_index) const;
  double angle_of(std::uint64_t projection_index) const;  // Placement::kAngle
  void line_integrals(std::uint64_t projection_index, std::vector<float>& out) const;
  void project_into(const std::vector<phantom::Ellipsoid>& phantom, const ProjectionVector& vec,
                    float* out) const;
  std::shared_ptr<const PixelBuffer> exposed(const float* line_integrals, bool beam_on,
                                             std::uint64_t noise_key) const;

  SimulationConfig config_;
  ResolvedGeometry geometry_;
  v1::ScanBegin scan_begin_;
  FrameSequence sequence_;
  std::vector<phantom::Ellipsoid> head_;
  double outer_attenuation_per_mm_ = 0;
  int distinct_positions_ = 0;
  CacheMode cache_mode_ = CacheMode::kNone;
  bool prepared_ = false;
  std::size_t cache_bytes_ = 0;
  std::vector<std::shared_ptr<const PixelBuffer>> encoded_cache_;  // per position
  std::vector<std::vector<float>> line_integral_cache_;            // per position
  std::shared_ptr<const PixelBuffer> noiseless_dark_;
  std::shared_ptr<const PixelBuffer> noiseless_flat_;
};

}  // namespace slicestream::detector

// Helpers shared by the pipeline tests: a recording PublishSink, scan and frame builders, and
// small numeric utilities.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "pipeline/backend/cpu/cpu_backend.hpp"
#include "pipeline/pipeline.hpp"
#include "pipeline/refinement/refinement_plan.hpp"
#include "pipeline/refinement/sinogram_window.hpp"
#include "tests/pipeline/forwarding_backend.hpp"

namespace slicestream::test {

// Records everything the pipeline publishes; optionally slow (back-pressure tests).
class RecordingSink : public PublishSink {
 public:
  void publish_slice(const SliceImage& slice) override;
  void publish_preview(const PreviewVolume& preview) override;
  void publish_event(const ServerEvent& event) override;
  void publish_refined(const RefinedSliceImage& refined) override;

  void set_slice_delay(std::chrono::milliseconds delay);
  // Blocks every publish_slice until release() (stop-without-drain tests).
  void block();
  void release();

  std::vector<SliceImage> slices() const;
  std::vector<SliceImage> slices_of(std::uint32_t id) const;
  std::optional<SliceImage> last_slice(std::uint32_t id) const;
  std::vector<PreviewVolume> previews() const;
  std::vector<RefinedSliceImage> refined() const;
  std::vector<ServerEvent> events() const;
  std::size_t events_with_reason(const std::string& reason) const;
  std::size_t events_of_kind(EventKind kind) const;
  // Waits up to `timeout` for `predicate` over the recorded state.
  bool wait_for(const std::function<bool()>& predicate, std::chrono::milliseconds timeout);

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::chrono::milliseconds delay_{0};
  bool blocked_ = false;
  std::vector<SliceImage> slices_;
  std::vector<PreviewVolume> previews_;
  std::vector<ServerEvent> events_;
  std::vector<RefinedSliceImage> refined_;
};

// A small circular scan and the frames to feed it.
struct TestScan {
  ScanDescription description;
  std::vector<phantom::Ellipsoid> phantom;
  float flat_value = 40000.0f;
  float dark_value = 100.0f;
};

// Parallel beam over 180 degrees, square pixels of `pixel_mm`, box covering the detector width.
TestScan make_parallel_scan(std::uint64_t scan_id, DetectorShape detector, int projections,
                            PixelType type = PixelType::kUint16, int darks = 2, int flats = 2,
                            double pixel_mm = 1.0);
// Cone beam over 360 degrees.
TestScan make_cone_scan(std::uint64_t scan_id, DetectorShape detector, int projections,
                        double source_origin_mm, double origin_detector_mm,
                        PixelType type = PixelType::kUint16, int darks = 2, int flats = 2);

// A frame message with the given pixel payload (bytes copied).
RawFrame make_frame(const ScanDescription& scan, FrameKind kind, std::uint32_t index,
                    const void* pixels, std::size_t bytes);
// Uniform dark / flat frames of the scan's pixel type.
RawFrame make_calibration_frame(const TestScan& scan, FrameKind kind, std::uint32_t index);
// The phantom's projection at `vector` as raw detector counts (uint16/uint32: dark + (flat -
// dark) exp(-p), rounded; float32 with already_linear: the line integrals).
RawFrame make_phantom_frame(const TestScan& scan, std::uint32_t index,
                            const ProjectionVector& vector);
// Fresh random line integrals in [0, 1) (already-linear float32 scans).
RawFrame make_random_frame(const ScanDescription& scan, std::uint32_t index, std::mt19937& rng);

// ScanBegin, darks, flats (not for already-linear scans).
void begin_scan(Pipeline& pipeline, const TestScan& scan);
// Projections [first, first + count) of the phantom, slot = index % N.
void feed_phantom(Pipeline& pipeline, const TestScan& scan, std::uint32_t first,
                  std::uint32_t count);
void end_scan(Pipeline& pipeline, const TestScan& scan, std::uint64_t frames_sent = 0);

// Sends a command and waits for its reply.
CommandReply call(Pipeline& pipeline, Command command);
// How many slices the pipeline reconstructs (its clients' and the default slices in free ids).
std::size_t slice_count(Pipeline& pipeline);
// The last publication of `slice` shows its current state: within `tolerance` (relative) of a
// full recompute from the store (GetSlice, not zero), from as many projections.
void expect_last_publication_is_current(Pipeline& pipeline, const RecordingSink& sink,
                                        const SetSliceCommand& slice, double tolerance);

PipelineConfig small_config();
// small_config() publishing one update per frame, without automatic residual checks (nothing but
// the publish stage wakes an idle reconstruct stage before its longest idle wait).
PipelineConfig one_update_per_frame_config();
// A float32 parallel-beam scan of `window` projections (10 x 24 detector) with an axial slice
// (id 5, 24²) and an oblique one (id 6, 20²) set, its ScanBegin submitted.
struct TwoSliceScan {
  TestScan scan;
  std::vector<SetSliceCommand> slices;
};
TwoSliceScan begin_two_slice_scan(Pipeline& pipeline, int window);
std::unique_ptr<Backend> cpu_backend(int threads = 2);
// Runs `create` and expects a BackendError whose message contains `text`.
void expect_backend_error(const std::function<void()>& create, const std::string& text);

// A scan set-up for backend tests: already-linear float32 parallel beam, `slots` angles over 180
// degrees, so that preprocess() copies the raw values unchanged and tests place arbitrary data in
// the store (without the filter).
ScanSetup linear_parallel_setup(DetectorShape detector, int slots);

// Of slice images' values or vectors (which convert to SliceValues).
double relative_error(const SliceValues& values, const SliceValues& reference);
double max_abs(const SliceValues& values);

// The axial (z = centre) slice of the scan's box, `size` x `size`.
SetSliceCommand axial_slice(const ScanDescription& scan, std::uint32_t id, int size);
SetSliceCommand oblique_slice(const ScanDescription& scan, std::uint32_t id, int size);
// An axial slice of `size` x `size` pixels of `pixel_mm` centred at (cx, cy, z), rotated by
// `angle_rad` in the plane; `mirrored` flips its y-axis (row 0 at the top).
SetSliceCommand axial_slice_at(std::uint32_t id, int size, double pixel_mm, double cx, double cy,
                               double z, double angle_rad = 0, bool mirrored = false);

// The sinogram window of `plan` filled with the phantom's exact projections of every slot.
SinogramWindow phantom_sinogram(const TestScan& scan, const RefinementPlan& plan);

}  // namespace slicestream::test

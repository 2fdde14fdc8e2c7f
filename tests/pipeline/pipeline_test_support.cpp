#include "pipeline_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <future>
#include <thread>

namespace slicestream::test {

// ------------------------------------------------------------------------------ RecordingSink

void RecordingSink::publish_slice(const SliceImage& slice) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return !blocked_; });
  const auto delay = delay_;
  lock.unlock();
  if (delay.count() > 0) std::this_thread::sleep_for(delay);
  lock.lock();
  slices_.push_back(slice);
  changed_.notify_all();
}

void RecordingSink::publish_preview(const PreviewVolume& preview) {
  std::lock_guard<std::mutex> lock(mutex_);
  previews_.push_back(preview);
  changed_.notify_all();
}

void RecordingSink::publish_event(const ServerEvent& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(event);
  changed_.notify_all();
}

void RecordingSink::publish_refined(const RefinedSliceImage& refined) {
  std::lock_guard<std::mutex> lock(mutex_);
  refined_.push_back(refined);
  changed_.notify_all();
}

void RecordingSink::set_slice_delay(std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(mutex_);
  delay_ = delay;
}

void RecordingSink::block() {
  std::lock_guard<std::mutex> lock(mutex_);
  blocked_ = true;
}

void RecordingSink::release() {
  std::lock_guard<std::mutex> lock(mutex_);
  blocked_ = false;
  changed_.notify_all();
}

std::vector<SliceImage> RecordingSink::slices() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return slices_;
}

std::vector<SliceImage> RecordingSink::slices_of(std::uint32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<SliceImage> out;
  for (const SliceImage& s : slices_) {
    if (s.slice_id == id) out.push_back(s);
  }
  return out;
}

std::optional<SliceImage> RecordingSink::last_slice(std::uint32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = slices_.rbegin(); it != slices_.rend(); ++it) {
    if (it->slice_id == id) return *it;
  }
  return std::nullopt;
}

std::vector<PreviewVolume> RecordingSink::previews() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return previews_;
}

std::vector<RefinedSliceImage> RecordingSink::refined() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refined_;
}

std::vector<ServerEvent> RecordingSink::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_;
}

std::size_t RecordingSink::events_with_reason(const std::string& reason) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<std::size_t>(std::count_if(
      events_.begin(), events_.end(), [&](const ServerEvent& e) { return e.reason == reason; }));
}

std::size_t RecordingSink::events_of_kind(EventKind kind) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<std::size_t>(std::count_if(
      events_.begin(), events_.end(), [&](const ServerEvent& e) { return e.kind == kind; }));
}

bool RecordingSink::wait_for(const std::function<bool()>& predicate,
                             std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, std::chrono::milliseconds(10));
  }
  return predicate();
}

// ------------------------------------------------------------------------------ scans

namespace {

// Ellipsoids of a few millimetres and moderate contrast inside `box`: features the test
// resolutions (1 mm detector pixels) resolve, unlike the thin skull of the Shepp-Logan phantom,
// so that the relative error measures the reconstruction rather than edge blur.
std::vector<phantom::Ellipsoid> test_phantom(const VolumeBox& box) {
  const Vec3 c = box.center();
  const Vec3 h = 0.5 * box.extent();
  auto at = [&](double x, double y, double z) { return c + Vec3{x * h.x, y * h.y, z * h.z}; };
  auto axes = [&](double x, double y, double z) { return Vec3{x * h.x, y * h.y, z * h.z}; };
  return {
      {at(0, 0, 0), axes(0.9, 0.8, 0.85), 0, 0, 0, 0.010},
      {at(0.35, 0.1, 0.05), axes(0.3, 0.25, 0.45), 0, 0, 0, 0.010},
      {at(-0.3, -0.2, 0.1), axes(0.25, 0.35, 0.4), 0.5, 0, 0, -0.005},
      {at(0.0, 0.45, -0.25), axes(0.18, 0.18, 0.35), 0, 0.3, 0, 0.015},
  };
}

std::vector<double> angles(int count, double range_rad) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i)
    out.push_back(range_rad * i / count);
  return out;
}

}  // namespace

TestScan make_parallel_scan(std::uint64_t scan_id, DetectorShape detector, int projections,
                            PixelType type, int darks, int flats, double pixel_mm) {
  TestScan t;
  ScanDescription& s = t.description;
  s.scan_id = scan_id;
  CircularParallelParams params{angles(projections, M_PI), pixel_mm, pixel_mm};
  s.geometry = make_parallel_geometry(detector, params);
  s.circular_parallel = params;
  s.pixel_type = type;
  s.already_linear = type == PixelType::kFloat32;
  s.dark_count = s.already_linear ? 0 : darks;
  s.flat_count = s.already_linear ? 0 : flats;
  // The box spans the detector width; its height the detector rows.
  const double half_width = 0.5 * detector.cols * pixel_mm;
  const double half_height = 0.5 * detector.rows * pixel_mm;
  s.volume = {{-half_width, -half_width, -half_height}, {half_width, half_width, half_height}};
  // Fits the phantom inside the disc every projection sees completely.
  const double r = half_width / std::sqrt(2.0);
  t.phantom = test_phantom({{-r, -r, -0.9 * half_height}, {r, r, 0.9 * half_height}});
  return t;
}

TestScan make_cone_scan(std::uint64_t scan_id, DetectorShape detector, int projections,
                        double source_origin_mm, double origin_detector_mm, PixelType type,
                        int darks, int flats) {
  TestScan t;
  ScanDescription& s = t.description;
  s.scan_id = scan_id;
  CircularConeParams params;
  params.angles_rad = angles(projections, 2 * M_PI);
  params.source_origin_mm = source_origin_mm;
  params.origin_detector_mm = origin_detector_mm;
  params.pixel_width_mm = 1.0;
  params.pixel_height_mm = 1.0;
  s.geometry = make_cone_geometry(detector, params);
  s.circular_cone = params;
  s.pixel_type = type;
  s.already_linear = type == PixelType::kFloat32;
  s.dark_count = s.already_linear ? 0 : darks;
  s.flat_count = s.already_linear ? 0 : flats;
  // Field of view at the axis: detector extent / magnification.
  const double magnification = (source_origin_mm + origin_detector_mm) / source_origin_mm;
  const double half_width = 0.5 * detector.cols / magnification;
  const double half_height = 0.5 * detector.rows / magnification;
  s.volume = {{-half_width, -half_width, -half_height}, {half_width, half_width, half_height}};
  const double r = 0.8 * half_width;
  t.phantom = test_phantom({{-r, -r, -0.8 * half_height}, {r, r, 0.8 * half_height}});
  return t;
}

RawFrame make_frame(const ScanDescription& scan, FrameKind kind, std::uint32_t index,
                    const void* pixels, std::size_t bytes) {
  RawFrame f;
  f.scan_id = scan.scan_id;
  f.kind = kind;
  f.index = index;
  f.shape = scan.geometry.detector;
  f.pixel_type = scan.pixel_type;
  auto buffer = std::shared_ptr<std::byte>(new std::byte[std::max<std::size_t>(bytes, 1)],
                                           std::default_delete<std::byte[]>());
  if (bytes > 0) std::memcpy(buffer.get(), pixels, bytes);
  f.payload = buffer;
  f.payload_bytes = bytes;
  f.detector_timestamp_ns = 1000 + index;
  return f;
}

namespace {

std::vector<std::byte> encode(const std::vector<double>& values, PixelType type) {
  std::vector<std::byte> out(values.size() * pixel_bytes(type));
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::byte* p = out.data() + i * pixel_bytes(type);
    if (type == PixelType::kUint16) {
      const auto v = static_cast<std::uint16_t>(std::clamp(std::lround(values[i]), 0L, 65535L));
      std::memcpy(p, &v, sizeof v);
    } else if (type == PixelType::kUint32) {
      const auto v = static_cast<std::uint32_t>(std::max(0L, std::lround(values[i])));
      std::memcpy(p, &v, sizeof v);
    } else {
      const auto v = static_cast<float>(values[i]);
      std::memcpy(p, &v, sizeof v);
    }
  }
  return out;
}

}  // namespace

RawFrame make_calibration_frame(const TestScan& scan, FrameKind kind, std::uint32_t index) {
  const std::size_t pixels = scan.description.geometry.detector.pixels();
  const double value = kind == FrameKind::kDark ? scan.dark_value : scan.flat_value;
  const std::vector<std::byte> bytes =
      encode(std::vector<double>(pixels, value), scan.description.pixel_type);
  return make_frame(scan.description, kind, index, bytes.data(), bytes.size());
}

RawFrame make_phantom_frame(const TestScan& scan, std::uint32_t index,
                            const ProjectionVector& vector) {
  const ScanDescription& s = scan.description;
  std::vector<float> integrals(s.geometry.detector.pixels());
  phantom::project(scan.phantom, s.geometry.beam, vector, s.geometry.detector, integrals.data(), 2);
  std::vector<double> values(integrals.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] = s.already_linear
                    ? integrals[i]
                    : scan.dark_value + (scan.flat_value - scan.dark_value) *
                                            std::exp(-static_cast<double>(integrals[i]));
  }
  const std::vector<std::byte> bytes = encode(values, s.pixel_type);
  return make_frame(s, FrameKind::kProjection, index, bytes.data(), bytes.size());
}

RawFrame make_random_frame(const ScanDescription& scan, std::uint32_t index, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> values(scan.geometry.detector.pixels());
  for (float& v : values)
    v = uniform(rng);
  return make_frame(scan, FrameKind::kProjection, index, values.data(),
                    values.size() * sizeof(float));
}

void begin_scan(Pipeline& pipeline, const TestScan& scan) {
  ASSERT_TRUE(pipeline.submit(ScanBegin{scan.description, 0}));
  for (int i = 0; i < scan.description.dark_count; ++i) {
    ASSERT_TRUE(pipeline.submit(
        make_calibration_frame(scan, FrameKind::kDark, static_cast<std::uint32_t>(i))));
  }
  for (int i = 0; i < scan.description.flat_count; ++i) {
    ASSERT_TRUE(pipeline.submit(
        make_calibration_frame(scan, FrameKind::kFlat, static_cast<std::uint32_t>(i))));
  }
}

void feed_phantom(Pipeline& pipeline, const TestScan& scan, std::uint32_t first,
                  std::uint32_t count) {
  const auto n = static_cast<std::uint32_t>(scan.description.projections_per_rotation());
  for (std::uint32_t i = first; i < first + count; ++i) {
    ASSERT_TRUE(
        pipeline.submit(make_phantom_frame(scan, i, scan.description.geometry.vectors[i % n])));
  }
}

void end_scan(Pipeline& pipeline, const TestScan& scan, std::uint64_t frames_sent) {
  ASSERT_TRUE(pipeline.submit(ScanEnd{scan.description.scan_id, frames_sent, 0}));
}

CommandReply call(Pipeline& pipeline, Command command) {
  auto promise = std::make_shared<std::promise<CommandReply>>();
  std::future<CommandReply> reply = promise->get_future();
  pipeline.submit_command(std::move(command),
                          [promise](CommandReply r) { promise->set_value(std::move(r)); });
  return reply.get();
}

std::size_t slice_count(Pipeline& pipeline) {
  const CommandReply status = call(pipeline, GetStatusCommand{});
  EXPECT_TRUE(status.report.has_value());
  return status.report ? status.report->slices.size() : 0;
}

void expect_last_publication_is_current(Pipeline& pipeline, const RecordingSink& sink,
                                        const SetSliceCommand& slice, double tolerance) {
  const std::optional<SliceImage> published = sink.last_slice(slice.slice_id);
  ASSERT_TRUE(published.has_value()) << "slice " << slice.slice_id;
  const CommandReply full =
      call(pipeline, GetSliceCommand{slice.orientation, slice.width, slice.height});
  ASSERT_TRUE(full.status.ok()) << full.status.message;
  ASSERT_TRUE(full.slice.has_value());
  ASSERT_GT(max_abs(full.slice->values), 0.01);
  EXPECT_LT(relative_error(published->values, full.slice->values), tolerance)
      << "slice " << slice.slice_id;
  EXPECT_EQ(published->projections_integrated, full.slice->projections_integrated)
      << "slice " << slice.slice_id;
}

PipelineConfig small_config() {
  PipelineConfig config;
  config.queue_depth = 8;
  config.preview_size = 0;
  config.default_slice_size = 32;
  return config;
}

std::unique_ptr<Backend> cpu_backend(int threads) {
  CpuBackendOptions options;
  options.threads = threads;
  return std::make_unique<CpuBackend>(options);
}

void expect_backend_error(const std::function<void()>& create, const std::string& text) {
  try {
    create();
    ADD_FAILURE() << "no BackendError (expected one saying \"" << text << "\")";
  } catch (const BackendError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

ScanSetup linear_parallel_setup(DetectorShape detector, int slots) {
  CircularParallelParams params;
  params.angles_rad = angles(slots, M_PI);
  ScanSetup setup;
  setup.geometry = make_parallel_geometry(detector, params);
  setup.pixel_type = PixelType::kFloat32;
  setup.preprocess.already_linear = true;
  setup.projections_in_flight = 4;
  return setup;
}

PipelineConfig one_update_per_frame_config() {
  PipelineConfig config = small_config();
  config.max_projection_batch = 1;
  config.refinement.residual_interval_s = 0;
  return config;
}

TwoSliceScan begin_two_slice_scan(Pipeline& pipeline, int window) {
  TwoSliceScan s;
  s.scan = make_parallel_scan(1, {10, 24}, window, PixelType::kFloat32);
  s.slices = {axial_slice(s.scan.description, 5, 24), oblique_slice(s.scan.description, 6, 20)};
  for (const SetSliceCommand& slice : s.slices)
    EXPECT_TRUE(call(pipeline, slice).status.ok());
  EXPECT_TRUE(pipeline.submit(ScanBegin{s.scan.description, 0}));
  return s;
}

double relative_error(const SliceValues& values, const SliceValues& reference) {
  double diff = 0;
  double norm = 0;
  for (std::size_t i = 0; i < values.size() && i < reference.size(); ++i) {
    const double d = static_cast<double>(values[i]) - reference[i];
    diff += d * d;
    norm += static_cast<double>(reference[i]) * reference[i];
  }
  if (values.size() != reference.size()) return 1e30;
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

double max_abs(const SliceValues& values) {
  double m = 0;
  for (float v : values)
    m = std::max(m, std::abs(static_cast<double>(v)));
  return m;
}

SetSliceCommand axial_slice(const ScanDescription& scan, std::uint32_t id, int size) {
  const std::array<SliceOrientation, 3> defaults = default_slices(scan.volume);
  return SetSliceCommand{id, defaults[2], size, size};
}

SetSliceCommand oblique_slice(const ScanDescription& scan, std::uint32_t id, int size) {
  const Vec3 e = scan.volume.extent();
  const double h = 0.5 * std::min(e.x, std::min(e.y, e.z));
  // A tilted plane through the centre: x-axis along (1, 1, 0), y-axis along (0, 0.3, 1).
  const Vec3 x{h * 1.2, h * 1.2, 0};
  const Vec3 y{0, 0.3 * h, 1.6 * h};
  const Vec3 base = scan.volume.center() - 0.5 * x - 0.5 * y;
  return SetSliceCommand{id, SliceOrientation::from_axes(x, y, base), size, size};
}

SetSliceCommand axial_slice_at(std::uint32_t id, int size, double pixel_mm, double cx, double cy,
                               double z, double angle_rad, bool mirrored) {
  const double side = size * pixel_mm;
  const Vec3 x{side * std::cos(angle_rad), side * std::sin(angle_rad), 0};
  Vec3 y{-side * std::sin(angle_rad), side * std::cos(angle_rad), 0};
  if (mirrored) y = -1.0 * y;
  const Vec3 base = Vec3{cx, cy, z} - 0.5 * x - 0.5 * y;
  return SetSliceCommand{id, SliceOrientation::from_axes(x, y, base), size, size};
}

SinogramWindow phantom_sinogram(const TestScan& scan, const RefinementPlan& plan) {
  const ScanGeometry& g = scan.description.geometry;
  SinogramWindow window;
  window.reset(static_cast<int>(g.vectors.size()), g.detector.cols);
  std::vector<float> projection(g.detector.pixels());
  const std::size_t cols = static_cast<std::size_t>(g.detector.cols);
  for (std::size_t slot = 0; slot < g.vectors.size(); ++slot) {
    phantom::project(scan.phantom, g.beam, g.vectors[slot], g.detector, projection.data(), 3,
                     plan.row_low, plan.row_high + 1);
    CapturedRows rows;
    for (int row = plan.row_low; row <= plan.row_high; ++row) {
      rows.rows.push_back(row);
      const auto begin = projection.begin() + static_cast<std::ptrdiff_t>(row * cols);
      rows.values.insert(rows.values.end(), begin, begin + static_cast<std::ptrdiff_t>(cols));
    }
    EXPECT_TRUE(window.store(static_cast<int>(slot), plan, rows, CosineWeight{}));  // exact
  }
  return window;
}

}  // namespace slicestream::test

// The FleX-ray case of the KernelKit paper's Table 1, in-process on the CPU backend: a 400 x 600
// uint16 cone-beam detector, 150 projections per rotation, three 400 x 400 slices, sliding
// window. Measures (a) the maximum sustained frame rate with every frame integrated, (b) a
// detector feeding at 83 Hz: loss, frame -> slice latency and per-stage busy fractions, (c) the
// same with the 128^3 preview volume, (d) the same while a viewer asks for a large on-demand slice
// (GetSlice, --get-slice-side) again as soon as the previous one arrived, (e) the same while a
// viewer moves a large live slice (SetSlice, --set-slice-side) again as soon as the previous place
// was published, and the CPU time per frame of each backend step (robust to other load on the
// machine). Prints a table; --json FILE writes the results.
//
//   pipeline_flexray_bench [--rotations N] [--rate HZ] [--threads N] [--json FILE] [--no-preview]
//                          [--get-slice-side N] [--set-slice-side N] [--cost-only]
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kernels/grid_spec.hpp"
#include "kernels/phantom/ellipsoid_phantom.hpp"
#include "kernels/steady_clock.hpp"
#include "pipeline/backend/cpu/cpu_backend.hpp"
#include "pipeline/metrics/latency_histogram.hpp"
#include "pipeline/pipeline.hpp"

namespace slicestream {
namespace {

using Clock = SteadyClock;

constexpr int kRows = 400;
constexpr int kCols = 600;
constexpr int kProjections = 150;
constexpr int kSliceSize = 400;
constexpr double kSourceOrigin = 300;
constexpr double kOriginDetector = 400;
constexpr double kPixel = 0.3;
constexpr float kDark = 100;
constexpr float kFlat = 40000;

// Measures frame arrival -> first publication containing it, for the measured frames only (the
// warm-up rotation is fed as fast as possible and would dominate the pipeline's own histogram).
// Frames carry their index as detector timestamp.
// The slice a viewer moves in the SetSlice case.
constexpr std::uint32_t kMovedSliceId = 9;

class LatencySink : public PublishSink {
 public:
  void measure_from(std::uint64_t index) { measure_from_ = index; }
  void publish_slice(const SliceImage& slice) override {
    if (slice.slice_id == kMovedSliceId) ++moved_published_;
    const std::uint64_t index = slice.newest_detector_timestamp_ns;
    if (index < measure_from_ || (newest_ && index <= *newest_)) return;
    newest_ = index;
    const auto now_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
            .count();
    latency_.add(static_cast<double>(static_cast<std::uint64_t>(now_ns) - slice.newest_arrival_ns) /
                 1000.0);
  }
  void publish_preview(const PreviewVolume&) override { ++previews_; }
  void publish_refined(const RefinedSliceImage&) override {}  // the benchmark refines nothing
  void publish_event(const ServerEvent& event) override {
    if (event.kind == EventKind::kError) spdlog::error("event: {}", event.message);
  }
  LatencySummary latency() const { return latency_.summary(); }
  int previews() const { return previews_; }
  std::uint64_t moved_published() const { return moved_published_; }

 private:
  std::atomic<std::uint64_t> moved_published_{0};
  std::atomic<std::uint64_t> measure_from_{~std::uint64_t{0}};
  std::optional<std::uint64_t> newest_;
  LatencyHistogram latency_;
  int previews_ = 0;
};

struct Scan {
  ScanDescription description;
  std::vector<std::shared_ptr<const std::byte>> projections;  // one uint16 frame per slot
  std::shared_ptr<const std::byte> dark;
  std::shared_ptr<const std::byte> flat;
};

std::shared_ptr<const std::byte> uint16_frame(const std::vector<float>& values) {
  auto bytes = std::shared_ptr<std::byte>(new std::byte[values.size() * 2],
                                          std::default_delete<std::byte[]>());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto v = static_cast<std::uint16_t>(std::lround(std::min(65535.0f, values[i])));
    std::memcpy(bytes.get() + 2 * i, &v, 2);
  }
  return bytes;
}

Scan make_scan() {
  Scan scan;
  ScanDescription& d = scan.description;
  d.scan_id = 1;
  CircularConeParams cone;
  for (int i = 0; i < kProjections; ++i)
    cone.angles_rad.push_back(2 * M_PI * i / kProjections);
  cone.source_origin_mm = kSourceOrigin;
  cone.origin_detector_mm = kOriginDetector;
  cone.pixel_width_mm = kPixel;
  cone.pixel_height_mm = kPixel;
  d.geometry = make_cone_geometry({kRows, kCols}, cone);
  d.circular_cone = cone;
  d.pixel_type = PixelType::kUint16;
  d.dark_count = 1;
  d.flat_count = 1;
  const double magnification = (kSourceOrigin + kOriginDetector) / kSourceOrigin;
  const double half_width = 0.5 * kCols * kPixel / magnification;
  const double half_height = 0.5 * kRows * kPixel / magnification;
  d.volume = {{-half_width, -half_width, -half_height}, {half_width, half_width, half_height}};
  const double r = 0.8 * half_width;
  const auto phantom =
      phantom::shepp_logan_3d({{-r, -r, -0.8 * half_height}, {r, r, 0.8 * half_height}}, 0.05);
  std::vector<float> integrals(static_cast<std::size_t>(kRows) * kCols);
  std::vector<float> counts(integrals.size());
  for (int i = 0; i < kProjections; ++i) {
    phantom::project(phantom, BeamKind::kCone, d.geometry.vectors[static_cast<std::size_t>(i)],
                     d.geometry.detector, integrals.data());
    for (std::size_t p = 0; p < integrals.size(); ++p) {
      counts[p] = kDark + (kFlat - kDark) * std::exp(-integrals[p]);
    }
    scan.projections.push_back(uint16_frame(counts));
  }
  scan.dark = uint16_frame(std::vector<float>(integrals.size(), kDark));
  scan.flat = uint16_frame(std::vector<float>(integrals.size(), kFlat));
  return scan;
}

RawFrame frame(const Scan& scan, FrameKind kind, std::uint32_t index) {
  RawFrame f;
  f.scan_id = scan.description.scan_id;
  f.kind = kind;
  f.index = index;
  f.shape = scan.description.geometry.detector;
  f.pixel_type = PixelType::kUint16;
  f.payload = kind == FrameKind::kDark   ? scan.dark
              : kind == FrameKind::kFlat ? scan.flat
                                         : scan.projections[index % kProjections];
  f.payload_bytes = static_cast<std::size_t>(kRows) * kCols * 2;
  f.detector_timestamp_ns = index;
  return f;
}

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

double load_average() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

struct CaseResult {
  std::string name;
  double target_hz = 0;  // 0: as fast as possible
  int preview_size = 0;
  std::uint64_t frames = 0;
  double seconds = 0;
  double frames_per_s = 0;
  std::uint64_t integrated = 0;
  std::uint64_t discarded = 0;
  int previews = 0;
  int get_slice_side = 0;       // GetSlice requests of this side sent back to back (0: none)
  int get_slices = 0;           // answered during the measured phase
  int set_slice_side = 0;       // SetSlice of this side, each once the previous one was shown
  int set_slices = 0;           // published during the measured phase
  double cpu_ms_per_frame = 0;  // process CPU time (all threads) per measured frame
  double load_average = 0;      // of the machine, at the end of the case
  LatencySummary latency;       // measured frames only
  MetricsSnapshot metrics;      // taken at the end of the measured phase
};

// A viewer's requests during the measured phase: a GetSlice of `get_side` again as soon as the
// previous one was answered, or a slice of `set_side` moved again as soon as its previous place
// was published; `done` counts them.
std::thread start_viewer(Pipeline& pipeline, const Scan& scan, const LatencySink& sink,
                         const std::atomic<bool>& feeding, std::atomic<int>& done, int get_side,
                         int set_side) {
  if (get_side > 0) {
    const GetSliceCommand get{default_slices(scan.description.volume)[2], get_side, get_side};
    return std::thread([&pipeline, &feeding, &done, get] {
      while (feeding) {
        std::promise<void> answered;
        pipeline.submit_command(get, [&](CommandReply) { answered.set_value(); });
        answered.get_future().wait();
        ++done;
      }
    });
  }
  if (set_side <= 0) return {};
  return std::thread([&pipeline, &scan, &sink, &feeding, &done, set_side] {
    const SliceOrientation axial = default_slices(scan.description.volume)[2];
    for (int move = 0; feeding; ++move) {
      SetSliceCommand set{kMovedSliceId, axial, set_side, set_side};
      set.orientation.values[8] += 0.05f * static_cast<float>(move % 20);  // up and down the axis
      const std::uint64_t published = sink.moved_published();
      std::promise<void> answered;
      pipeline.submit_command(set, [&](CommandReply) { answered.set_value(); });
      answered.get_future().wait();
      while (feeding && sink.moved_published() == published)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (sink.moved_published() != published) ++done;
    }
  });
}

// One pipeline per case: a warm-up rotation fills the window, then `rotations` are measured.
CaseResult run_case(const Scan& scan, const std::string& name, double rate_hz, int preview_size,
                    int rotations, int threads, int get_slice_side = 0, int set_slice_side = 0) {
  LatencySink sink;
  PipelineConfig config;
  config.default_slice_size = kSliceSize;
  config.preview_size = preview_size;
  CpuBackendOptions options;
  options.threads = threads;
  Pipeline pipeline(config, std::make_unique<CpuBackend>(options), sink);
  pipeline.start();
  pipeline.submit(ScanBegin{scan.description, 0});
  pipeline.submit(frame(scan, FrameKind::kDark, 0));
  pipeline.submit(frame(scan, FrameKind::kFlat, 0));
  std::uint32_t index = 0;
  for (; index < kProjections; ++index)
    pipeline.submit(frame(scan, FrameKind::kProjection, index));
  pipeline.wait_idle();

  CaseResult r;
  r.name = name;
  r.target_hz = rate_hz;
  r.preview_size = preview_size;
  r.frames = static_cast<std::uint64_t>(rotations) * kProjections;
  const std::uint64_t integrated_before = pipeline.metrics().projections_integrated;
  sink.measure_from(index);
  const double cpu_begin = process_cpu_ms();
  const Clock::time_point begin = Clock::now();
  const auto period =
      rate_hz > 0 ? std::chrono::duration<double>(1.0 / rate_hz) : std::chrono::duration<double>(0);
  std::atomic<bool> feeding{true};
  std::atomic<int> requests_done{0};
  std::thread requester =
      start_viewer(pipeline, scan, sink, feeding, requests_done, get_slice_side, set_slice_side);
  for (std::uint64_t i = 0; i < r.frames; ++i, ++index) {
    if (rate_hz > 0) {
      std::this_thread::sleep_until(
          begin + std::chrono::duration_cast<Clock::duration>(period * static_cast<double>(i)));
    }
    pipeline.submit(frame(scan, FrameKind::kProjection, index));
  }
  r.metrics = pipeline.metrics();  // busy fractions over the last two seconds of feeding
  feeding = false;
  if (requester.joinable()) requester.join();
  r.get_slice_side = get_slice_side;
  r.get_slices = get_slice_side > 0 ? requests_done.load() : 0;
  r.set_slice_side = set_slice_side;
  r.set_slices = set_slice_side > 0 ? requests_done.load() : 0;
  pipeline.wait_idle();
  r.seconds = seconds_since(begin);
  r.cpu_ms_per_frame = (process_cpu_ms() - cpu_begin) / static_cast<double>(r.frames);
  r.load_average = load_average();
  const MetricsSnapshot end = pipeline.metrics();
  r.integrated = end.projections_integrated - integrated_before;
  for (const auto& [reason, count] : end.discards)
    r.discarded += count;
  r.frames_per_s = static_cast<double>(r.integrated) / r.seconds;
  pipeline.stop(true);
  r.latency = sink.latency();
  r.previews = sink.previews();
  return r;
}

// CPU time (all threads of the process) per frame of each backend step, called one after the
// other from this thread: what a frame costs, independent of other load on the machine.
struct KernelCost {
  double preprocess_ms = 0;
  double filter_ms = 0;
  double update_ms = 0;   // replace_projection into the three live slices (+new - old)
  double refresh_ms = 0;  // the same with the three refresh shadows accumulating
  double total_ms() const { return preprocess_ms + filter_ms + update_ms; }
};

KernelCost measure_kernel_cost(const Scan& scan, int threads, int frames) {
  CpuBackend backend(CpuBackendOptions{threads, 0});
  ScanSetup setup;
  setup.geometry = scan.description.geometry;
  setup.pixel_type = PixelType::kUint16;
  backend.begin_scan(setup);
  const std::size_t pixels = static_cast<std::size_t>(kRows) * kCols;
  backend.set_calibration(std::vector<float>(pixels, kDark), std::vector<float>(pixels, kFlat));
  const auto maps = make_projection_maps(setup.geometry);
  std::vector<std::unique_ptr<ReconTarget>> live;
  std::vector<std::unique_ptr<ReconTarget>> shadows;
  for (const SliceOrientation& o : default_slices(scan.description.volume)) {
    live.push_back(backend.create_target(slice_grid(o, kSliceSize, kSliceSize)));
    shadows.push_back(backend.create_target(slice_grid(o, kSliceSize, kSliceSize)));
  }
  const std::vector<ReconTarget*> live_list{live[0].get(), live[1].get(), live[2].get()};
  const std::vector<ReconTarget*> shadow_list{shadows[0].get(), shadows[1].get(), shadows[2].get()};
  const float scale = angular_weight(kProjections);
  KernelCost cost;
  // Two passes over the same slots: the second replaces filled slots (the steady state).
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < frames; ++i) {
      const RawFrame raw = frame(scan, FrameKind::kProjection, static_cast<std::uint32_t>(i));
      const ProjectionVector& vector = setup.geometry.vectors[static_cast<std::size_t>(i)];
      double t0 = process_cpu_ms();
      std::unique_ptr<ProjectionBuffer> buffer = backend.preprocess(raw.view(), vector);
      double t1 = process_cpu_ms();
      backend.filter(*buffer);
      double t2 = process_cpu_ms();
      const bool refresh = i % 2 == 1;
      backend.replace_projection(i, maps[static_cast<std::size_t>(i)], std::move(buffer), live_list,
                                 refresh ? shadow_list : std::vector<ReconTarget*>{}, scale);
      const double t3 = process_cpu_ms();
      if (pass == 0) continue;
      cost.preprocess_ms += (t1 - t0) / frames;
      cost.filter_ms += (t2 - t1) / frames;
      (refresh ? cost.refresh_ms : cost.update_ms) += (t3 - t2) / (frames / 2);
    }
  }
  return cost;
}

void print_kernel_cost(const KernelCost& c, int threads) {
  std::printf("\nCPU time per frame (ms, all threads; backend with %d worker threads)\n", threads);
  std::printf(
      "  preprocess %.2f | filter %.2f | store + 3 slices (+new - old) %.2f | "
      "with 3 refresh shadows %.2f\n",
      c.preprocess_ms, c.filter_ms, c.update_ms, c.refresh_ms);
  const double per_frame = c.total_ms() + (c.refresh_ms - c.update_ms) / 4;  // refresh 1 in 4
  std::printf(
      "  total %.2f ms per frame (with refresh every 4 rotations): at most %.0f frames/s "
      "per core, %.0f on 2 cores\n",
      per_frame, 1000.0 / per_frame, 2000.0 / per_frame);
}

void print_table(const std::vector<CaseResult>& results, const BackendInfo& info) {
  std::printf(
      "\nFleX-ray case: %d x %d uint16 cone beam, %d projections/rotation, 3 slices %d x %d,"
      " sliding window\nbackend %s, %s, %d threads\n\n",
      kRows, kCols, kProjections, kSliceSize, kSliceSize, info.name.c_str(), info.device.c_str(),
      info.threads);
  std::printf("%-20s %6s %8s %14s %5s %10s %10s %10s %8s %9s %9s %10s %5s\n", "case", "target",
              "frames/s", "integrated", "lost", "lat p50 ms", "lat p99 ms", "lat max ms",
              "previews", "GetSlices", "SetSlices", "cpu ms/frm", "load");
  for (const CaseResult& r : results) {
    const LatencySummary& l = r.latency;
    const std::string target =
        r.target_hz > 0 ? std::to_string(static_cast<int>(r.target_hz)) + " Hz" : "max";
    std::printf(
        "%-20s %6s %8.1f %9llu/%-4llu %5llu %10.1f %10.1f %10.1f %8d %9d %9d %10.2f %5.1f\n",
        r.name.c_str(), target.c_str(), r.frames_per_s,
        static_cast<unsigned long long>(r.integrated), static_cast<unsigned long long>(r.frames),
        static_cast<unsigned long long>(r.discarded), l.p50_us / 1000, l.p99_us / 1000,
        l.max_us / 1000, r.previews, r.get_slices, r.set_slices, r.cpu_ms_per_frame,
        r.load_average);
  }
  std::printf(
      "cpu ms/frm: process CPU time per frame, all threads (two otherwise idle cores "
      "sustain 2000 / cpu ms/frm frames/s); load: 1-minute load average of the machine\n");
  std::printf(
      "\nper stage: busy fraction over the last 2 s of feeding, service time p50/p99 (ms)\n");
  std::printf("%-20s", "case");
  for (const StageMetrics& s : results.front().metrics.stages)
    std::printf(" %18s", s.name.c_str());
  std::printf("\n");
  for (const CaseResult& r : results) {
    std::printf("%-20s", r.name.c_str());
    for (const StageMetrics& s : r.metrics.stages) {
      std::printf("   %4.0f%% %5.2f/%5.2f", 100 * s.busy_fraction, s.service_us.p50_us / 1000,
                  s.service_us.p99_us / 1000);
    }
    std::printf("\n");
  }
}

void write_json(const std::string& path, const std::vector<CaseResult>& results,
                const BackendInfo& info, const KernelCost& cost) {
  std::ostringstream out;
  out << "{\n  \"benchmark\": \"pipeline_flexray\",\n  \"backend\": \"" << info.name
      << "\",\n  \"device\": \"" << info.device << "\",\n  \"threads\": " << info.threads
      << ",\n  \"detector\": [" << kRows << ", " << kCols
      << "],\n  \"projections_per_rotation\": " << kProjections
      << ",\n  \"slices\": 3,\n  \"slice_size\": " << kSliceSize
      << ",\n  \"cpu_ms_per_frame\": {\"preprocess\": " << cost.preprocess_ms
      << ", \"filter\": " << cost.filter_ms << ", \"update_3_slices\": " << cost.update_ms
      << ", \"update_3_slices_with_refresh\": " << cost.refresh_ms << "},\n  \"cases\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const CaseResult& r = results[i];
    const LatencySummary& l = r.latency;
    out << "    {\"name\": \"" << r.name << "\", \"target_hz\": " << r.target_hz
        << ", \"preview_size\": " << r.preview_size << ", \"frames\": " << r.frames
        << ", \"integrated\": " << r.integrated << ", \"discarded\": " << r.discarded
        << ", \"previews\": " << r.previews << ", \"get_slice_side\": " << r.get_slice_side
        << ", \"get_slices\": " << r.get_slices << ", \"set_slice_side\": " << r.set_slice_side
        << ", \"set_slices\": " << r.set_slices << ", \"cpu_ms_per_frame\": " << r.cpu_ms_per_frame
        << ", \"load_average\": " << r.load_average << ", \"seconds\": " << r.seconds
        << ", \"frames_per_s\": " << r.frames_per_s << ", \"latency_us\": {\"p50\": " << l.p50_us
        << ", \"p99\": " << l.p99_us << ", \"max\": " << l.max_us << "}, \"stages\": [";
    for (std::size_t s = 0; s < r.metrics.stages.size(); ++s) {
      const StageMetrics& m = r.metrics.stages[s];
      out << (s ? ", " : "") << "{\"name\": \"" << m.name
          << "\", \"busy_fraction\": " << m.busy_fraction
          << ", \"service_p50_us\": " << m.service_us.p50_us
          << ", \"service_p99_us\": " << m.service_us.p99_us << "}";
    }
    out << "]}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
  std::ofstream(path) << out.str();
}

}  // namespace
}  // namespace slicestream

int main(int argc, char** argv) {
  using namespace slicestream;
  CLI::App app{"FleX-ray streaming benchmark of the pipeline (CPU backend, in-process)"};
  int rotations = 3;
  double rate_hz = 83;
  int threads = 0;
  bool with_preview = true;
  bool cost_only = false;
  std::string json;
  app.add_option("--rotations", rotations, "measured rotations per case (after one warm-up)")
      ->check(CLI::Range(1, 100));
  app.add_option("--rate", rate_hz, "detector frame rate of the paced cases (Hz)")
      ->check(CLI::Range(1.0, 10000.0));
  app.add_option("--threads", threads, "CPU worker threads (0: all cores)");
  app.add_option("--json", json, "write the results as JSON to FILE");
  app.add_flag("!--no-preview", with_preview, "skip the case with the 128^3 preview volume");
  int get_slice_side = 2048;
  app.add_option("--get-slice-side", get_slice_side,
                 "side of the GetSlice requests sent back to back in the on-demand case (0: skip "
                 "the case)")
      ->check(CLI::Range(0, 8192));
  int set_slice_side = 0;
  app.add_option("--set-slice-side", set_slice_side,
                 "side of a live slice moved again as soon as its previous place was published, "
                 "in the SetSlice case (0: skip the case)")
      ->check(CLI::Range(0, 8192));
  app.add_flag("--cost-only", cost_only, "only the CPU time per frame of each backend step");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);

  std::printf("simulating %d projections of the phantom...\n", kProjections);
  const Scan scan = make_scan();
  const int measured_threads = CpuBackend(CpuBackendOptions{threads, 0}).info().threads;
  const KernelCost cost = measure_kernel_cost(scan, threads, 40);
  if (cost_only) {
    print_kernel_cost(cost, measured_threads);
    return 0;
  }
  std::vector<CaseResult> results;
  results.push_back(run_case(scan, "max rate", 0, 0, rotations, threads));
  results.push_back(run_case(scan, "detector rate", rate_hz, 0, rotations, threads));
  if (with_preview) {
    results.push_back(run_case(scan, "detector + preview", rate_hz, 128, rotations, threads));
  }
  if (get_slice_side > 0) {
    results.push_back(
        run_case(scan, "detector + GetSlice", rate_hz, 0, rotations, threads, get_slice_side));
  }
  if (set_slice_side > 0) {
    results.push_back(
        run_case(scan, "detector + SetSlice", rate_hz, 0, rotations, threads, 0, set_slice_side));
  }
  const BackendInfo info = CpuBackend(CpuBackendOptions{threads, 0}).info();
  print_table(results, info);
  print_kernel_cost(cost, measured_threads);
  if (!json.empty()) write_json(json, results, info, cost);
  return 0;
}

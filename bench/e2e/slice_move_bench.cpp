// Slice-move benchmark: how long a viewer waits to see a slice it has just moved. The real
// slicestream-detector streams a scan into the real slicestream-server (over tcp loopback, or ipc
// with --transport ipc) while a viewer moves a live slice again and again: SetSlice on the requests
// endpoint, then a subscriber on the slices endpoint waits for that slice with the new orientation.
// By default the viewer reads every publication as it arrives (bench/e2e/live_viewer.hpp);
// `--viewer read-after-reply` reads only once SetSlice was answered, so what was published
// meanwhile comes first. Measured per move: SetSlice sent -> its reply, and SetSlice sent -> the
// whole new slice received (the server recomputes it from every projection of its window, reads it
// back and publishes it; the subscriber receives all of it). Each move turns a vertical slice
// through the rotation axis by another angle, so every move is a full recompute of a new slice.
//
//   slice_move_bench [--backend cuda] [--preset tomobank] [--rows R --cols C] [--window N]
//                    [--moves N] [--fps F] [--slice-size N] [--server PATH] [--detector PATH]
//                    [--subscriber-hwm N] [--viewer live|read-after-reply] [--transport tcp|ipc]
//                    [--slice-values f32|f16] [--server-args ARGS]
//                    [--json FILE]
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/bench_report.hpp"
#include "bench_programs.hpp"
#include "child_process.hpp"
#include "cli/heap_retention.hpp"
#include "clients/common/request_client.hpp"
#include "clients/common/slice_subscriber.hpp"
#include "clients/detector/detector_preset.hpp"
#include "clients/detector/scan_streamer.hpp"
#include "ingest_step.hpp"
#include "kernels/steady_clock.hpp"
#include "live_viewer.hpp"
#include "server/server_config.hpp"

namespace slicestream::bench {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr const char* kLiveViewer = "live";
constexpr const char* kReadAfterReply = "read-after-reply";

struct Options {
  BenchPrograms programs;  // main() makes cuda the default backend
  std::string preset = "tomobank";
  int rows = 0;    // detector rows; 0: the preset's
  int cols = 0;    // detector columns; 0: the preset's
  int window = 0;  // projections per rotation; 0: the preset's
  int moves = 20;
  double fps = 50;     // frames streamed while the slice moves
  int slice_size = 0;  // 0: as wide as the detector
  std::uint32_t slice_id = 0;
  // The viewer's receive queue (ZeroMQ RCVHWM): images it holds before it decodes them, which a
  // moved slice waits behind.
  int subscriber_hwm = 8;
  // kLiveViewer: the viewer reads every publication as it arrives; kReadAfterReply: only after
  // its SetSlice was answered (a viewer busy between moves).
  std::string viewer = "live";
  // Freed memory the viewer (this process) keeps for its next images; 0: the C library's own
  // policy, as a viewer that does nothing about it has.
  std::size_t viewer_retain_freed_mb = 0;
  std::string transport = "tcp";  // the server's three endpoints: tcp loopback or ipc
  // f16: the viewer subscribes to the fp16 topic (half the bytes on the link).
  std::string slice_values = "f32";
  std::string json;
  std::string work_dir;
};

// A vertical slice through the rotation axis (the z axis), turned by `angle_rad` about it, of
// `side_mm` square, centred on the origin: RECAST3D's nine numbers.
client::Orientation vertical_slice(double angle_rad, double side_mm) {
  const float c = static_cast<float>(side_mm * std::cos(angle_rad));
  const float s = static_cast<float>(side_mm * std::sin(angle_rad));
  const float h = static_cast<float>(side_mm);
  return {c, s, 0.0f, 0.0f, 0.0f, h, -0.5f * c, -0.5f * s, -0.5f * h};
}

bool same_orientation(const v1::SliceOrientation& o, const client::Orientation& expected) {
  if (o.values_size() != 9) return false;
  for (int k = 0; k < 9; ++k) {
    if (std::abs(o.values(k) - expected[static_cast<std::size_t>(k)]) > 1e-3f) return false;
  }
  return true;
}

double percentile(std::vector<double> values, double fraction) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(fraction * static_cast<double>(values.size() - 1));
  return values[index];
}

// Waits until the server has integrated at least `count` projections.
void wait_for_window(client::RequestClient& client, std::uint64_t count, ChildProcess& server) {
  const SteadyClock::time_point deadline = SteadyClock::now() + std::chrono::seconds(120);
  while (SteadyClock::now() < deadline) {
    client::Response response = client.get_status();
    if (response.ok() && counter(response.reply.status(), "projections_integrated") >= count) {
      return;
    }
    if (server.poll()) throw std::runtime_error("the server exited:\n" + server.log_tail(12));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error("the window did not fill within 120 s:\n" + server.log_tail(12));
}

// Images the server replaced by a newer one of the same slice before they left (latest wins):
// in the pipeline's publish stage ("publications_coalesced", which also counts updates merged
// while a slice was held back) and at the slices endpoint while a subscriber had no room
// ("publications_superseded"). Read between moves, so that a moved image replaced on its way
// shows as a count during its move.
struct ReplacedImages {
  std::uint64_t in_pipeline = 0;
  std::uint64_t at_endpoint = 0;
  ReplacedImages operator-(const ReplacedImages& o) const {
    return {in_pipeline - o.in_pipeline, at_endpoint - o.at_endpoint};
  }
};

ReplacedImages replaced_images(client::RequestClient& client) {
  const client::Response response = client.get_status();
  if (!response.ok()) throw std::runtime_error("GetStatus refused: " + response.reply.message());
  return {counter(response.reply.status(), "publications_coalesced"),
          counter(response.reply.status(), "publications_superseded")};
}

struct Move {
  double reply_ms = 0;
  // SetSlice sent -> the server's slices endpoint took the new slice (its header's published_ns:
  // the same monotonic clock on one host). The rest of shown_ms is the endpoint, ZeroMQ, the
  // transfer and the subscriber's decoding.
  double published_ms = 0;
  double shown_ms = 0;
  std::uint64_t integrated = 0;
};

bool is_moved_slice(const v1::SliceHeader& header, const Options& o,
                    const client::Orientation& orientation) {
  return header.slice_id() == o.slice_id && same_orientation(header.orientation(), orientation);
}

// The moved slice has arrived, whole, at `decoded`.
Move arrived(const v1::SliceHeader& header, std::size_t values, SteadyClock::time_point decoded,
             SteadyClock::time_point sent, std::uint64_t sent_ns, double reply_ms, int side) {
  if (values != static_cast<std::size_t>(side) * static_cast<std::size_t>(side)) {
    throw std::runtime_error("the moved slice arrived with the wrong size");
  }
  Move m;
  m.reply_ms = reply_ms;
  m.shown_ms = 1e3 * std::chrono::duration<double>(decoded - sent).count();
  m.published_ms =
      1e-6 * (static_cast<double>(header.published_ns()) - static_cast<double>(sent_ns));
  m.integrated = header.projections_integrated();
  return m;
}

double set_slice(client::RequestClient& client, const Options& o,
                 const client::Orientation& orientation, int side) {
  const SteadyClock::time_point sent = SteadyClock::now();
  const client::Response reply = client.set_slice(
      o.slice_id, orientation, static_cast<std::uint32_t>(side), static_cast<std::uint32_t>(side));
  if (!reply.ok()) throw std::runtime_error("SetSlice refused: " + reply.reply.message());
  return 1e3 * seconds_since(sent);
}

// One move seen by a live viewer: armed for the new orientation, then SetSlice.
Move move_slice_live(client::RequestClient& client, LiveViewer& viewer, const Options& o,
                     const client::Orientation& orientation, int side) {
  viewer.expect([&o, orientation](const v1::SliceHeader& header) {
    return is_moved_slice(header, o, orientation);
  });
  const SteadyClock::time_point sent = SteadyClock::now();
  const std::uint64_t sent_ns = steady_now_ns();
  const double reply_ms = set_slice(client, o, orientation, side);
  const std::optional<LiveViewer::Arrival> arrival = viewer.wait(sent + std::chrono::seconds(10));
  if (!arrival) throw std::runtime_error("the moved slice was not published within 10 s");
  return arrived(arrival->header, arrival->values, arrival->decoded, sent, sent_ns, reply_ms, side);
}

// One move seen by a viewer that reads only after its SetSlice was answered: what the server
// published meanwhile, up to its receive queue, comes first.
Move move_slice_reading_after(client::RequestClient& client, client::SliceSubscriber& subscriber,
                              const Options& o, const client::Orientation& orientation, int side) {
  const SteadyClock::time_point sent = SteadyClock::now();
  const std::uint64_t sent_ns = steady_now_ns();
  const double reply_ms = set_slice(client, o, orientation, side);
  while (true) {
    const int left_ms = 10000 - static_cast<int>(1e3 * seconds_since(sent));
    if (left_ms <= 0) throw std::runtime_error("the moved slice was not published within 10 s");
    std::optional<client::Publication> p = subscriber.receive(left_ms);
    if (!p || p->topic != client::Topic::kSlice) continue;
    if (!is_moved_slice(p->header.slice(), o, orientation)) continue;
    return arrived(p->header.slice(), p->values.size(), SteadyClock::now(), sent, sent_ns, reply_ms,
                   side);
  }
}

int run(const Options& o, Report& report) {
  const detector::DetectorPreset& preset = detector::find_preset(o.preset);
  const int window =
      o.window > 0 ? o.window
                   : preset.projections_per_180_deg * (preset.beam == BeamKind::kCone ? 2 : 1);
  const int cols = o.cols > 0 ? o.cols : preset.detector.cols;
  const int side = o.slice_size > 0 ? o.slice_size : cols;
  StepConfig c;
  use_programs(o.programs, c);
  c.preset = o.preset;
  c.rows = o.rows;
  c.cols = o.cols;
  c.window = window;
  c.offered_fps = o.fps;
  // The server's and the detector's own defaults, as e2e_ingest_bench passes them.
  c.data_hwm = ServerConfig::kDefaultDataHwm;
  c.send_hwm = detector::default_send_hwm(
      static_cast<std::size_t>(c.rows > 0 ? c.rows : preset.detector.rows) *
      static_cast<std::size_t>(cols) * sizeof(std::uint16_t));
  // Enough frames to stream through the filling of the window and every move.
  c.frames = static_cast<std::uint64_t>(window + o.fps * (30.0 + 0.5 * o.moves));
  c.work_dir = o.work_dir;
  c.tag = "slice-move";
  c.transport = o.transport == "ipc" ? Transport::kIpc : Transport::kTcp;
  Endpoints endpoints;
  std::unique_ptr<client::RequestClient> client;
  v1::StatusReport status;
  std::unique_ptr<ChildProcess> server = start_server(c, endpoints, client, status);
  const std::string backend = status.backend() + " (" + status.backend_device() + ")";
  client::SliceSubscriber subscriber(
      endpoints.slices, {client::Topic::kSlice}, o.subscriber_hwm, {},
      o.slice_values == "f16" ? client::SliceValueType::kHalf : client::SliceValueType::kFloat32);
  std::unique_ptr<LiveViewer> live;
  if (o.viewer == kLiveViewer) live = std::make_unique<LiveViewer>(subscriber);
  ChildProcess streamer(detector_command(c, endpoints), c.work_dir + "/slice-move-detector.log");
  wait_for_window(*client, static_cast<std::uint64_t>(window), *server);
  // The box the preset's slices span: as wide as the detector at the axis.
  const double magnification =
      preset.beam == BeamKind::kCone
          ? (preset.source_origin_mm + preset.origin_detector_mm) / preset.source_origin_mm
          : 1.0;
  const double side_mm = cols * preset.pixel_size_mm / magnification;
  const SteadyClock::time_point moves_start = SteadyClock::now();
  const std::uint64_t bytes_before_moves = live ? live->slice_bytes_received() : 0;
  std::vector<double> reply_ms;
  std::vector<double> shown_ms;
  std::vector<double> published_ms;
  for (int k = 0; k < o.moves; ++k) {
    const double angle = kPi * (0.1 + 0.37 * k);
    const client::Orientation orientation = vertical_slice(angle, side_mm);
    const ReplacedImages before = replaced_images(*client);
    const Move m = live ? move_slice_live(*client, *live, o, orientation, side)
                        : move_slice_reading_after(*client, subscriber, o, orientation, side);
    const ReplacedImages during = replaced_images(*client) - before;
    reply_ms.push_back(m.reply_ms);
    shown_ms.push_back(m.shown_ms);
    published_ms.push_back(m.published_ms);
    report.add("slice moves")
        .set("move", static_cast<double>(k), 0)
        .set("SetSlice -> reply ms", m.reply_ms)
        .set("SetSlice -> published ms", m.published_ms)
        .set("SetSlice -> slice received ms", m.shown_ms)
        .set("projections integrated", static_cast<double>(m.integrated), 0)
        .set("coalesced (pipeline)", static_cast<double>(during.in_pipeline), 0)
        .set("superseded (endpoint)", static_cast<double>(during.at_endpoint), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const SteadyClock::time_point moves_end = SteadyClock::now();
  std::vector<double> wire_ms;
  double viewer_gb_per_s = 0;
  if (live) {
    wire_ms = live->publication_to_decoded_ms();
    viewer_gb_per_s = 1e-9 *
                      static_cast<double>(live->slice_bytes_received() - bytes_before_moves) /
                      std::chrono::duration<double>(moves_end - moves_start).count();
  }
  streamer.stop(std::chrono::seconds(5));
  server->stop(std::chrono::seconds(30));
  report.add("summary")
      .set("preset", o.preset)
      .set("backend", backend)
      .set("slice", std::to_string(side) + " x " + std::to_string(side))
      .set("window", static_cast<double>(window), 0)
      .set("frames/s streamed", o.fps)
      .set("moves", static_cast<double>(o.moves), 0)
      .set("subscriber HWM", static_cast<double>(o.subscriber_hwm), 0)
      .set("viewer", o.viewer)
      .set("transport", o.transport)
      .set("slice values", o.slice_values)
      .set("viewer retain MiB", static_cast<double>(o.viewer_retain_freed_mb), 0)
      .set("reply median ms", percentile(reply_ms, 0.5))
      .set("published median ms", percentile(published_ms, 0.5))
      .set("slice received median ms", percentile(shown_ms, 0.5))
      .set("slice received p90 ms", percentile(shown_ms, 0.9))
      .set("slice received max ms", percentile(shown_ms, 1.0))
      // Every slice the live viewer received (routine updates too): published -> decoded.
      .set("any slice published->decoded median ms", percentile(wire_ms, 0.5))
      .set("any slice published->decoded p90 ms", percentile(wire_ms, 0.9))
      .set("viewer GB/s", viewer_gb_per_s);
  report.note("backend", backend);
  return 0;
}

}  // namespace
}  // namespace slicestream::bench

int main(int argc, char** argv) {
  using namespace slicestream::bench;
  CLI::App app{"Slice-move benchmark: SetSlice -> the moved slice received, while a scan streams"};
  Options o;
  o.programs.backend = "cuda";
  add_program_options(app, o.programs);
  app.add_option("--preset", o.preset, "detector preset (flexray, highspeed, tomobank)");
  app.add_option("--rows", o.rows, "detector rows (default: the preset's)");
  app.add_option("--cols", o.cols, "detector columns (default: the preset's)");
  app.add_option("--window", o.window, "projections per rotation (default: the preset's)");
  app.add_option("--moves", o.moves, "slice moves measured")->check(CLI::Range(1, 1000));
  app.add_option("--fps", o.fps, "frames per second streamed meanwhile")
      ->check(CLI::Range(1.0, 100000.0));
  app.add_option("--slice-size", o.slice_size, "pixels per side (default: the detector's width)");
  app.add_option("--subscriber-hwm", o.subscriber_hwm,
                 "the viewer's receive queue in messages (its ZeroMQ RCVHWM)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--viewer", o.viewer,
                 "live: the viewer reads every publication as it arrives (default); "
                 "read-after-reply: it reads only once its SetSlice was answered")
      ->check(CLI::IsMember({kLiveViewer, kReadAfterReply}));
  app.add_option("--transport", o.transport,
                 "the server's endpoints, the viewer's included: tcp (loopback) or ipc")
      ->check(CLI::IsMember({"tcp", "ipc"}));
  app.add_option("--slice-values", o.slice_values,
                 "how the viewer receives slices: f32 (topic slice, default) or f16 (topic "
                 "fp16-slice, half the bytes)")
      ->check(CLI::IsMember({"f32", "f16"}));
  app.add_option("--viewer-retain-freed-mb", o.viewer_retain_freed_mb,
                 "freed memory the viewer keeps mapped for its next images, MiB (the server's "
                 "--retain-freed-mb for this process; default 0: the C library's policy)");
  app.add_option("--json", o.json, "write the results as JSON to FILE");
  CLI11_PARSE(app, argc, argv);
  if (!programs_runnable(o.programs)) return 1;
  const std::string heap = slicestream::cli::apply_heap_retention(o.viewer_retain_freed_mb);
  if (!heap.empty()) std::fprintf(stderr, "slice_move_bench: %s\n", heap.c_str());
  char pattern[] = "/tmp/slicestream-slice-move.XXXXXX";
  if (mkdtemp(pattern) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  o.work_dir = pattern;
  Report report;
  int status = 1;
  try {
    status = run(o, report);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "slice_move_bench: %s (logs in %s)\n", error.what(), o.work_dir.c_str());
    return 1;
  }
  report.print("slice moves");
  report.print("summary");
  if (!o.json.empty()) report.write_json(o.json, o.programs.backend);
  std::filesystem::remove_all(o.work_dir);
  return status;
}

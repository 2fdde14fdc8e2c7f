// watch: subscribe to the slices endpoint and keep the latest image of every slice, refined slice
// (refined_<id>) and the preview's central planes on disk, printing per-slice rates and latencies
// once a second and every refinement's residuals. Each scan has a folder of its own
// (<out-dir>/scan_<id>/), so a new scan never overwrites the images of the one before; float TIFFs
// carry their metadata (slice_metadata.hpp).
//
// Messages that queued up while files were written are coalesced (only the newest per slice is
// written), so the watcher never falls behind the server. PUB/SUB may drop publications for a
// subscriber that falls behind, so when a scan ends the final image of every slice seen is
// fetched once more with GetSlice (unless --no-final): the files always end at the final state.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "clients/common/image_file.hpp"
#include "clients/common/request_client.hpp"
#include "clients/common/slice_metadata.hpp"
#include "clients/common/slice_subscriber.hpp"
#include "clients/common/volume_planes.hpp"
#include "clients/ctl/ctl_commands.hpp"
#include "clients/ctl/ctl_support.hpp"
#include "clients/ctl/status_print.hpp"
#include "wire/wire_text.hpp"

namespace slicestream::ctl {

namespace {

std::atomic<bool> g_interrupted{false};
void on_signal(int) {
  g_interrupted = true;
}

struct WatchOptions {
  std::string out_dir;
  std::uint64_t count = 0;  // stop after this many slices (0: never)
  double timeout_s = 0;     // stop after this long without any publication (0: never)
  std::vector<std::string> formats{"tiff", "png"};
  bool preview = true;
  bool final_fetch = true;
  bool half =
      false;  // slices, refined slices and previews as binary16 (half the bytes on the link)
};

struct SliceStats {
  std::uint64_t received = 0;
  std::uint64_t in_period = 0;
  double latency_sum_ms = 0;
  double latency_max_ms = 0;
  std::uint64_t projections = 0;
  std::uint64_t scan_id = 0;
};

class Watcher {
 public:
  Watcher(const CtlContext& context, const WatchOptions& options)
      : context_(context),
        options_(options),
        subscriber_(
            context.slices,
            {client::Topic::kSlice, client::Topic::kPreview, client::Topic::kEvent,
             client::Topic::kRefined},
            100, context.security(),
            options.half ? client::SliceValueType::kHalf : client::SliceValueType::kFloat32) {}

  int run();

 private:
  using Clock = std::chrono::steady_clock;

  void handle(client::Publication publication);
  void write_latest();
  void write(std::uint64_t scan_id, const std::string& stem, int width, int height,
             const std::vector<float>& values, const client::ImageMetadata& metadata);
  // <out-dir>/scan_<id>, created (and announced) on first use.
  std::filesystem::path scan_folder(std::uint64_t scan_id);
  void print_period(double seconds);
  void fetch_final_slices(std::uint64_t scan_id);

  const CtlContext& context_;
  WatchOptions options_;
  client::SliceSubscriber subscriber_;
  std::map<std::uint32_t, client::Publication> latest_slices_;
  std::map<std::uint32_t, client::Publication> latest_refined_;
  std::optional<client::Publication> latest_preview_;
  std::map<std::uint32_t, SliceStats> stats_;
  std::map<std::uint32_t, v1::SliceHeader> seen_;  // the latest header of every slice id
  std::uint64_t slices_received_ = 0;
  std::uint64_t files_written_ = 0;
  bool write_failed_ = false;
  std::set<std::uint64_t> scan_folders_;  // created
};

void Watcher::handle(client::Publication publication) {
  switch (publication.topic) {
    case client::Topic::kSlice: {
      const v1::SliceHeader& header = publication.header.slice();
      SliceStats& stats = stats_[header.slice_id()];
      ++stats.received;
      ++stats.in_period;
      const double latency_ms =
          header.published_ns() >= header.arrival_ns() && header.arrival_ns() > 0
              ? static_cast<double>(header.published_ns() - header.arrival_ns()) / 1e6
              : 0;
      stats.latency_sum_ms += latency_ms;
      stats.latency_max_ms = std::max(stats.latency_max_ms, latency_ms);
      stats.projections = header.projections_integrated();
      stats.scan_id = header.scan_id();
      ++slices_received_;
      seen_[header.slice_id()] = header;
      latest_slices_[header.slice_id()] = std::move(publication);
      break;
    }
    case client::Topic::kPreview:
      if (options_.preview) latest_preview_ = std::move(publication);
      break;
    case client::Topic::kRefined: {
      const v1::RefinedSliceHeader& refined = publication.header.refined();
      std::cout << fmt::format(
          "refined slice {}: residual {:.4g} -> {:.4g} after {} iterations ({} projections of "
          "scan {}, {:.1f} ms, {}; {})\n",
          refined.slice().slice_id(), refined.residual_before(), refined.residual_after(),
          refined.iterations(), refined.slice().projections_integrated(), refined.slice().scan_id(),
          refined.duration_ms(), escape_wire_text(refined.solver()),
          describe_refinement_summary(refined.summary()));
      ++slices_received_;
      latest_refined_[refined.slice().slice_id()] = std::move(publication);
      break;
    }
    case client::Topic::kEvent: {
      const v1::Event& event = publication.header.event();
      std::string kind = v1::EventKind_Name(event.kind()).substr(std::string("EVENT_KIND_").size());
      std::cout << fmt::format(
          "event {} scan {}{}: {}\n", kind, event.scan_id(),
          event.reason().empty() ? "" : " [" + escape_wire_text(event.reason()) + "]",
          escape_wire_text(event.message()));
      if (event.kind() == v1::EVENT_KIND_SCAN_ENDED && options_.final_fetch) {
        fetch_final_slices(event.scan_id());
      }
      break;
    }
  }
}

void Watcher::fetch_final_slices(std::uint64_t scan_id) {
  try {
    client::RequestClient requests(context_.requests, context_.timeout_ms(), context_.security());
    for (const auto& [id, header] : seen_) {
      if (header.scan_id() != scan_id || header.orientation().values_size() != 9) continue;
      client::Orientation orientation{};
      std::copy(header.orientation().values().begin(), header.orientation().values().end(),
                orientation.begin());
      client::Response response = requests.get_slice(orientation, header.width(), header.height());
      if (!reply_ok(response, "watch (final slice)")) continue;
      client::Publication final_slice;
      final_slice.topic = client::Topic::kSlice;
      *final_slice.header.mutable_slice() = response.reply.slice();
      final_slice.header.mutable_slice()->set_slice_id(id);
      final_slice.values = std::move(response.values);
      latest_slices_[id] = std::move(final_slice);
    }
  } catch (const client::ClientError& error) {
    std::cerr << "slicestream-ctl watch: cannot fetch the final slices: " << error.what() << "\n";
  }
}

std::filesystem::path Watcher::scan_folder(std::uint64_t scan_id) {
  const std::filesystem::path folder =
      std::filesystem::path(options_.out_dir) / ("scan_" + std::to_string(scan_id));
  if (scan_folders_.insert(scan_id).second) {
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    std::cout << "watch: images of scan " << scan_id << " go to " << folder.string() << "/\n";
  }
  return folder;
}

void Watcher::write(std::uint64_t scan_id, const std::string& stem, int width, int height,
                    const std::vector<float>& values, const client::ImageMetadata& metadata) {
  const std::filesystem::path folder = scan_folder(scan_id);
  for (const std::string& format : options_.formats) {
    const std::string path = (folder / (stem + "." + format)).string();
    try {
      client::write_image(path, width, height, values, metadata);
      ++files_written_;
    } catch (const client::ClientError& error) {
      if (!write_failed_) std::cerr << "slicestream-ctl watch: " << error.what() << "\n";
      write_failed_ = true;
    }
  }
}

void Watcher::write_latest() {
  for (auto& [id, publication] : latest_slices_) {
    const v1::SliceHeader& header = publication.header.slice();
    write(header.scan_id(), "slice_" + std::to_string(id), static_cast<int>(header.width()),
          static_cast<int>(header.height()), publication.values, client::slice_metadata(header));
  }
  latest_slices_.clear();
  for (auto& [id, publication] : latest_refined_) {
    const v1::RefinedSliceHeader& refined = publication.header.refined();
    const v1::SliceHeader& header = refined.slice();
    write(header.scan_id(), "refined_" + std::to_string(id), static_cast<int>(header.width()),
          static_cast<int>(header.height()), publication.values,
          client::slice_metadata(header, "refined", &refined));
  }
  latest_refined_.clear();
  if (latest_preview_) {
    const v1::PreviewHeader& header = latest_preview_->header.preview();
    for (const client::Plane& plane : client::central_planes(
             static_cast<int>(header.size_x()), static_cast<int>(header.size_y()),
             static_cast<int>(header.size_z()), latest_preview_->values)) {
      write(header.scan_id(), "preview_" + plane.name, plane.width, plane.height, plane.values,
            client::preview_plane_metadata(header, plane));
    }
    latest_preview_.reset();
  }
}

void Watcher::print_period(double seconds) {
  std::string line;
  for (auto& [id, stats] : stats_) {
    if (stats.in_period == 0) continue;
    line += fmt::format(
        "{}slice {}: {:.1f}/s, {} projections (scan {}), frame->publish {:.1f} ms "
        "avg {:.1f} max",
        line.empty() ? "" : " | ", id, static_cast<double>(stats.in_period) / seconds,
        stats.projections, stats.scan_id,
        stats.latency_sum_ms / static_cast<double>(stats.in_period), stats.latency_max_ms);
    stats.in_period = 0;
    stats.latency_sum_ms = 0;
    stats.latency_max_ms = 0;
  }
  if (!line.empty()) std::cout << line << std::endl;
}

int Watcher::run() {
  std::filesystem::create_directories(options_.out_dir);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  Clock::time_point last_message = Clock::now();
  Clock::time_point period_start = Clock::now();
  bool timed_out = false;
  while (!g_interrupted) {
    if (options_.count > 0 && slices_received_ >= options_.count) break;
    std::optional<client::Publication> got;
    try {
      got = subscriber_.receive(200);
    } catch (const client::ProtocolError& error) {
      std::cerr << "slicestream-ctl watch: skipped a malformed message: " << error.what() << "\n";
      continue;
    }
    const Clock::time_point now = Clock::now();
    if (got) {
      last_message = now;
      handle(std::move(*got));
      // Coalesce whatever else is already queued, then write only the newest of each.
      while (options_.count == 0 || slices_received_ < options_.count) {
        std::optional<client::Publication> more = subscriber_.receive(0);
        if (!more) break;
        handle(std::move(*more));
      }
      write_latest();
    } else if (options_.timeout_s > 0 &&
               now - last_message > std::chrono::duration<double>(options_.timeout_s)) {
      timed_out = true;
      break;
    }
    const double period_s = std::chrono::duration<double>(now - period_start).count();
    if (period_s >= 1) {
      print_period(period_s);
      period_start = now;
    }
  }
  write_latest();
  std::cout << fmt::format("watch: {} slices received, {} files written to {}\n", slices_received_,
                           files_written_, options_.out_dir);
  if (write_failed_) return kExitFileError;
  if (timed_out && slices_received_ == 0) {
    std::cerr << fmt::format("slicestream-ctl watch: no slice arrived within {:g} s\n",
                             options_.timeout_s);
    return kExitNoAnswer;
  }
  return kExitOk;
}

}  // namespace

void add_watch_command(CLI::App& app, const CtlContext& context, int* status) {
  auto options = std::make_shared<WatchOptions>();
  CLI::App* command = app.add_subcommand(
      "watch",
      "subscribe and save the latest image of every slice (slice_<id>.tiff/.png), refined "
      "slice (refined_<id>) and the preview's central planes (preview_xy/xz/yz) as they arrive, "
      "in a folder per scan (<out-dir>/scan_<id>/)");
  command->add_option("--out-dir", options->out_dir, "directory for the images")->required();
  command->add_option("--count", options->count, "stop after N slices (default: never)");
  command->add_option("--timeout", options->timeout_s,
                      "stop after S seconds without any publication (default: never)");
  command->add_option("--format", options->formats, "image formats to write: tiff, png")
      ->delimiter(',')
      ->check(CLI::IsMember({"tiff", "png"}));
  command->add_flag("!--no-preview", options->preview, "do not write the preview's planes");
  command->add_flag("--fp16", options->half,
                    "receive slices, refined slices and previews as binary16 (half the bytes; 11 "
                    "significant bits of the largest value)");
  command->add_flag("!--no-final", options->final_fetch,
                    "do not fetch the final slices with GetSlice when a scan ends");
  command->callback([&context, options, status] {
    *status = guarded("watch", [&] { return Watcher(context, *options).run(); });
  });
}

}  // namespace slicestream::ctl

#include "clients/ctl/status_print.hpp"

#include <fmt/format.h>

#include <map>
#include <string>

#include "clients/common/slice_metadata.hpp"
#include "clients/ctl/ctl_support.hpp"
#include "wire/wire_text.hpp"

namespace slicestream::ctl {

namespace {

std::string latency(const v1::Latency& l) {
  if (l.count() == 0) return "n/a";
  return fmt::format("p50 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms (n={})", l.p50_us() / 1000,
                     l.p99_us() / 1000, l.max_us() / 1000, l.count());
}

std::string triple(const v1::SliceOrientation& o, int first) {
  return fmt::format("({:g}, {:g}, {:g})", o.values(first), o.values(first + 1),
                     o.values(first + 2));
}

std::string box(const v1::VolumeBox& b) {
  return fmt::format("[{:g}, {:g}] x [{:g}, {:g}] x [{:g}, {:g}] mm", b.min_mm().x(),
                     b.max_mm().x(), b.min_mm().y(), b.max_mm().y(), b.min_mm().z(),
                     b.max_mm().z());
}

// The record of the current scan (the newest with its id).
const v1::ScanRecord* current_record(const v1::StatusReport& s) {
  const v1::ScanRecord* found = nullptr;
  for (const v1::ScanRecord& record : s.recent_scans()) {
    if (record.scan_id() == s.scan_id()) found = &record;
  }
  return found;
}

// "2.5 s ago", "no frame yet".
std::string age(double seconds) {
  if (seconds < 0) return "no frame yet";
  if (seconds < 60) return fmt::format("{:.1f} s ago", seconds);
  if (seconds < 3600) return fmt::format("{:.0f} min ago", seconds / 60);
  return fmt::format("{:.1f} h ago", seconds / 3600);
}

void print_scan(std::ostream& out, const v1::StatusReport& s) {
  out << fmt::format("scan      {} {}{}{}\n", s.scan_id(), escape_wire_text(s.scan_state()),
                     s.scan_active() ? " (active)" : "",
                     s.scan_end_reason().empty()
                         ? std::string()
                         : " (" + escape_wire_text(s.scan_end_reason()) + ")");
  if (s.has_scan()) {
    const v1::ScanSummary& g = s.scan();
    std::string geometry = fmt::format("{} beam{}, detector {} x {} {}", g.beam(),
                                       g.vector_geometry() ? " (vectors)" : "", g.detector_rows(),
                                       g.detector_cols(), g.pixel_type());
    if (!g.vector_geometry()) {
      geometry += fmt::format(", pixel {:g} x {:g} mm", g.pixel_width_mm(), g.pixel_height_mm());
    }
    if (g.beam() == "cone" && !g.vector_geometry()) {
      geometry +=
          fmt::format(", SOD {:g} mm, ODD {:g} mm", g.source_origin_mm(), g.origin_detector_mm());
    }
    out << "  geometry " << geometry << ", " << g.projections_per_rotation()
        << " projections per rotation\n";
    out << "  box      " << box(g.volume()) << "; values in " << g.value_units() << "\n";
    if (!g.description().empty()) out << "  from     " << escape_wire_text(g.description()) << "\n";
  }
  if (const v1::ScanRecord* r = current_record(s)) {
    out << fmt::format(
        "  frames   {} darks, {} flats, {} projections accepted, {} integrated; "
        "last frame {}",
        r->darks_accepted(), r->flats_accepted(), r->projections_accepted(),
        r->projections_integrated(), age(r->last_frame_age_s()));
    if (r->ended()) {
      if (r->end_reason() == "superseded") {
        out << fmt::format("; superseded by scan {}", r->superseded_by());
      } else if (r->end_reason() == "timeout") {
        out << "; ended: no data for --scan-timeout";
      } else {
        out << "; ended by its ScanEnd";
      }
    }
    out << "\n";
  }
}

void print_slices(std::ostream& out, const v1::StatusReport& s) {
  out << "slices\n";
  if (s.slices().empty()) out << "  (none)\n";
  for (int i = 0; i < s.slices_size(); ++i) {
    const v1::SetSlice& slice = s.slices(i);
    if (slice.orientation().values_size() != 9) continue;
    std::string placement;
    if (i < s.slice_info_size()) {
      const v1::SliceInfo& info = s.slice_info(i);
      placement = info.placement() == "world" ? "  (world mm)" : "  (" + info.placement() + ")";
      if (info.outside_box()) placement += "  OUTSIDE THE SCAN'S BOX: shows nothing";
    }
    out << fmt::format("  {:>3}: {} x {}  x-axis {} y-axis {} base {}{}\n", slice.slice_id(),
                       slice.width(), slice.height(), triple(slice.orientation(), 0),
                       triple(slice.orientation(), 3), triple(slice.orientation(), 6), placement);
  }
}
std::string regularization(const std::string& regularizer, double weight, bool non_negative) {
  std::string out =
      regularizer == "none" ? "no regulariser" : fmt::format("{} weight {:g}", regularizer, weight);
  return out + (non_negative ? ", x >= 0" : ", unbounded");
}

}  // namespace

std::string describe_refinement_settings(const v1::RefinementSettings& settings) {
  std::string out =
      settings.method() + ", " +
      regularization(settings.regularizer(), settings.weight(), settings.non_negative());
  if (settings.stop() == "discrepancy") {
    return out + fmt::format(", stop at {:g} x noise level", settings.discrepancy_factor());
  }
  return out + ", all iterations";
}

std::string describe_refinement_summary(const v1::RefinementSummary& summary) {
  if (summary.method() == "residual") return "residual only";
  std::string out =
      summary.method() + ", " +
      regularization(summary.regularizer(), summary.weight(), summary.non_negative()) +
      ": stopped (" + summary.stop_reason() + ")";
  if (summary.has_noise_level()) {
    out += fmt::format(", noise level {:.4g}", summary.noise_level());
    if (summary.target_residual() > 0) {
      out += fmt::format(", target {:.4g}", summary.target_residual());
    }
  } else {
    out += ", noise level unknown";
  }
  return out;
}

namespace {

void print_refinements(std::ostream& out, const v1::StatusReport& s) {
  if (s.refinements().empty()) return;
  out << "refinements (data consistency ||Ax - b|| / ||b||)\n";
  for (const v1::RefinementStatus& r : s.refinements()) {
    out << fmt::format("  {:>3}: {} iterations every {:g} s, detector row {:.2f}, {} ({}/{})",
                       r.slice_id(), r.iterations(), r.interval_s(), r.detector_row(), r.state(),
                       r.window_filled(), r.window_size());
    if (!r.detail().empty()) out << ": " << escape_wire_text(r.detail());
    out << "\n";
    if (r.has_settings()) out << "       " << describe_refinement_settings(r.settings()) << "\n";
    if (r.has_fbp_residual()) {
      out << fmt::format(
          "       residual FBP {:.4g} -> refined {:.4g} after {} iterations ({} projections, "
          "{:.1f} ms, {}), {} refinements\n",
          r.fbp_residual(), r.refined_residual(), r.iterations_run(), r.projections_integrated(),
          r.duration_ms(), escape_wire_text(r.solver()), r.refinements());
      if (r.has_summary()) out << "       " << describe_refinement_summary(r.summary()) << "\n";
    }
  }
  out << "refinement time  " << latency(s.refinement()) << "\n";
}

void print_residuals(std::ostream& out, const v1::StatusReport& s) {
  if (s.residuals().empty()) return;
  out << "data consistency of the live slices (||A x_fbp - b|| / ||b||)\n";
  for (const v1::SliceResidual& r : s.residuals()) {
    out << fmt::format("  {:>3}: ", r.slice_id());
    if (r.has_residual()) {
      out << fmt::format("{:.4g} ({} projections, {} per window, {:.1f} s ago), ", r.residual(),
                         r.projections_integrated(), r.window_size(), r.age_s());
    }
    out << r.state();
    if (!r.reason().empty()) out << " (" << escape_wire_text(r.reason()) << ")";
    out << fmt::format(", by {} every {:g} s", escape_wire_text(r.source()), r.interval_s());
    if (!r.detail().empty()) out << ": " << escape_wire_text(r.detail());
    out << "\n";
  }
  out << "check time       " << latency(s.residual_check()) << "\n";
}

}  // namespace

void print_parameters(std::ostream& out, const v1::Parameters& p) {
  out << fmt::format("  filter           {} (cutoff {:g} of Nyquist)\n",
                     client::filter_name(p.filter()), p.filter_cutoff());
  out << fmt::format("  mode             {}\n", mode_name(p.window_mode()));
  out << fmt::format("  cor offset       {:g} px\n", p.rotation_axis_offset_px());
  out << fmt::format("  publish rate     {}\n",
                     p.publish_rate_hz() > 0 ? fmt::format("{:g} Hz per slice", p.publish_rate_hz())
                                             : std::string("every update"));
  out << fmt::format("  preview interval {:g} s\n", p.preview_interval_s());
}

void print_status(std::ostream& out, const v1::StatusReport& s) {
  out << fmt::format("backend   {} ({})\n", escape_wire_text(s.backend()),
                     escape_wire_text(s.backend_device()));
  print_scan(out, s);
  out << fmt::format("uptime    {:.1f} s\n", s.uptime_s());
  if (s.has_capture()) {
    const v1::CaptureStatus& c = s.capture();
    out << fmt::format("capture   {} in {}{} ({} frames written, {} dropped)\n", c.state(),
                       c.directory(), c.file().empty() ? "" : ", file " + c.file(),
                       c.frames_written(), c.frames_dropped());
  }
  out << "parameters\n";
  print_parameters(out, s.parameters());
  print_slices(out, s);
  print_refinements(out, s);
  print_residuals(out, s);
  out << "stages         rate/s   busy  service                                      queue\n";
  for (const v1::StageStatus& stage : s.stages()) {
    out << fmt::format("  {:<11} {:>8.1f} {:>5.1f}%  {:<44} {}/{}\n", stage.name(),
                       stage.rate_per_s(), 100 * stage.busy_fraction(), latency(stage.service()),
                       stage.queue_depth(), stage.queue_capacity());
  }
  out << "frame -> slice latency  " << latency(s.frame_to_slice()) << "\n";
  out << "counters\n";
  const std::map<std::string, std::uint64_t> counters(s.counters().begin(), s.counters().end());
  for (const auto& [name, count] : counters)
    out << fmt::format("  {:<24} {}\n", escape_wire_text(name), count);
  out << "discards\n";
  if (s.discards().empty()) out << "  (none)\n";
  const std::map<std::string, std::uint64_t> discards(s.discards().begin(), s.discards().end());
  for (const auto& [reason, count] : discards)
    out << fmt::format("  {:<24} {}\n", escape_wire_text(reason), count);
  if (!s.requests_refused().empty()) {
    out << "requests refused\n";
    const std::map<std::string, std::uint64_t> refused(s.requests_refused().begin(),
                                                       s.requests_refused().end());
    for (const auto& [reason, count] : refused)
      out << fmt::format("  {:<24} {}\n", escape_wire_text(reason), count);
  }
}

}  // namespace slicestream::ctl

#include "pipeline/messages/parameters.hpp"

#include <cmath>
#include <sstream>
#include <string>

namespace slicestream {
namespace {

std::string within(const char* name, double value, double low, bool low_open, double high) {
  const bool below = low_open ? !(value > low) : !(value >= low);
  if (std::isfinite(value) && !below && value <= high) return {};
  std::ostringstream out;
  out << name << " " << value << " is not a finite number in " << (low_open ? "(" : "[") << low
      << ", " << high << "]";
  return out.str();
}

// The first non-empty problem.
template <typename... Problems>
std::string first_of(Problems&&... problems) {
  std::string first;
  ((first = first.empty() ? std::string(problems) : first), ...);
  return first;
}

}  // namespace

std::string filter_window_problem(FilterWindow window) {
  switch (window) {
    case FilterWindow::kRamLak:
    case FilterWindow::kSheppLogan:
    case FilterWindow::kCosine:
    case FilterWindow::kHamming:
    case FilterWindow::kHann:
      return {};
  }
  return "unknown filter window";
}

std::string filter_cutoff_problem(double cutoff) {
  return within("filter cutoff (a fraction of Nyquist)", cutoff, 0, true, 1);
}

std::string window_mode_problem(WindowMode mode) {
  return value_in(kWindowModeNames, to_string(mode)) ? std::string{} : "unknown window mode";
}

std::string rotation_axis_offset_problem(double offset_px) {
  return within("rotation axis offset (pixels)", offset_px, -kMaxDetectorSide, false,
                kMaxDetectorSide);
}

std::string publish_rate_problem(double rate_hz) {
  return within("publish rate (Hz, 0: every update)", rate_hz, 0, false, kMaxPublishRateHz);
}

std::string preview_interval_problem(double interval_s) {
  return within("preview interval (s)", interval_s, 0, false, kMaxIntervalS);
}

std::string parameters_problem(const SetParametersCommand& c) {
  return first_of(
      c.filter_window ? filter_window_problem(*c.filter_window) : "",
      c.filter_cutoff ? filter_cutoff_problem(*c.filter_cutoff) : "",
      c.window_mode ? window_mode_problem(*c.window_mode) : "",
      c.rotation_axis_offset_px ? rotation_axis_offset_problem(*c.rotation_axis_offset_px) : "",
      c.publish_rate_hz ? publish_rate_problem(*c.publish_rate_hz) : "",
      c.preview_interval_s ? preview_interval_problem(*c.preview_interval_s) : "");
}

std::string parameters_problem(const Parameters& p) {
  SetParametersCommand all;
  all.filter_window = p.filter.window;
  all.filter_cutoff = p.filter.cutoff;
  all.window_mode = p.window_mode;
  all.rotation_axis_offset_px = p.rotation_axis_offset_px;
  all.publish_rate_hz = p.publish_rate_hz;
  all.preview_interval_s = p.preview_interval_s;
  return parameters_problem(all);
}

Parameters apply(const SetParametersCommand& change, Parameters current) {
  if (change.filter_window) current.filter.window = *change.filter_window;
  if (change.filter_cutoff) current.filter.cutoff = *change.filter_cutoff;
  if (change.window_mode) current.window_mode = *change.window_mode;
  if (change.rotation_axis_offset_px) {
    current.rotation_axis_offset_px = *change.rotation_axis_offset_px;
  }
  if (change.publish_rate_hz) current.publish_rate_hz = *change.publish_rate_hz;
  if (change.preview_interval_s) current.preview_interval_s = *change.preview_interval_s;
  return current;
}

std::string describe(const Parameters& parameters) {
  std::ostringstream out;
  out << "filter " << to_string(parameters.filter.window) << " (cutoff " << parameters.filter.cutoff
      << "), " << to_string(parameters.window_mode) << " window, rotation axis offset "
      << parameters.rotation_axis_offset_px << " px, ";
  if (parameters.publish_rate_hz > 0) {
    out << "slices published at most " << parameters.publish_rate_hz << " Hz";
  } else {
    out << "slices published after every update";
  }
  out << ", preview every " << parameters.preview_interval_s << " s";
  return out.str();
}

}  // namespace slicestream

// The run-time parameters of the reconstruction (SetParameters changes them; server flags set
// their start values) and the one check of each: the reconstruct stage refuses a SetParameters
// that fails it, the server refuses such a start value.
#pragma once

#include <optional>
#include <string>

#include "kernels/filter_config.hpp"
#include "pipeline/backend/name_table.hpp"
#include "pipeline/messages/scan_description.hpp"

namespace slicestream {

enum class WindowMode { kSlidingWindow, kPerRotation };
inline constexpr NameTable<WindowMode, 2> kWindowModeNames{
    {{WindowMode::kSlidingWindow, "sliding"}, {WindowMode::kPerRotation, "per-rotation"}}};
inline const char* to_string(WindowMode mode) {
  return name_in(kWindowModeNames, mode);
}

struct Parameters {
  FilterConfig filter;
  WindowMode window_mode = WindowMode::kSlidingWindow;
  double rotation_axis_offset_px = 0;
  double publish_rate_hz = 0;  // per slice; 0: after every update
  double preview_interval_s = 1;
};

// A change of some parameters; unset fields keep their value, and the filter's window and cutoff
// can change on their own (the reconstruct stage completes them with the filter in force).
struct SetParametersCommand {
  std::optional<FilterWindow> filter_window;
  std::optional<float> filter_cutoff;
  std::optional<WindowMode> window_mode;
  std::optional<double> rotation_axis_offset_px;
  std::optional<double> publish_rate_hz;
  std::optional<double> preview_interval_s;
};

// The bounds of the parameters; the rotation-axis offset is bounded by kMaxDetectorSide. Every
// interval of the pipeline (preview, refinement, residual checks) is at most a day.
inline constexpr double kMaxPublishRateHz = 1e6;
inline constexpr double kMaxIntervalS = 86400;

// Empty when the value is allowed, else why not, naming the parameter.
std::string filter_window_problem(FilterWindow window);
std::string filter_cutoff_problem(double cutoff);
std::string window_mode_problem(WindowMode mode);
std::string rotation_axis_offset_problem(double offset_px);
std::string publish_rate_problem(double rate_hz);
std::string preview_interval_problem(double interval_s);

// The first problem of the set fields (empty: all allowed).
std::string parameters_problem(const SetParametersCommand& change);
std::string parameters_problem(const Parameters& parameters);

// `current` with the set fields of `change`.
Parameters apply(const SetParametersCommand& change, Parameters current);

// "filter hann (cutoff 0.8), sliding window, ...": every value, for replies and the log.
std::string describe(const Parameters& parameters);

}  // namespace slicestream

#include "server/tomop/recast3d_controls.hpp"

#include <optional>
#include <string>

namespace slicestream::tomop {

namespace {

constexpr FilterWindow kWindows[] = {FilterWindow::kRamLak, FilterWindow::kSheppLogan,
                                     FilterWindow::kCosine, FilterWindow::kHamming,
                                     FilterWindow::kHann};
constexpr WindowMode kModes[] = {WindowMode::kSlidingWindow, WindowMode::kPerRotation};

template <typename T, std::size_t N, typename Name>
std::vector<std::string> current_first(const T (&choices)[N], T current, Name name) {
  std::vector<std::string> names = {name(current)};
  for (T choice : choices) {
    if (choice != current) names.push_back(name(choice));
  }
  return names;
}

ControlChange refuse(std::string why) {
  ControlChange change;
  change.refused = std::move(why);
  return change;
}

ControlChange on_enum(const ParameterEnum& p) {
  if (p.values.empty()) return refuse("no value chosen for '" + p.parameter_name + "'");
  const std::string& chosen = p.values.front();
  ControlChange change;
  if (p.parameter_name == kFilterControl) {
    const std::optional<FilterWindow> window = parse_filter_window(chosen);
    if (!window) return refuse("unknown filter '" + chosen + "'");
    change.parameters = SetParametersCommand{};
    change.parameters->filter_window = *window;
    return change;
  }
  if (p.parameter_name == kModeControl) {
    const std::optional<WindowMode> mode = value_in(kWindowModeNames, chosen);
    if (!mode) return refuse("unknown window mode '" + chosen + "'");
    change.parameters = SetParametersCommand{};
    change.parameters->window_mode = *mode;
    return change;
  }
  return refuse("no enum control named '" + p.parameter_name + "'");
}

ControlChange on_float(const ParameterFloat& p) {
  const double value = p.value;
  ControlChange change;
  if (p.parameter_name == kCutoffControl) {
    if (std::string problem = filter_cutoff_problem(value); !problem.empty()) return refuse(problem);
    change.parameters = SetParametersCommand{};
    change.parameters->filter_cutoff = static_cast<float>(value);
    return change;
  }
  if (p.parameter_name == kOffsetControl) {
    if (std::string problem = rotation_axis_offset_problem(value); !problem.empty()) {
      return refuse(problem);
    }
    change.parameters = SetParametersCommand{};
    change.parameters->rotation_axis_offset_px = value;
    return change;
  }
  return refuse("no float control named '" + p.parameter_name + "'");
}

}  // namespace

std::vector<Packet> control_packets(std::int32_t scene_id, const Parameters& current,
                                    bool refine_on) {
  return {
      ParameterEnum{scene_id, kFilterControl,
                    current_first(kWindows, current.filter.window,
                                  [](FilterWindow w) { return std::string(to_string(w)); })},
      ParameterFloat{scene_id, kCutoffControl, static_cast<float>(current.filter.cutoff)},
      ParameterFloat{scene_id, kOffsetControl, static_cast<float>(current.rotation_axis_offset_px)},
      ParameterEnum{scene_id, kModeControl,
                    current_first(kModes, current.window_mode,
                                  [](WindowMode m) { return std::string(to_string(m)); })},
      ParameterBool{scene_id, kRefineControl, refine_on},
  };
}

ControlChange control_change(const Packet& packet) {
  if (const auto* e = std::get_if<ParameterEnum>(&packet)) return on_enum(*e);
  if (const auto* f = std::get_if<ParameterFloat>(&packet)) return on_float(*f);
  if (const auto* b = std::get_if<ParameterBool>(&packet)) {
    if (b->parameter_name != kRefineControl) {
      return refuse("no bool control named '" + b->parameter_name + "'");
    }
    ControlChange change;
    change.refine = b->value;
    return change;
  }
  return refuse("not a parameter packet");
}

}  // namespace slicestream::tomop

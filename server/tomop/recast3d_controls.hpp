// The server's parameters as RECAST3D controls (ParameterEnum / ParameterFloat / ParameterBool):
// registered after MakeScene, and the viewer's changes turned into the same SetParameters /
// SetRefinement commands slicestream-ctl sends.
//
//   "filter"                     enum: ram-lak, shepp-logan, cosine, hamming, hann
//   "filter cutoff"              float in (0, 1], fraction of Nyquist
//   "rotation axis offset (px)"  float, detector columns
//   "window mode"                enum: sliding, rotation
//   "refine axial slice"         bool: CGLS refinement of the viewer's axial slice
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/messages/command.hpp"
#include "server/tomop/tomop_packets.hpp"

namespace slicestream::tomop {

inline constexpr const char* kFilterControl = "filter";
inline constexpr const char* kCutoffControl = "filter cutoff";
inline constexpr const char* kOffsetControl = "rotation axis offset (px)";
inline constexpr const char* kModeControl = "window mode";
inline constexpr const char* kRefineControl = "refine axial slice";

// One packet per control with the value in force (an enum lists the current choice first: the
// viewer shows the first choice as the current one).
std::vector<Packet> control_packets(std::int32_t scene_id, const Parameters& current,
                                    bool refine_on);

struct ControlChange {
  std::optional<SetParametersCommand> parameters;
  std::optional<bool> refine;
  std::string refused;  // non-empty: the value was not taken, and why (the controls are re-sent)
};

// A ParameterBool / ParameterFloat / ParameterEnum from the viewer.
ControlChange control_change(const Packet& packet);

}  // namespace slicestream::tomop

#include "pipeline/messages/pipeline_config.hpp"

#include <sstream>

namespace slicestream {
namespace {

// NaN lies outside every range.
template <typename T>
std::string outside(const char* name, T value, T low, T high) {
  if (value >= low && value <= high) return {};
  std::ostringstream out;
  out << name << " " << value << " is outside " << low << ".." << high;
  return out.str();
}

std::string refinement_problem(const RefinementLimits& r) {
  std::string problem = outside("max_iterations (refinement)", r.max_iterations, 1, 1 << 20);
  if (problem.empty()) problem = outside("max_slices (refinement)", r.max_slices, 1, 1 << 16);
  if (problem.empty()) {
    problem = outside("residual_interval_s", r.residual_interval_s, 0.0, kMaxIntervalS);
  }
  return problem;
}

}  // namespace

std::string pipeline_config_problem(const PipelineConfig& c) {
  const std::string checks[] = {
      parameters_problem(c.parameters),
      outside("queue_depth", c.queue_depth, 1, kMaxQueueDepth),
      outside("preview_size", c.preview_size, 0, kMaxPreviewSize),
      outside("refresh_rotations", c.refresh_rotations, 0, 1 << 20),
      outside("max_slices", c.max_slices, 1, 1 << 16),
      outside("max_slice_side", c.max_slice_side, 1, 1 << 20),
      outside("default_slice_size", c.default_slice_size, 0, c.max_slice_side),
      outside("max_projection_batch", c.max_projection_batch, 1, kMaxProjectionBatch),
      outside("scan_timeout_s", c.scan_timeout_s, 0.0, kMaxIntervalS),
      refinement_problem(c.refinement),
  };
  for (const std::string& problem : checks) {
    if (!problem.empty()) return problem;
  }
  return {};
}

}  // namespace slicestream

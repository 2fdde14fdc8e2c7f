// The one check of each run-time parameter and of the pipeline's settings
// (pipeline/messages/parameters.hpp, pipeline_config.hpp), and how a change completes the values
// in force.
#include "pipeline/messages/parameters.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "pipeline/messages/pipeline_config.hpp"

namespace slicestream {
namespace {

const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

TEST(Parameters, EachParameterIsCheckedAgainstItsRange) {
  EXPECT_FALSE(filter_cutoff_problem(0).empty());
  EXPECT_FALSE(filter_cutoff_problem(1.01).empty());
  EXPECT_FALSE(filter_cutoff_problem(kNan).empty());
  EXPECT_TRUE(filter_cutoff_problem(1).empty());
  EXPECT_TRUE(filter_cutoff_problem(1e-3).empty());
  EXPECT_FALSE(filter_window_problem(static_cast<FilterWindow>(42)).empty());
  EXPECT_TRUE(filter_window_problem(FilterWindow::kHann).empty());
  EXPECT_FALSE(window_mode_problem(static_cast<WindowMode>(9)).empty());
  EXPECT_TRUE(window_mode_problem(WindowMode::kPerRotation).empty());
  EXPECT_FALSE(publish_rate_problem(-1).empty());
  EXPECT_FALSE(publish_rate_problem(kInf).empty());
  EXPECT_TRUE(publish_rate_problem(0).empty());
  EXPECT_FALSE(preview_interval_problem(kNan).empty());
  EXPECT_FALSE(preview_interval_problem(-0.5).empty());
  EXPECT_TRUE(preview_interval_problem(0).empty());
  EXPECT_FALSE(rotation_axis_offset_problem(kNan).empty());
  EXPECT_FALSE(rotation_axis_offset_problem(1e9).empty());
  EXPECT_TRUE(rotation_axis_offset_problem(-3.5).empty());
  EXPECT_NE(filter_cutoff_problem(2).find("filter cutoff"), std::string::npos)
      << "the problem names the parameter";
}

TEST(Parameters, AChangeIsCheckedFieldByField) {
  SetParametersCommand change;
  EXPECT_TRUE(parameters_problem(change).empty()) << "an empty change is fine";
  change.publish_rate_hz = 5;
  change.filter_cutoff = 1.5f;
  EXPECT_NE(parameters_problem(change).find("cutoff"), std::string::npos);
  change.filter_cutoff = 0.5f;
  EXPECT_TRUE(parameters_problem(change).empty());
  Parameters all;
  all.preview_interval_s = -1;
  EXPECT_NE(parameters_problem(all).find("preview interval"), std::string::npos);
}

TEST(Parameters, AChangeKeepsWhatItDoesNotSet) {
  Parameters current;
  current.filter = {FilterWindow::kHann, 0.7f};
  current.publish_rate_hz = 3;
  SetParametersCommand cutoff_only;
  cutoff_only.filter_cutoff = 0.25f;
  Parameters after = apply(cutoff_only, current);
  EXPECT_EQ(after.filter.window, FilterWindow::kHann);
  EXPECT_EQ(after.filter.cutoff, 0.25f);
  EXPECT_EQ(after.publish_rate_hz, 3);
  SetParametersCommand window_only;
  window_only.filter_window = FilterWindow::kCosine;
  after = apply(window_only, after);
  EXPECT_EQ(after.filter.window, FilterWindow::kCosine);
  EXPECT_EQ(after.filter.cutoff, 0.25f);
}

TEST(Parameters, WindowModesHaveOneNameEach) {
  EXPECT_STREQ(to_string(WindowMode::kSlidingWindow), "sliding");
  EXPECT_STREQ(to_string(WindowMode::kPerRotation), "per-rotation");
  EXPECT_EQ(value_in(kWindowModeNames, "per-rotation"), WindowMode::kPerRotation);
  EXPECT_FALSE(value_in(kWindowModeNames, "rotation").has_value());
}

TEST(PipelineConfig, TheDefaultsAreValidAndEachSettingIsChecked) {
  EXPECT_EQ(pipeline_config_problem(PipelineConfig{}), "");
  struct Case {
    const char* named;  // what the problem must name
    void (*change)(PipelineConfig&);
  };
  const Case cases[] = {
      {"queue_depth", [](PipelineConfig& c) { c.queue_depth = 0; }},
      {"max_projection_batch", [](PipelineConfig& c) { c.max_projection_batch = 0; }},
      {"preview_size", [](PipelineConfig& c) { c.preview_size = 5000; }},
      {"default_slice_size", [](PipelineConfig& c) { c.default_slice_size = 9000; }},
      {"residual_interval_s", [](PipelineConfig& c) { c.refinement.residual_interval_s = kNan; }},
      {"filter cutoff", [](PipelineConfig& c) { c.parameters.filter.cutoff = 0; }},
  };
  for (const Case& c : cases) {
    PipelineConfig config;
    c.change(config);
    EXPECT_NE(pipeline_config_problem(config).find(c.named), std::string::npos) << c.named;
  }
  PipelineConfig no_refresh;
  no_refresh.refresh_rotations = 0;
  EXPECT_EQ(pipeline_config_problem(no_refresh), "") << "0 switches the refresh off";
}

}  // namespace
}  // namespace slicestream

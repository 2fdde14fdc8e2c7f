// The requests codec: every request kind decodes to its command; every bad request is refused
// with the right code and reason.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "server/codec/request_codec.hpp"
#include "tests/server/wire_builders.hpp"

namespace slicestream {
namespace {

using test::Random;

DecodedRequest decode(const v1::Request& request, const WireLimits& limits = {}) {
  const std::string bytes = request.SerializeAsString();
  return decode_request(bytes.data(), bytes.size(), limits);
}

v1::Request request_with_id(std::uint64_t id) {
  v1::Request request;
  request.set_protocol_version(1);
  request.set_request_id(id);
  return request;
}

std::array<float, 9> random_orientation(Random& random) {
  std::array<float, 9> values{};
  for (float& v : values)
    v = static_cast<float>(random.uniform(-10, 10));
  return values;
}

void set_orientation(const std::array<float, 9>& values, v1::SliceOrientation* wire) {
  for (float v : values)
    wire->add_values(v);
}

TEST(RequestCodec, SetSlice) {
  Random random;
  SCOPED_TRACE(random.seed);
  const auto orientation = random_orientation(random);
  v1::Request request = request_with_id(random.integer(1, 1u << 31));
  request.mutable_set_slice()->set_slice_id(17);
  set_orientation(orientation, request.mutable_set_slice()->mutable_orientation());
  request.mutable_set_slice()->set_width(300);
  request.mutable_set_slice()->set_height(200);
  DecodedRequest decoded = decode(request);
  EXPECT_EQ(decoded.request_id, request.request_id());
  ASSERT_TRUE(decoded.command.ok()) << decoded.command.error().message;
  const auto& command = std::get<SetSliceCommand>(decoded.command.value());
  EXPECT_EQ(command.slice_id, 17u);
  EXPECT_EQ(command.orientation.values, orientation);
  EXPECT_EQ(command.width, 300);
  EXPECT_EQ(command.height, 200);
}

TEST(RequestCodec, GetSliceRemoveSliceGetStatus) {
  Random random;
  SCOPED_TRACE(random.seed);
  const auto orientation = random_orientation(random);
  v1::Request get = request_with_id(5);
  set_orientation(orientation, get.mutable_get_slice()->mutable_orientation());
  get.mutable_get_slice()->set_width(64);
  get.mutable_get_slice()->set_height(32);
  DecodedRequest decoded = decode(get);
  ASSERT_TRUE(decoded.command.ok()) << decoded.command.error().message;
  const auto& slice = std::get<GetSliceCommand>(decoded.command.value());
  EXPECT_EQ(slice.orientation.values, orientation);
  EXPECT_EQ(slice.width, 64);
  EXPECT_EQ(slice.height, 32);

  v1::Request remove = request_with_id(6);
  remove.mutable_remove_slice()->set_slice_id(3);
  decoded = decode(remove);
  ASSERT_TRUE(decoded.command.ok());
  EXPECT_EQ(std::get<RemoveSliceCommand>(decoded.command.value()).slice_id, 3u);

  v1::Request status = request_with_id(7);
  status.mutable_get_status();
  decoded = decode(status);
  ASSERT_TRUE(decoded.command.ok());
  EXPECT_TRUE(std::holds_alternative<GetStatusCommand>(decoded.command.value()));
}

TEST(RequestCodec, SetParametersAllFields) {
  v1::Request request = request_with_id(8);
  v1::SetParameters* p = request.mutable_set_parameters();
  p->set_filter(v1::FILTER_WINDOW_SHEPP_LOGAN);
  p->set_filter_cutoff(0.5f);
  p->set_window_mode(v1::WINDOW_MODE_PER_ROTATION);
  p->set_rotation_axis_offset_px(-2.5);
  p->set_publish_rate_hz(10);
  p->set_preview_interval_s(0.25);
  DecodedRequest decoded = decode(request);
  ASSERT_TRUE(decoded.command.ok()) << decoded.command.error().message;
  const auto& command = std::get<SetParametersCommand>(decoded.command.value());
  EXPECT_EQ(command.filter_window, std::optional<FilterWindow>(FilterWindow::kSheppLogan));
  EXPECT_EQ(command.filter_cutoff, std::optional<float>(0.5f));
  EXPECT_EQ(command.window_mode, std::optional<WindowMode>(WindowMode::kPerRotation));
  EXPECT_EQ(command.rotation_axis_offset_px, std::optional<double>(-2.5));
  EXPECT_EQ(command.publish_rate_hz, std::optional<double>(10));
  EXPECT_EQ(command.preview_interval_s, std::optional<double>(0.25));
}

TEST(RequestCodec, SetParametersKeepsUnsetFields) {
  v1::Request request = request_with_id(9);
  request.mutable_set_parameters();
  DecodedRequest decoded = decode(request);
  ASSERT_TRUE(decoded.command.ok());
  const auto& empty = std::get<SetParametersCommand>(decoded.command.value());
  EXPECT_FALSE(empty.filter_window || empty.filter_cutoff || empty.window_mode ||
               empty.rotation_axis_offset_px || empty.publish_rate_hz || empty.preview_interval_s);

  // Only the cutoff: the window stays unset (the pipeline keeps the one in force).
  request.mutable_set_parameters()->set_filter_cutoff(0.25f);
  decoded = decode(request);
  ASSERT_TRUE(decoded.command.ok());
  const auto& cutoff_only = std::get<SetParametersCommand>(decoded.command.value());
  EXPECT_FALSE(cutoff_only.filter_window.has_value());
  EXPECT_EQ(cutoff_only.filter_cutoff, std::optional<float>(0.25f));

  // Only the window: the cutoff stays unset.
  request.mutable_set_parameters()->clear_filter_cutoff();
  request.mutable_set_parameters()->set_filter(v1::FILTER_WINDOW_COSINE);
  decoded = decode(request);
  ASSERT_TRUE(decoded.command.ok());
  const auto& window_only = std::get<SetParametersCommand>(decoded.command.value());
  EXPECT_EQ(window_only.filter_window, std::optional<FilterWindow>(FilterWindow::kCosine));
  EXPECT_FALSE(window_only.filter_cutoff.has_value());
}

// ------------------------------------------------------------------------------- bad input

struct Refusal {
  StatusCode code;
  std::string reason;
};

Refusal refusal(const DecodedRequest& decoded) {
  if (decoded.command.ok()) return {StatusCode::kOk, "ok"};
  return {decoded.command.error().code, decoded.command.error().reason};
}

TEST(RequestCodecRejects, UndecodableOversizedVersionKind) {
  const std::string garbage(40, '\xff');
  DecodedRequest decoded = decode_request(garbage.data(), garbage.size(), {});
  EXPECT_EQ(decoded.request_id, 0u);
  EXPECT_EQ(refusal(decoded).reason, "undecodable_request");
  EXPECT_EQ(refusal(decoded).code, StatusCode::kInvalidArgument);

  WireLimits limits;
  limits.max_request_bytes = 16;
  v1::Request big = request_with_id(3);
  big.mutable_get_slice()->mutable_orientation()->mutable_values()->Resize(100, 1.0f);
  decoded = decode(big, limits);
  EXPECT_EQ(refusal(decoded).reason, "oversized");
  EXPECT_EQ(refusal(decoded).code, StatusCode::kResourceExhausted);

  v1::Request old = request_with_id(4);
  old.set_protocol_version(0);
  old.mutable_get_status();
  decoded = decode(old);
  EXPECT_EQ(decoded.request_id, 4u);  // parsed: the id is echoed
  EXPECT_EQ(refusal(decoded).reason, "bad_protocol_version");

  decoded = decode(request_with_id(5));
  EXPECT_EQ(refusal(decoded).reason, "unknown_kind");
  EXPECT_EQ(decoded.request_id, 5u);
}

TEST(RequestCodecRejects, Orientations) {
  Random random;
  SCOPED_TRACE(random.seed);
  auto set_slice = [&](std::vector<float> values) {
    v1::Request request = request_with_id(1);
    for (float v : values)
      request.mutable_set_slice()->mutable_orientation()->add_values(v);
    request.mutable_set_slice()->set_width(10);
    request.mutable_set_slice()->set_height(10);
    return refusal(decode(request)).reason;
  };
  EXPECT_EQ(set_slice({1, 0, 0, 0, 1, 0, 0, 0}), "bad_orientation");        // 8 values
  EXPECT_EQ(set_slice({1, 0, 0, 0, 1, 0, 0, 0, 0, 0}), "bad_orientation");  // 10 values
  EXPECT_EQ(set_slice({1, 0, 0, 0, 1, 0, 0, std::nanf(""), 0}), "non_finite");
  EXPECT_EQ(set_slice({1, 0, 0, 0, std::numeric_limits<float>::infinity(), 0, 0, 0, 0}),
            "non_finite");
  EXPECT_EQ(set_slice({1, 0, 0, 2, 0, 0, 0, 0, 0}), "bad_orientation");  // parallel axes
  EXPECT_EQ(set_slice({0, 0, 0, 0, 1, 0, 0, 0, 0}), "bad_orientation");  // zero axis
  EXPECT_EQ(set_slice({1, 0, 0, 0, 1, 0, 5, 5, 5}), "ok");
}

TEST(RequestCodecRejects, SliceSizes) {
  WireLimits limits;
  limits.max_slice_side = 100;
  auto get_slice = [&](std::uint32_t w, std::uint32_t h) {
    v1::Request request = request_with_id(1);
    set_orientation({1, 0, 0, 0, 1, 0, 0, 0, 0},
                    request.mutable_get_slice()->mutable_orientation());
    request.mutable_get_slice()->set_width(w);
    request.mutable_get_slice()->set_height(h);
    return refusal(decode(request, limits));
  };
  EXPECT_EQ(get_slice(0, 10).reason, "bad_shape");
  EXPECT_EQ(get_slice(10, 0).reason, "bad_shape");
  EXPECT_EQ(get_slice(101, 10).reason, "oversized");
  EXPECT_EQ(get_slice(101, 10).code, StatusCode::kResourceExhausted);
  EXPECT_EQ(get_slice(10, 4000000000u).reason, "oversized");
  EXPECT_EQ(get_slice(100, 100).reason, "ok");
}

TEST(RequestCodecRejects, UnknownParameterEnums) {
  auto set = [&](auto&& fill) {
    v1::Request request = request_with_id(1);
    fill(*request.mutable_set_parameters());
    return refusal(decode(request)).reason;
  };
  EXPECT_EQ(set([](v1::SetParameters& p) { p.set_filter(v1::FILTER_WINDOW_UNSPECIFIED); }),
            "bad_value");
  EXPECT_EQ(set([](v1::SetParameters& p) { p.set_filter(static_cast<v1::FilterWindow>(42)); }),
            "bad_value");
  EXPECT_EQ(set([](v1::SetParameters& p) { p.set_window_mode(v1::WINDOW_MODE_UNSPECIFIED); }),
            "bad_value");
}

// Ranges belong to the pipeline (tests/pipeline/messages/parameters_test.cpp, commands_test.cpp,
// refinement_requests_test.cpp): the codec hands the values on as they came.
TEST(RequestCodec, RangesAreLeftToThePipeline) {
  v1::Request request = request_with_id(1);
  v1::SetParameters* p = request.mutable_set_parameters();
  p->set_filter_cutoff(1.5f);
  p->set_publish_rate_hz(-1);
  p->set_preview_interval_s(std::nan(""));
  p->set_rotation_axis_offset_px(1e9);
  DecodedRequest decoded = decode(request);
  ASSERT_TRUE(decoded.command.ok()) << decoded.command.error().message;
  const auto& command = std::get<SetParametersCommand>(decoded.command.value());
  EXPECT_EQ(command.filter_cutoff, std::optional<float>(1.5f));
  EXPECT_EQ(command.publish_rate_hz, std::optional<double>(-1));
  ASSERT_TRUE(command.preview_interval_s.has_value());
  EXPECT_TRUE(std::isnan(*command.preview_interval_s));
  EXPECT_EQ(command.rotation_axis_offset_px, std::optional<double>(1e9));

  v1::Request refinement = request_with_id(2);
  refinement.mutable_set_refinement()->set_enabled(true);
  refinement.mutable_set_refinement()->set_interval_s(-1);
  decoded = decode(refinement);
  ASSERT_TRUE(decoded.command.ok());
  EXPECT_EQ(std::get<SetRefinementCommand>(decoded.command.value()).interval_s, -1);
}

TEST(RequestCodec, SetRefinement) {
  v1::Request request = request_with_id(7);
  v1::SetRefinement* wire = request.mutable_set_refinement();
  wire->set_slice_id(3);
  wire->set_enabled(true);
  wire->set_iterations(12);
  wire->set_interval_s(0.5);
  DecodedRequest decoded = decode(request);
  ASSERT_TRUE(decoded.command.ok()) << decoded.command.error().message;
  const auto& command = std::get<SetRefinementCommand>(decoded.command.value());
  EXPECT_EQ(command.slice_id, 3u);
  EXPECT_TRUE(command.enabled);
  EXPECT_EQ(command.iterations, 12);
  EXPECT_EQ(command.interval_s, 0.5);
  EXPECT_EQ(command.settings, RefinementSettings{}) << "no settings: the defaults";
  // Settings: names decoded, absent fields keep their defaults, unknown names refused.
  v1::RefinementSettings* settings = wire->mutable_settings();
  settings->set_method("cgls");
  settings->set_non_negative(false);
  settings->set_stop("iterations");
  {
    const DecodedRequest decoded_settings = decode(request);
    ASSERT_TRUE(decoded_settings.command.ok()) << decoded_settings.command.error().message;
    const auto& with = std::get<SetRefinementCommand>(decoded_settings.command.value());
    EXPECT_EQ(with.settings.method, RefinementMethod::kCgls);
    EXPECT_FALSE(with.settings.regularizer.has_value());
    EXPECT_FALSE(with.settings.weight.has_value());
    EXPECT_FALSE(with.settings.non_negative);
    EXPECT_EQ(with.settings.stop, RefinementStopRule::kIterations);
    EXPECT_EQ(with.settings.discrepancy_factor, 1.0);
  }
  settings->set_method("fista");
  settings->set_regularizer("tikhonov");
  settings->set_weight(0.5);
  settings->set_discrepancy_factor(2);
  {
    const DecodedRequest decoded_settings = decode(request);
    ASSERT_TRUE(decoded_settings.command.ok()) << decoded_settings.command.error().message;
    const auto& with = std::get<SetRefinementCommand>(decoded_settings.command.value());
    EXPECT_EQ(with.settings.regularizer, std::optional(solvers::Regularizer::kTikhonov));
    EXPECT_EQ(with.settings.weight, std::optional(0.5));
    EXPECT_EQ(with.settings.discrepancy_factor, 2.0);
  }
  settings->set_regularizer("total-variation\x01");
  const DecodedRequest bad = decode(request);
  ASSERT_FALSE(bad.command.ok());
  EXPECT_EQ(bad.command.error().reason, wire_reason::kBadValue);
  EXPECT_NE(bad.command.error().message.find("tv, tikhonov, none"), std::string::npos)
      << bad.command.error().message;
  EXPECT_NE(bad.command.error().message.find("\\x01"), std::string::npos)
      << "wire strings are escaped: " << bad.command.error().message;
  wire->clear_settings();
  // The count stays an int; the pipeline refuses it against its limit.
  wire->set_iterations(4000000000u);
  EXPECT_EQ(std::get<SetRefinementCommand>(decode(request).command.value()).iterations,
            std::numeric_limits<int>::max());
}

}  // namespace
}  // namespace slicestream

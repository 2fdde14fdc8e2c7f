// Slice refinement over the wire: the real Server (in-process, CPU backend) on loopback sockets,
// a parallel-beam phantom scan streamed by a DataSender, refinement of the default axial slice
// switched on with the client library (RequestClient::set_refinement). Refused requests carry
// their code and reason and are counted; refined slices arrive on topic "refined" with their
// residuals and are closer to the phantom than the FBP slice; GetStatus reports the residuals.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "clients/common/request_client.hpp"
#include "server/server.hpp"
#include "tests/server/live_subscriber.hpp"
#include "tests/server/loopback_support.hpp"
#include "tests/server/phantom_scan.hpp"

namespace slicestream {
namespace {

using client::Publication;
using client::RequestClient;

constexpr int kSliceSize = 64;
constexpr std::uint32_t kAxial = 2;  // the default slices: 0 y-z, 1 x-z, 2 x-y

TEST(RefinementLoopback, SwitchedOnOverTheWireAndPublishedAsItsOwnStream) {
  Server server(test::loopback_config(kSliceSize), test::cpu_backend());
  server.start();
  test::LiveSubscriber live(server.slices_address());
  RequestClient requests(server.requests_address(), 20000);

  const test::PhantomScan scan = test::make_parallel_scan(5, {16, 64}, 90);
  client::DataSender sender(server.data_address());
  sender.send_scan_begin(scan.begin);
  test::send_calibration(sender, scan);
  test::wait_read(server, 3);
  server.wait_idle();  // the default slices exist now

  auto expect_refused = [&](const client::Response& response, v1::StatusCode code,
                            const std::string& reason) {
    EXPECT_EQ(response.reply.code(), code) << response.reply.message();
    EXPECT_EQ(response.reply.reason(), reason) << response.reply.message();
    EXPECT_FALSE(response.reply.message().empty());
  };
  expect_refused(requests.set_refinement(0, true, 8, 0), v1::STATUS_CODE_INVALID_ARGUMENT,
                 "not_axial");
  expect_refused(requests.set_refinement(99, true, 8, 0), v1::STATUS_CODE_NOT_FOUND,
                 "unknown_slice");
  expect_refused(requests.set_refinement(kAxial, true, 100000, 0), v1::STATUS_CODE_INVALID_ARGUMENT,
                 "too_many_iterations");
  expect_refused(requests.set_refinement(kAxial, true, 8, std::nan("")),
                 v1::STATUS_CODE_INVALID_ARGUMENT, "bad_interval");  // refused by the pipeline
  // Settings: unknown names are refused by the codec, bad values by the pipeline.
  v1::RefinementSettings settings;
  settings.set_method("sirt\n");
  expect_refused(requests.set_refinement(kAxial, true, 8, 0, &settings),
                 v1::STATUS_CODE_INVALID_ARGUMENT, "bad_value");
  settings.set_method("cgls");
  settings.set_regularizer("tv");
  expect_refused(requests.set_refinement(kAxial, true, 8, 0, &settings),
                 v1::STATUS_CODE_INVALID_ARGUMENT, "cgls_unregularized");
  settings.set_method("fista");
  settings.set_weight(20);
  expect_refused(requests.set_refinement(kAxial, true, 8, 0, &settings),
                 v1::STATUS_CODE_INVALID_ARGUMENT, "bad_weight");
  settings.set_weight(0.002);
  settings.set_discrepancy_factor(0.1);
  expect_refused(requests.set_refinement(kAxial, true, 8, 0, &settings),
                 v1::STATUS_CODE_INVALID_ARGUMENT, "bad_discrepancy_factor");
  // FISTA with TV 0.002 for all 8 iterations (no discrepancy stop), x >= 0 by default.
  settings.clear_discrepancy_factor();
  settings.set_stop("iterations");
  const client::Response on = requests.set_refinement(kAxial, true, 8, 0, &settings);
  ASSERT_TRUE(on.ok()) << on.reply.message();

  const std::uint32_t total = 90 + 45;
  test::send_projections(sender, scan, 0, total);
  v1::ScanEnd end;
  end.set_scan_id(5);
  end.set_frames_sent(total);
  sender.send_scan_end(end);
  sender.close();
  test::wait_read(server, 3 + total + 1);
  server.wait_idle();

  ASSERT_TRUE(live.wait_for([&] {
    const auto& refined = live.refined_locked();
    const auto it = refined.find(kAxial);
    return it != refined.end() &&
           it->second.header.refined().slice().projections_integrated() == total;
  })) << "no refined slice of the whole scan arrived";
  const Publication refined = *live.refined(kAxial);
  const v1::RefinedSliceHeader& header = refined.header.refined();
  EXPECT_EQ(header.slice().scan_id(), 5u);
  EXPECT_EQ(header.slice().width(), static_cast<std::uint32_t>(kSliceSize));
  EXPECT_EQ(header.iterations(), 8u);
  EXPECT_EQ(header.solver(), "cpu csr fp32");
  EXPECT_GT(header.residual_before(), 0.005);
  EXPECT_LT(header.residual_before(), 0.3);
  ASSERT_EQ(refined.values.size(), static_cast<std::size_t>(kSliceSize * kSliceSize));
  const v1::RefinementSummary& summary = header.summary();
  EXPECT_EQ(summary.method(), "fista");
  EXPECT_EQ(summary.regularizer(), "tv");
  EXPECT_DOUBLE_EQ(summary.weight(), 0.002);
  EXPECT_TRUE(summary.non_negative());
  EXPECT_EQ(summary.stop_reason(), "max_iterations");
  ASSERT_TRUE(summary.has_noise_level()) << "the scan has flat fields of photon counts";
  EXPECT_GT(summary.noise_level(), 0.0);
  EXPECT_EQ(summary.target_residual(), 0.0) << "stop=iterations aims for no level";

  const std::optional<Publication> fbp = live.slice(kAxial);
  ASSERT_TRUE(fbp.has_value());
  EXPECT_EQ(fbp->header.slice().projections_integrated(), total);
  const SliceOrientation orientation = test::orientation_of(header.slice());
  const std::vector<float> truth =
      phantom::sample(scan.phantom, slice_grid(orientation, kSliceSize, kSliceSize), 3);
  const double fbp_error = test::relative_error(fbp->values, truth);
  const double refined_error = test::relative_error(refined.values, truth);
  std::printf("residual %.4f -> %.4f, error to the phantom %.4f (FBP) -> %.4f\n",
              header.residual_before(), header.residual_after(), fbp_error, refined_error);
  EXPECT_LE(refined_error, fbp_error);

  const client::Response status = requests.get_status();
  ASSERT_TRUE(status.ok());
  const v1::StatusReport& report = status.reply.status();
  ASSERT_EQ(report.refinements_size(), 1);
  const v1::RefinementStatus& r = report.refinements(0);
  EXPECT_EQ(r.slice_id(), kAxial);
  EXPECT_EQ(r.state(), "ready");
  EXPECT_EQ(r.window_filled(), 90u);
  ASSERT_TRUE(r.has_fbp_residual());
  EXPECT_EQ(r.fbp_residual(), header.residual_before());
  EXPECT_EQ(r.refined_residual(), header.residual_after());
  EXPECT_EQ(r.projections_integrated(), total);
  EXPECT_EQ(r.settings().method(), "fista");
  EXPECT_EQ(r.settings().stop(), "iterations");
  EXPECT_DOUBLE_EQ(r.settings().weight(), 0.002);
  EXPECT_DOUBLE_EQ(r.settings().discrepancy_factor(), 1.0);
  EXPECT_EQ(r.summary().stop_reason(), summary.stop_reason());
  // Every live slice is listed with its data-consistency residual or why it has none.
  ASSERT_EQ(report.residuals_size(), 3);
  for (const v1::SliceResidual& residual : report.residuals()) {
    if (residual.slice_id() == kAxial) {
      EXPECT_EQ(residual.source(), "refinement");
      ASSERT_TRUE(residual.has_residual());
      EXPECT_EQ(residual.residual(), header.residual_before());
      EXPECT_EQ(residual.projections_integrated(), total);
      EXPECT_EQ(residual.window_size(), 90u);
    } else {
      EXPECT_EQ(residual.source(), "check");
      EXPECT_EQ(residual.state(), "unavailable");
      EXPECT_EQ(residual.reason(), "not_axial");
      EXPECT_FALSE(residual.has_residual());
    }
  }
  const std::map<std::string, std::uint64_t> refused(report.requests_refused().begin(),
                                                     report.requests_refused().end());
  const std::map<std::string, std::uint64_t> expected{
      {"not_axial", 1},         {"unknown_slice", 1}, {"too_many_iterations", 1},
      {"bad_interval", 1},      {"bad_weight", 1},    {"bad_discrepancy_factor", 1},
      {"cgls_unregularized", 1}};
  EXPECT_EQ(refused, expected);
  EXPECT_EQ(report.counters().at("requests_rejected"), 1u) << "the codec refused the method";
  EXPECT_GE(report.counters().at("refinements_run"), 1u);
  EXPECT_EQ(report.counters().at("errors"), 0u);
  EXPECT_EQ(live.errors(), 0u) << "malformed publications";
  server.stop(/*drain=*/true);
}

}  // namespace
}  // namespace slicestream

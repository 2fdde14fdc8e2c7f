// The default refinement never makes a slice worse than its FBP image, and makes it clearly
// better where views are few: a few representative cases of docs/refinement.md's table (small
// sizes, the CPU backend, through the whole pipeline; the 3D Shepp-Logan phantom's exact line
// integrals as counts, with and without Poisson noise). Plain CGLS, the refinement before bounds,
// regularisation and the discrepancy stop, is shown to be worse than FBP on a dense noisy scan,
// the case the default must not fail.
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <string>

#include "tests/pipeline/refinement_quality.hpp"

namespace slicestream {
namespace {

struct Expectation {
  test::QualityCase scan;
  double at_most;  // refined relative L2 error / FBP's
};

class RefinementQuality : public ::testing::TestWithParam<Expectation> {};

TEST_P(RefinementQuality, DefaultRefinementIsNeverWorseThanFbp) {
  const Expectation& e = GetParam();
  const test::QualityOutcome o =
      test::run_quality_case(e.scan, kDefaultRefinementIterations, RefinementSettings{});
  ASSERT_TRUE(o.ok) << o.error;
  std::printf("%s: relative L2 %.4f (FBP) -> %.4f, RMSE %.3g -> %.3g, %d iterations, %s\n",
              test::describe(e.scan).c_str(), o.fbp.relative_l2, o.refined.relative_l2, o.fbp.rmse,
              o.refined.rmse, o.refinement.iterations, o.refinement.summary.stop_reason.c_str());
  EXPECT_LT(o.refined.relative_l2, e.at_most * o.fbp.relative_l2);
  EXPECT_LT(o.refined.rmse, e.at_most * o.fbp.rmse);
  EXPECT_EQ(o.refinement.summary.method, "fista");
  if (e.scan.flat_counts > 0) {  // the noise level is known and the stop aims for it
    EXPECT_GT(o.refinement.summary.noise_level, 0.01);
    EXPECT_DOUBLE_EQ(o.refinement.summary.target_residual, o.refinement.summary.noise_level);
  }
}

test::QualityCase quality_case(bool cone, int views, double counts) {
  test::QualityCase c;
  c.cone = cone;
  c.views = views;
  c.size = 64;
  c.flat_counts = counts;
  return c;
}

// gtest prints a case (and ctest lists it) by these rather than by its bytes.
void PrintTo(const Expectation& e, std::ostream* out) {
  *out << test::describe(e.scan) << ", at most " << e.at_most << " of FBP's error";
}
std::string case_name(const ::testing::TestParamInfo<Expectation>& param_info) {
  const test::QualityCase& c = param_info.param.scan;
  std::string name = std::string(c.cone ? "Cone" : "Parallel") + std::to_string(c.views) + "Views";
  return name + (c.flat_counts > 0 ? "Poisson" + std::to_string(static_cast<int>(c.flat_counts))
                                   : std::string("Noiseless"));
}

INSTANTIATE_TEST_SUITE_P(Cases, RefinementQuality,
                         ::testing::Values(Expectation{quality_case(false, 30, 0), 0.85},
                                           Expectation{quality_case(false, 30, 2000), 0.85},
                                           Expectation{quality_case(false, 180, 0), 1.0},
                                           Expectation{quality_case(true, 30, 2000), 0.85},
                                           Expectation{quality_case(true, 360, 0), 1.0}),
                         case_name);

TEST(RefinementQuality, PlainCglsIsWorseThanFbpOnDenseNoisyData) {
  const test::QualityCase c = quality_case(false, 180, 2000);
  const test::QualityOutcome o = test::run_quality_case(c, 10, plain_cgls_settings());
  ASSERT_TRUE(o.ok) << o.error;
  std::printf("plain CGLS, %s: relative L2 %.4f (FBP) -> %.4f\n", test::describe(c).c_str(),
              o.fbp.relative_l2, o.refined.relative_l2);
  EXPECT_GT(o.refined.relative_l2, o.fbp.relative_l2);
}

}  // namespace
}  // namespace slicestream

// Refinement quality (docs/refinement.md): for parallel-beam slices and cone-beam central slices
// of the 3D Shepp-Logan phantom, sparse and dense, with and without Poisson noise, the error
// against the object (relative L2, RMSE) of the FBP slice, of the default refinement and of plain
// CGLS (the refinement before bounds, regularisation and the discrepancy stop), each through the
// in-process pipeline on the CPU backend. Prints the table and writes JSON.
//
//   refinement_quality_bench [--size 128] [--iterations N] [--weight w ...] [--json out.json]
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_report.hpp"
#include "tests/pipeline/refinement_quality.hpp"

namespace slicestream {
namespace {

std::vector<test::QualityCase> cases(int size, double noisy_counts) {
  std::vector<test::QualityCase> out;
  for (bool cone : {false, true}) {
    for (int views : {30, cone ? 360 : 180}) {
      for (double counts : {0.0, noisy_counts}) {
        test::QualityCase c;
        c.cone = cone;
        c.views = views;
        c.size = size;
        c.flat_counts = counts;
        out.push_back(c);
      }
    }
  }
  return out;
}

void add_row(bench::Report& report, const test::QualityCase& c, const std::string& method,
             const test::QualityOutcome& o) {
  bench::Row& row = report.add("quality");
  row.set("case", test::describe(c)).set("refinement", method);
  if (!o.ok) {
    row.set("error", o.error);
    return;
  }
  const RefinementSummary& s = o.refinement.summary;
  row.set("fbp_rel_l2", o.fbp.relative_l2, 4)
      .set("refined_rel_l2", o.refined.relative_l2, 4)
      .set("fbp_rmse", o.fbp.rmse * 1e3, 3)
      .set("refined_rmse", o.refined.rmse * 1e3, 3)
      .set("change_pct", 100 * (o.refined.relative_l2 / o.fbp.relative_l2 - 1), 1)
      .set("iterations", o.refinement.iterations, 0)
      .set("stop", s.stop_reason)
      .set("noise_level", s.noise_level, 4)
      .set("residual_fbp", o.refinement.residual_before, 4)
      .set("residual_refined", o.refinement.residual_after, 4)
      .set("ms", o.refinement.duration_ms, 0);
}

}  // namespace
}  // namespace slicestream

int main(int argc, char** argv) {
  using namespace slicestream;
  CLI::App app{"Refinement quality: FBP and refined slices against the analytic phantom"};
  int size = 128;
  int iterations = kDefaultRefinementIterations;
  int cgls_iterations = 10;
  double noisy_counts = 2000;
  std::vector<double> weights;
  std::string json = "refinement_quality.json";
  app.add_option("--size", size, "detector columns and slice pixels per side")
      ->check(CLI::Range(16, 1024));
  app.add_option("--iterations", iterations, "at most this many iterations (default refinement)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--cgls-iterations", cgls_iterations, "iterations of plain CGLS")
      ->check(CLI::Range(1, 1000));
  app.add_option("--counts", noisy_counts, "open-beam counts of the noisy cases")
      ->check(CLI::Range(10.0, 1e6));
  app.add_option("--weight", weights, "also run TV with these weights (tuning)");
  app.add_option("--json", json, "where the JSON goes");
  CLI11_PARSE(app, argc, argv);

  bench::Report report;
  for (const test::QualityCase& c : cases(size, noisy_counts)) {
    std::fprintf(stderr, "%s\n", test::describe(c).c_str());
    add_row(report, c, "default", test::run_quality_case(c, iterations, RefinementSettings{}));
    add_row(report, c, "cgls " + std::to_string(cgls_iterations),
            test::run_quality_case(c, cgls_iterations, plain_cgls_settings()));
    for (double w : weights) {
      RefinementSettings tv;
      tv.weight = w;
      add_row(report, c, "tv " + std::to_string(w), test::run_quality_case(c, iterations, tv));
    }
  }
  report.note("iterations", std::to_string(iterations));
  report.note("noisy_counts", std::to_string(noisy_counts));
  report.print("quality");
  report.write_json(json, "cpu");
  return 0;
}

// The host's preparation of a quasi-3D full recompute's launches (Backprojector::append: which
// path each slice takes, the tuning's resolution, the launch parameters) for the KernelKit set-ups,
// cone and parallel, without a GPU: the sources name a store of mirrored fp16 pairs with centre
// lines (the default), and nothing is enqueued. The device's facts are an H100's (132
// multiprocessors, 50 MB of L2). Prints a table; --json FILE writes the numbers.
//
//   host_prepare_bench [--reps N] [--json FILE]
#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bench_report.hpp"
#include "bench_scene.hpp"
#include "host_prepare.hpp"
#include "kernels/cuda/backprojector.hpp"
#include "kernels/cuda/launch_sequence.hpp"
#include "kernels/cuda/projection_texture_store.hpp"

namespace slicestream::bench {
namespace {

constexpr cuda::BackprojectDevice kH100{132, 50u * 1024u * 1024u};

// Stand-ins for device handles: append only copies them into the launch parameters. The slots'
// centre lines lie one after another, as in the store, so that the axial slice of a cone-beam
// window pairs its sources a quarter turn apart as the server's does.
struct FakeStore {
  explicit FakeStore(const SetupSpec& spec)
      : line_entries(cuda::centre_line_entries(spec.detector.cols)),
        centre_lines(static_cast<std::size_t>(spec.projections) * line_entries) {}

  cuda::TextureRef slot(int p) const {
    cuda::TextureRef ref;
    ref.texture = 1;
    ref.layer = p;
    ref.mirrored = true;
    ref.centre_line = centre_lines.data() + static_cast<std::size_t>(p) * line_entries;
    return ref;
  }

  std::size_t line_entries;
  std::vector<float2> centre_lines;
  float target_storage[3] = {};
};

std::vector<cuda::BackprojectJob> recompute_jobs(const SetupSpec& spec, BeamKind beam,
                                                 FakeStore& store) {
  const std::vector<ProjectionMap> maps = make_projection_maps(setup_geometry(spec, beam));
  const std::vector<GridSpec> slices = setup_slices(spec);
  std::vector<cuda::BackprojectJob> jobs;
  for (std::size_t s = 0; s < slices.size(); ++s) {
    cuda::BackprojectJob job;
    job.grid = slices[s];
    job.data = &store.target_storage[s];
    for (int p = 0; p < spec.projections; ++p)
      job.sources.push_back({maps[static_cast<std::size_t>(p)], store.slot(p), 1.0f});
    jobs.push_back(std::move(job));
  }
  return jobs;
}

void measure(const SetupSpec& spec, BeamKind beam, int reps, Report& report) {
  FakeStore store(spec);
  const std::vector<cuda::BackprojectJob> jobs = recompute_jobs(spec, beam, store);
  const cuda::Backprojector backprojector(beam, spec.detector, cuda::BackprojectTuning{32, 4, 0},
                                          kH100);
  cuda::LaunchSequence sequence;
  const int launches = backprojector.append(jobs, sequence);
  const double us = host_prepare_us(backprojector, jobs, reps);
  const double pairs = static_cast<double>(jobs.size()) * spec.projections;
  report.add("host preparation of a full recompute")
      .set("setup", spec.name)
      .set("beam", to_string(beam))
      .set("targets", static_cast<double>(jobs.size()), 0)
      .set("sources", static_cast<double>(spec.projections), 0)
      .set("launches", static_cast<double>(launches), 0)
      .set("prepare us", us, 2)
      .set("ns per source and target", 1e3 * us / pairs, 1);
}

}  // namespace
}  // namespace slicestream::bench

int main(int argc, char** argv) {
  using namespace slicestream;
  CLI::App app{"Host preparation of the backprojector's launches (no GPU needed)"};
  int reps = 2000;
  std::string json;
  app.add_option("--reps", reps, "timed repetitions per set-up")->check(CLI::PositiveNumber);
  app.add_option("--json", json, "write the results as JSON");
  CLI11_PARSE(app, argc, argv);
  bench::Report report;
  for (const bench::SetupSpec& spec : bench::kernelkit_setups()) {
    for (BeamKind beam : {BeamKind::kCone, BeamKind::kParallel})
      bench::measure(spec, beam, reps, report);
  }
  report.print("host preparation of a full recompute");
  if (!json.empty()) report.write_json(json, "host CPU (device facts of an H100)");
  return 0;
}

// CUDA backend benchmark: texture-fetch ceilings, quasi-3D full recompute for the three
// KernelKit set-ups (cone and parallel; with the host's preparation of the launches, from
// launches prepared before the timing, eagerly and replayed from a CUDA graph as KernelKit's are,
// through a graph updated every call with the host's work, the preparation alone, and with the
// store re-filled from
// device memory; a block-shape / points-per-thread search per storage: texture with fp32 or fp16
// texels, exact fp32 rows), and the incremental per-projection refresh (one by one and in batches
// of 1, 2, 4, 8, serial and as a pipeline of replacement and backprojection on two streams; from
// the filter on, with its crop fused into the store update and as a pass of its own, in batches of
// 1 and 8), and the CUDA backend's whole per-frame sequence for a stream of FleX-ray frames with
// and without CUDA graphs, and the ramp filter's two cuFFT transforms at padded widths around the
// one the filter takes. Prints tables; --json FILE writes every number.
//
//   cuda_bench [--setups flexray,highspeed,tomobank] [--reps N] [--quick] [--frames N]
//              [--json FILE]
//
// --quick skips the tuning search (a few minutes less); --frames sets the backend stream length.
//
// Inputs are random smooth projections generated on the GPU (never zeros). Times are CUDA-event
// medians after a warm-up run. GUPS = 3 * slice pixels * projections / time.
#include <cuda_profiler_api.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backend_sequence.hpp"
#include "bench/common/gpu_timer.hpp"
#include "bench_report.hpp"
#include "bench_scene.hpp"
#include "host_prepare.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/device_probe.hpp"
#include "kernels/cuda/ramp_filter_cuda.hpp"
#include "texture_ceiling.hpp"

namespace slicestream::bench {
namespace {

using cuda::BackprojectInterpolation;
using cuda::BackprojectTuning;

std::vector<BackprojectTuning> tuning_space() {
  return {{32, 4, 1}, {32, 4, 2},  {32, 4, 4}, {32, 4, 8},  {32, 4, 16}, {32, 8, 2},  {32, 8, 4},
          {32, 8, 8}, {64, 2, 4},  {64, 2, 8}, {64, 4, 2},  {16, 8, 4},  {16, 16, 2}, {128, 1, 4},
          {32, 2, 8}, {32, 2, 16}, {64, 1, 8}, {64, 1, 16}, {256, 1, 2}};
}

std::string tuning_name(const BackprojectTuning& t) {
  return std::to_string(t.block_x) + "x" + std::to_string(t.block_y) + "x" +
         std::to_string(t.points_per_thread);
}

struct Best {
  BackprojectTuning tuning;
  double kernel_ms = 0;
};

// Full recompute of the scene's three slices: sweep the tuning space, keep the fastest.
Best sweep(Scene& scene, cuda::ProjectionStorage storage, int reps, Report& report) {
  const float scale = angular_weight(scene.spec.projections);
  const BackprojectInterpolation interp = interpolation_of(storage);
  const std::vector<cuda::BackprojectJob> jobs =
      scene.full_recompute_jobs(scale, scene.store(storage));
  Best best;
  best.kernel_ms = 1e30;
  for (BackprojectTuning tuning : tuning_space()) {
    tuning.interpolation = interp;
    const cuda::Backprojector backprojector(scene.beam, scene.spec.detector, tuning);
    const double ms =
        median_ms([&](cudaStream_t s) { backprojector.run(jobs, s); }, reps, timing_stream());
    report.add("tuning search")
        .set("setup", scene.spec.name)
        .set("beam", to_string(scene.beam))
        .set("storage", cuda::to_string(storage))
        .set("block_x*block_y*points", tuning_name(tuning))
        .set("ms", ms)
        .set("GUPS", scene.samples_per_recompute() / (ms * 1e-3) / 1e9);
    if (ms < best.kernel_ms) best = {tuning, ms};
  }
  return best;
}

void full_recompute(Scene& scene, bool quick, int reps, Report& report) {
  const float scale = angular_weight(scene.spec.projections);
  const int n = scene.spec.projections;
  for (cuda::ProjectionStorage storage : kBenchStorages) {
    const BackprojectInterpolation interp = interpolation_of(storage);
    cuda::ProjectionTextureStore& store = scene.store(storage);
    const std::vector<cuda::BackprojectJob> jobs = scene.full_recompute_jobs(scale, store);
    // Re-filling every slot from device memory in place: what the "with update" time adds.
    const double refill_ms = median_ms(
        [&](cudaStream_t s) {
          for (int p = 0; p < n; ++p)
            store.write_slot(p, scene.projection(p), s);
        },
        reps, timing_stream());
    // --quick: no search, the backend's automatic tuning stands in for the best one.
    const Best best = quick ? Best{BackprojectTuning{32, 4, 0, interp}, 0.0}
                            : sweep(scene, storage, std::max(3, reps / 4), report);
    cuda::Backprojector backprojector(scene.beam, scene.spec.detector, best.tuning);
    const double kernel_ms =
        median_ms([&](cudaStream_t s) { backprojector.run(jobs, s); }, reps, timing_stream());
    // Side by side: the same tuning with the slices interleaved, and the automatic tuning the
    // backend uses (32 x 4 blocks, points per thread and interleaving automatic), with the slices
    // always and never interleaved.
    BackprojectTuning interleaved = best.tuning;
    interleaved.interleave = cuda::TargetInterleaving::kAlways;
    cuda::Backprojector interleaved_bp(scene.beam, scene.spec.detector, interleaved);
    const double interleaved_ms =
        median_ms([&](cudaStream_t s) { interleaved_bp.run(jobs, s); }, reps, timing_stream());
    const BackprojectTuning automatic{32, 4, 0, interp};
    cuda::Backprojector auto_bp(scene.beam, scene.spec.detector, automatic);
    const double auto_ms =
        median_ms([&](cudaStream_t s) { auto_bp.run(jobs, s); }, reps, timing_stream());
    // The automatic tuning with one choice changed by `change`.
    const auto auto_variant_ms = [&](const auto& change) {
      BackprojectTuning variant = automatic;
      change(variant);
      const cuda::Backprojector variant_bp(scene.beam, scene.spec.detector, variant);
      return median_ms([&](cudaStream_t s) { variant_bp.run(jobs, s); }, reps, timing_stream());
    };
    // Quarter-turn pairs' blocks all first instead of spread; each launch waiting for the previous
    // one to finish.
    const double quarter_first_ms = auto_variant_ms(
        [](BackprojectTuning& t) { t.quarter_turns = cuda::QuarterTurnPlacement::kFirst; });
    const double in_turn_ms =
        auto_variant_ms([](BackprojectTuning& t) { t.start_launches_early = false; });
    // The automatic tuning's launches prepared once and only enqueued while timed (as a CUDA
    // graph replay times KernelKit's kernels), and the host's preparation timed apart.
    cuda::LaunchSequence prepared;
    auto_bp.append(jobs, prepared);
    const double prepared_ms =
        median_ms([&](cudaStream_t s) { prepared.enqueue(s); }, reps, timing_stream());
    const double prepare_us = host_prepare_us(auto_bp, jobs, reps);
    // The prepared launches replayed from a CUDA graph, as KernelKit's are timed.
    cuda::GraphReplayer replayer;
    const double graph_ms =
        median_ms([&](cudaStream_t s) { replayer.launch(prepared, s); }, reps, timing_stream());
    // With the host's work, through a graph whose kernel parameters change every call, as a
    // slice move's recomputes do: two job sets of slightly different weights alternate, so
    // every replay first updates the graph's kernel nodes.
    std::vector<cuda::BackprojectJob> reweighted = jobs;
    for (cuda::BackprojectJob& job : reweighted) {
      for (cuda::BackprojectSource& source : job.sources)
        source.scale *= 1.0f + 1.0f / 1024.0f;
    }
    cuda::GraphReplayer updated_replayer;
    bool flip = false;
    const double graph_updated_ms = median_ms(
        [&](cudaStream_t s) {
          cuda::LaunchSequence sequence;
          auto_bp.append(flip ? reweighted : jobs, sequence);
          flip = !flip;
          updated_replayer.launch(sequence, s);
        },
        reps, timing_stream());
    const double auto_interleaved_ms = auto_variant_ms(
        [](BackprojectTuning& t) { t.interleave = cuda::TargetInterleaving::kAlways; });
    const double auto_one_by_one_ms = auto_variant_ms(
        [](BackprojectTuning& t) { t.interleave = cuda::TargetInterleaving::kNever; });
    const double update_ms = median_ms(
        [&](cudaStream_t s) {
          for (int p = 0; p < n; ++p)
            store.write_slot(p, scene.projection(p), s);
          backprojector.run(jobs, s);
        },
        reps, timing_stream());
    // Each slice alone with the automatic tuning: where a recompute's time goes.
    double slice_ms[3] = {0, 0, 0};
    for (std::size_t j = 0; j < jobs.size() && j < 3; ++j) {
      const std::vector<cuda::BackprojectJob> one = {jobs[j]};
      slice_ms[j] = median_ms([&](cudaStream_t s) { auto_bp.run(one, s); }, reps, timing_stream());
    }
    const bool cone = scene.beam == BeamKind::kCone;
    report.add("quasi-3D full recompute")
        .set("setup", scene.spec.name)
        .set("beam", to_string(scene.beam))
        .set("interpolation", to_string(interp))
        .set("storage", cuda::to_string(storage))
        .set("best tuning", tuning_name(best.tuning))
        .set("kernel ms", kernel_ms)
        .set("GUPS", scene.samples_per_recompute() / (kernel_ms * 1e-3) / 1e9)
        .set("interleaved ms", interleaved_ms)
        .set("auto 32x4 ms", auto_ms)
        .set("auto quarter turns first ms", quarter_first_ms)
        .set("auto launches in turn ms", in_turn_ms)
        .set("auto interleaved ms", auto_interleaved_ms)
        .set("auto one after another ms", auto_one_by_one_ms)
        .set("auto prepared ms", prepared_ms)
        .set("host prepare us", prepare_us)
        .set("auto graph ms", graph_ms)
        .set("auto graph updated ms", graph_updated_ms)
        .set("auto slice x ms", slice_ms[0])
        .set("auto slice y ms", slice_ms[1])
        .set("auto slice z ms", slice_ms[2])
        .set("with update ms", update_ms)
        .set("refill only ms", refill_ms)
        .set("KernelKit ms", cone ? scene.spec.kernelkit_kernel_ms : 0.0)
        .set("speed-up", cone ? scene.spec.kernelkit_kernel_ms / kernel_ms : 0.0)
        .set("prepared speed-up", cone ? scene.spec.kernelkit_kernel_ms / prepared_ms : 0.0)
        .set("graph speed-up", cone ? scene.spec.kernelkit_kernel_ms / graph_ms : 0.0)
        .set("KernelKit update ms", cone ? scene.spec.kernelkit_update_ms : 0.0)
        .set("update speed-up", cone ? scene.spec.kernelkit_update_ms / update_ms : 0.0);
  }
}

// Microseconds per frame of `enqueue(k, stream)` for k = 0, step, 2 step, ... < frames (CUDA-event
// median of `reps` runs of the whole loop, divided by `frames`).
template <class F>
double us_per_frame(int reps, int frames, int step, F&& enqueue) {
  const double ms = median_ms(
      [&](cudaStream_t s) {
        for (int k = 0; k < frames; k += step)
          enqueue(k, s);
      },
      reps, timing_stream());
  return 1e3 * ms / frames;
}

// Frames an incremental measurement replaces: up to 64 of the window's `n`, whole batches of
// `batch`.
int timed_frames(int n, int batch) {
  return std::min(n, 64) / batch * batch;
}

// The three slices as accumulating backprojection jobs, sources to be filled in.
std::vector<cuda::BackprojectJob> slice_update_jobs(Scene& scene) {
  std::vector<cuda::BackprojectJob> jobs;
  for (std::size_t s = 0; s < scene.slices.size(); ++s) {
    cuda::BackprojectJob job;
    job.grid = scene.slices[s];
    job.data = scene.targets[s].data();
    job.accumulate = true;
    jobs.push_back(std::move(job));
  }
  return jobs;
}

// One arriving projection: one pass writes it into its slot in place and leaves new - old in the
// scratch; one launch adds BP(new - old) to the three live slices. Breakdown per step, next to a
// plain copy of the projection.
void incremental(Scene& scene, cuda::ProjectionStorage storage, int reps, Report& report) {
  cuda::ProjectionTextureStore& store = scene.store(storage);
  const BackprojectTuning tuning{32, 4, 0, interpolation_of(storage)};
  const int n = scene.spec.projections;
  const int frames = std::min(n, 64);
  const float scale = angular_weight(n);
  cuda::Backprojector backprojector(scene.beam, scene.spec.detector, tuning);
  std::vector<cuda::BackprojectJob> jobs = slice_update_jobs(scene);
  auto jobs_for = [&](int slot) {
    for (auto& job : jobs) {
      job.sources = {{scene.maps[static_cast<std::size_t>(slot)], store.scratch_ref(), scale}};
    }
    return jobs;
  };
  // The "new" projection of slot k is the stored projection of slot k + 1 (different data).
  auto fresh = [&](int k) { return scene.projection((k + 1) % n); };
  auto per_frame_us = [&](auto&& enqueue_frame) {
    return us_per_frame(reps, frames, 1, enqueue_frame);
  };
  const double total_us = per_frame_us([&](int k, cudaStream_t s) {
    store.replace_slots({{k, fresh(k), cuda::ScratchContent::kDifference}}, s);
    backprojector.run(jobs_for(k), s);
  });
  const double replace_diff_us = per_frame_us([&](int k, cudaStream_t s) {
    store.replace_slots({{k, fresh(k), cuda::ScratchContent::kDifference}}, s);
  });
  const double replace_us = per_frame_us([&](int k, cudaStream_t s) {
    store.replace_slots({{k, fresh(k), cuda::ScratchContent::kUnchanged}}, s);
  });
  const double bp_us =
      per_frame_us([&](int k, cudaStream_t s) { backprojector.run(jobs_for(k), s); });
  cuda::DeviceBuffer<float> copy(scene.spec.detector.pixels());
  const double copy_us = per_frame_us([&](int k, cudaStream_t s) {
    SLICESTREAM_CUDA_CHECK(
        cudaMemcpyAsync(copy.data(), fresh(k), copy.bytes(), cudaMemcpyDeviceToDevice, s));
  });
  // Reading and writing the three fp32 slices once per projection is the floor of this path.
  const double target_bytes = 2.0 * 3.0 * scene.spec.slice_side * scene.spec.slice_side * 4.0;
  report.add("incremental refresh per projection")
      .set("setup", scene.spec.name)
      .set("beam", to_string(scene.beam))
      .set("storage", cuda::to_string(storage))
      .set("tuning", tuning_name(backprojector.resolved_tuning(jobs)))
      .set("total us", total_us)
      .set("replace+diff us", replace_diff_us)
      .set("replace us", replace_us)
      .set("plain copy us", copy_us)
      .set("BP 3 slices us", bp_us)
      .set("slice R/W MB", target_bytes / 1e6);
}

// Batched incremental refresh: k arriving projections (distinct slots) in one replacement pass
// and one backprojection launch with k sources per slice, so that the three slices are read and
// written once per k projections; per storage. GPU microseconds per projection.
// k fresh projections for slots first .. first + k - 1 of a scene, and the jobs that add their
// differences (left in scratch layers scratch .. scratch + k - 1 by the replacement) to the three
// slices.
struct BatchedUpdate {
  Scene& scene;
  cuda::ProjectionTextureStore& store;
  float scale;

  std::vector<cuda::SlotReplacement> replacements(int first, int count) const {
    const int n = scene.spec.projections;
    std::vector<cuda::SlotReplacement> batch;
    for (int i = 0; i < count; ++i) {
      batch.push_back(
          {first + i, scene.projection((first + i + 1) % n), cuda::ScratchContent::kDifference});
    }
    return batch;
  }
  std::vector<cuda::BackprojectJob> jobs(int first, int count, int scratch = 0) const {
    std::vector<cuda::BackprojectJob> jobs = slice_update_jobs(scene);
    for (cuda::BackprojectJob& job : jobs) {
      for (int i = 0; i < count; ++i) {
        job.sources.push_back({scene.maps[static_cast<std::size_t>(first + i)],
                               store.scratch_ref(scratch + i), scale});
      }
    }
    return jobs;
  }
};

// Batches of `batch` projections as a pipeline over two streams: batch b's replacement pass (on
// `replacement`) runs beside batch b - 1's backprojection (on the timing stream), the two taking
// turns with two sets of scratch layers; batch b's backprojection waits for its replacement, and
// batch b + 2's replacement for batch b's backprojection. The replacement pass is bound by DRAM,
// the backprojection by the texture unit, so that they may overlap.
template <class ReplaceBatch, class BackprojectBatch>
void enqueue_pipelined(int frames, int batch, cudaStream_t timing, cudaStream_t replacement,
                       ReplaceBatch&& replace, BackprojectBatch&& backproject) {
  cuda::Event fork;
  cuda::Event join;
  cuda::Event replaced[2];
  cuda::Event backprojected[2];
  fork.record(timing);
  fork.wait_on(replacement);
  for (int k = 0, b = 0; k < frames; k += batch, ++b) {
    const int half = b % 2;
    if (b >= 2) backprojected[half].wait_on(replacement);
    replace(k, half * batch, replacement);
    replaced[half].record(replacement);
    replaced[half].wait_on(timing);
    backproject(k, half * batch, timing);
    backprojected[half].record(timing);
  }
  join.record(replacement);
  join.wait_on(timing);
}

void incremental_batches(Scene& scene, cuda::ProjectionStorage storage, int reps, Report& report) {
  cuda::ProjectionTextureStore& store = scene.store(storage);
  const int n = scene.spec.projections;
  const int frames = timed_frames(n, kLargestBenchBatch);
  const BatchedUpdate update{scene, store, angular_weight(n)};
  const cuda::Backprojector backprojector(scene.beam, scene.spec.detector,
                                          {32, 4, 0, interpolation_of(storage)});
  auto batch_of = [&](int first, int count) { return update.replacements(first, count); };
  auto jobs_of = [&](int first, int count) { return update.jobs(first, count); };
  auto per_projection_us = [&](int batch, auto&& enqueue_batch) {
    return us_per_frame(reps, frames, batch, enqueue_batch);
  };
  // The replacement passes' stream: at the highest priority its blocks are dispatched before the
  // backprojection's waiting ones; at the default one they take their turn.
  const cuda::Stream high_priority(cuda::StreamPriority::kHighest);
  const cuda::Stream same_priority;
  auto pipelined_us = [&](int batch, const cuda::Stream& replacement) {
    const double ms = median_ms(
        [&](cudaStream_t s) {
          enqueue_pipelined(
              frames, batch, s, replacement.get(),
              [&](int k, int scratch, cudaStream_t r) {
                store.replace_slots(batch_of(k, batch), r, scratch);
              },
              [&](int k, int scratch, cudaStream_t t) {
                backprojector.run(update.jobs(k, batch, scratch), t);
              });
        },
        reps, timing_stream());
    return 1e3 * ms / frames;
  };
  for (int batch : {1, 2, 4, kMaxBenchBatch, kLargestBenchBatch}) {
    if (2 * batch > store.scratch_layers()) continue;
    const double total_us = per_projection_us(batch, [&](int k, cudaStream_t s) {
      store.replace_slots(batch_of(k, batch), s);
      backprojector.run(jobs_of(k, batch), s);
    });
    const double replace_us = per_projection_us(
        batch, [&](int k, cudaStream_t s) { store.replace_slots(batch_of(k, batch), s); });
    const double bp_us = per_projection_us(
        batch, [&](int k, cudaStream_t s) { backprojector.run(jobs_of(k, batch), s); });
    report.add("batched incremental refresh")
        .set("setup", scene.spec.name)
        .set("beam", to_string(scene.beam))
        .set("storage", cuda::to_string(storage))
        .set("batch", static_cast<double>(batch))
        .set("tuning", tuning_name(backprojector.resolved_tuning(jobs_of(0, batch))))
        .set("us per projection", total_us)
        .set("pipelined us", pipelined_us(batch, high_priority))
        .set("pipelined same priority us", pipelined_us(batch, same_priority))
        .set("replace us per projection", replace_us)
        .set("BP us per projection", bp_us)
        .set("slice R/W MB per projection",
             2.0 * 3.0 * scene.spec.slice_side * scene.spec.slice_side * 4.0 / batch / 1e6);
  }
}

// The backprojection of a batch of 8 differences into the three live slices with every tuning of
// the search space, each with and without interleaved targets: the tuning that suits a full
// recompute (hundreds of projections per voxel) need not suit eight.
void incremental_sweep(Scene& scene, cuda::ProjectionStorage storage, int reps, Report& report) {
  cuda::ProjectionTextureStore& store = scene.store(storage);
  const int n = scene.spec.projections;
  const BatchedUpdate update{scene, store, angular_weight(n)};
  std::vector<BackprojectTuning> space = {{32, 4, 0}};
  for (const BackprojectTuning& t : tuning_space())
    space.push_back(t);
  // Single projections (the detector's rate, below the GPU's) and full batches.
  for (int batch : {1, kMaxBenchBatch}) {
    const int frames = timed_frames(n, batch);
    for (BackprojectTuning tuning : space) {
      for (bool interleave : {false, true}) {
        tuning.interpolation = interpolation_of(storage);
        tuning.interleave =
            interleave ? cuda::TargetInterleaving::kAlways : cuda::TargetInterleaving::kNever;
        const cuda::Backprojector backprojector(scene.beam, scene.spec.detector, tuning);
        const double bp_us = us_per_frame(reps, frames, batch, [&](int k, cudaStream_t s) {
          backprojector.run(update.jobs(k, batch), s);
        });
        report.add("batched BP tuning search")
            .set("setup", scene.spec.name)
            .set("beam", to_string(scene.beam))
            .set("storage", cuda::to_string(storage))
            .set("batch", static_cast<double>(batch))
            .set("tuning", tuning_name(backprojector.resolved_tuning(update.jobs(0, batch))))
            .set("interleaved", interleave ? 1.0 : 0.0)
            .set("BP us per projection", bp_us);
      }
    }
  }
}

// Batches of 8 with the three live slices in one allocation, part of it kept in L2 by a persisting
// access-policy window on the timing stream and as much L2 set aside for it as the device allows
// (the replacement's and the projections' accesses lie outside it): none, the first slice, the
// first two, all three (hit ratio set-aside / window). The slices' traffic (read and written once
// per batch) is what the backprojection of a batch moves besides its texture fetches.
void slices_in_l2(Scene& scene, cuda::ProjectionStorage storage, int reps, Report& report) {
  cudaDeviceProp prop{};
  SLICESTREAM_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.persistingL2CacheMaxSize <= 0 || prop.accessPolicyMaxWindowSize <= 0) return;
  cuda::ProjectionTextureStore& store = scene.store(storage);
  const int n = scene.spec.projections;
  const int frames = timed_frames(n, kMaxBenchBatch);
  const int batch = kMaxBenchBatch;
  const BatchedUpdate update{scene, store, angular_weight(n)};
  const cuda::Backprojector backprojector(scene.beam, scene.spec.detector,
                                          {32, 4, 0, interpolation_of(storage)});
  std::size_t total = 0;
  for (const GridSpec& slice : scene.slices)
    total += slice.points();
  cuda::DeviceBuffer<float> arena(total);
  std::vector<float*> slice_data;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < scene.slices.size(); ++i) {
    slice_data.push_back(arena.data() + offset);
    SLICESTREAM_CUDA_CHECK(cudaMemcpy(slice_data.back(), scene.targets[i].data(),
                                      scene.slices[i].points() * sizeof(float),
                                      cudaMemcpyDeviceToDevice));
    offset += scene.slices[i].points();
  }
  auto jobs_of = [&](int first) {
    std::vector<cuda::BackprojectJob> jobs = update.jobs(first, batch);
    for (std::size_t i = 0; i < jobs.size(); ++i)
      jobs[i].data = slice_data[i];
    return jobs;
  };
  const cudaStream_t stream = timing_stream();
  for (std::size_t kept = 0; kept <= scene.slices.size(); ++kept) {
    std::size_t window_bytes = 0;
    for (std::size_t i = 0; i < kept; ++i)
      window_bytes += scene.slices[i].points() * sizeof(float);
    window_bytes = std::min(window_bytes, static_cast<std::size_t>(prop.accessPolicyMaxWindowSize));
    // L2 set aside for the window only: what is set aside is lost to every other access.
    const std::size_t set_aside =
        std::min(window_bytes, static_cast<std::size_t>(prop.persistingL2CacheMaxSize));
    SLICESTREAM_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, set_aside));
    cudaStreamAttrValue attribute{};
    attribute.accessPolicyWindow.base_ptr = arena.data();
    attribute.accessPolicyWindow.num_bytes = window_bytes;
    attribute.accessPolicyWindow.hitRatio =
        window_bytes == 0
            ? 0.0f
            : static_cast<float>(std::min(
                  1.0, static_cast<double>(set_aside) / static_cast<double>(window_bytes)));
    attribute.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attribute.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    SLICESTREAM_CUDA_CHECK(
        cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attribute));
    SLICESTREAM_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
    const double total_us = us_per_frame(reps, frames, batch, [&](int k, cudaStream_t s) {
      store.replace_slots(update.replacements(k, batch), s);
      backprojector.run(jobs_of(k), s);
    });
    const double bp_us = us_per_frame(
        reps, frames, batch, [&](int k, cudaStream_t s) { backprojector.run(jobs_of(k), s); });
    report.add("slices kept in L2")
        .set("setup", scene.spec.name)
        .set("beam", to_string(scene.beam))
        .set("storage", cuda::to_string(storage))
        .set("slices in the window", static_cast<double>(kept))
        .set("window MB", static_cast<double>(window_bytes) / 1e6)
        .set("set-aside MB", static_cast<double>(set_aside) / 1e6)
        .set("hit ratio", static_cast<double>(attribute.accessPolicyWindow.hitRatio))
        .set("us per projection", total_us)
        .set("BP us per projection", bp_us);
  }
  cudaStreamAttrValue off{};
  SLICESTREAM_CUDA_CHECK(
      cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &off));
  SLICESTREAM_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
  SLICESTREAM_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
}

// The incremental refresh from the filter on, per arriving projection (batches of 1 and 8, as
// the backend runs them: one filter launch per projection, one replacement pass and one
// backprojection per batch): the filter's crop in a pass of its own and the replacement reading
// the dense copy ("split": pad, R2C, gains, C2R, crop; replace; BP) against the filter's padded
// rows cropped by the replacement pass itself ("fused": pad, R2C, gains, C2R; replace with crop;
// BP), side by side in one run, and each stage alone. The filter runs as the backend's graphs.
// Each repetition filters the buffers' previous output again: times do not depend on the values.
void filtered_refresh(Scene& scene, cuda::ProjectionStorage storage, int reps, Report& report) {
  cuda::ProjectionTextureStore& store = scene.store(storage);
  const DetectorShape detector = scene.spec.detector;
  const int n = scene.spec.projections;
  const int frames = timed_frames(n, kMaxBenchBatch);
  const BatchedUpdate update{scene, store, angular_weight(n)};
  const cuda::Backprojector backprojector(scene.beam, detector,
                                          {32, 4, 0, interpolation_of(storage)});
  // Graphs for every padded buffer and the dense layout's one: none re-captured while timed.
  cuda::RampFilterCuda filter(detector, {FilterWindow::kRamLak, 1.0f}, /*use_graph=*/true,
                              kMaxBenchBatch + 1);
  const cuda::FilteredRows kLayouts[] = {cuda::FilteredRows::kDense, cuda::FilteredRows::kPadded};
  std::vector<cuda::DeviceBuffer<float>> buffers[2];  // per layout, one per batch entry
  for (int l = 0; l < 2; ++l) {
    for (int i = 0; i < kMaxBenchBatch; ++i) {
      buffers[l].emplace_back(cuda::RampFilterCuda::buffer_floats(detector, kLayouts[l]));
      SLICESTREAM_CUDA_CHECK(cudaMemcpy(buffers[l].back().data(), scene.projection(i + 1),
                                        detector.pixels() * sizeof(float),
                                        cudaMemcpyDeviceToDevice));
    }
  }
  auto filter_batch = [&](int l, int batch, cudaStream_t s) {
    for (int i = 0; i < batch; ++i)
      filter.filter(buffers[l][static_cast<std::size_t>(i)].data(), s, kLayouts[l]);
  };
  auto replace_batch = [&](int l, int first, int batch, cudaStream_t s) {
    std::vector<cuda::SlotReplacement> entries;
    for (int i = 0; i < batch; ++i) {
      entries.push_back({first + i, buffers[l][static_cast<std::size_t>(i)].data(),
                         cuda::ScratchContent::kDifference,
                         cuda::RampFilterCuda::row_pitch(detector, kLayouts[l])});
    }
    store.replace_slots(entries, s);
  };
  for (int batch : {1, kMaxBenchBatch}) {
    if (batch > store.scratch_layers()) continue;
    auto us = [&](auto&& enqueue_batch) {
      return us_per_frame(reps, frames, batch, enqueue_batch);
    };
    double total_us[2];
    double filter_us[2];
    double replace_us[2];
    for (int l = 0; l < 2; ++l) {
      total_us[l] = us([&](int k, cudaStream_t s) {
        filter_batch(l, batch, s);
        replace_batch(l, k, batch, s);
        backprojector.run(update.jobs(k, batch), s);
      });
      filter_us[l] = us([&](int, cudaStream_t s) { filter_batch(l, batch, s); });
      replace_us[l] = us([&](int k, cudaStream_t s) { replace_batch(l, k, batch, s); });
    }
    const double bp_us =
        us([&](int k, cudaStream_t s) { backprojector.run(update.jobs(k, batch), s); });
    report.add("incremental refresh from the filter")
        .set("setup", scene.spec.name)
        .set("beam", to_string(scene.beam))
        .set("storage", cuda::to_string(storage))
        .set("batch", static_cast<double>(batch))
        .set("padded width", static_cast<double>(filter.padded_width()))
        .set("split us", total_us[0])
        .set("fused us", total_us[1])
        .set("split / fused", total_us[0] / total_us[1])
        .set("fused minus filter us", total_us[1] - filter_us[1])
        .set("filter+crop us", filter_us[0])
        .set("filter padded us", filter_us[1])
        .set("replace us", replace_us[0])
        .set("replace+crop us", replace_us[1])
        .set("BP us", bp_us);
  }
}

// The ramp filter's two transforms (batched R2C and C2R over the detector's rows, cuFFT) at
// padded widths around padded_filter_width's choice: the smallest 7-smooth width >= 2 cols, the
// next power of two, and 2^k x 3 and 2^k x 5 sizes between them. Why the filter pads as it does.
void filter_transforms_by_width(const SetupSpec& spec, int reps, Report& report) {
  const int rows = spec.detector.rows;
  const int smooth = static_cast<int>(next_smooth_size(2 * spec.detector.cols));
  const int power_of_two = static_cast<int>(next_power_of_two(2 * spec.detector.cols));
  std::vector<int> widths = {smooth, power_of_two};
  for (int factor : {3, 5}) {
    for (int w = factor; w < power_of_two; w *= 2) {
      if (w > smooth) widths.push_back(w);
    }
  }
  std::sort(widths.begin(), widths.end());
  widths.erase(std::unique(widths.begin(), widths.end()), widths.end());
  for (int width : widths) {
    const int bins = width / 2 + 1;
    cuda::DeviceBuffer<float> real(static_cast<std::size_t>(rows) *
                                   static_cast<std::size_t>(width));
    cuda::DeviceBuffer<float2> spectrum(static_cast<std::size_t>(rows) *
                                        static_cast<std::size_t>(bins));
    fill_smooth_random(real.data(), {rows, width}, 7, nullptr);
    cuda::CufftPlan forward;
    cuda::CufftPlan inverse;
    forward.make(width, width, bins, CUFFT_R2C, rows);
    inverse.make(width, bins, width, CUFFT_C2R, rows);
    const double ms = median_ms(
        [&](cudaStream_t s) {
          SLICESTREAM_CUFFT_CHECK(cufftSetStream(forward.get(), s));
          SLICESTREAM_CUFFT_CHECK(cufftSetStream(inverse.get(), s));
          auto* complex = reinterpret_cast<cufftComplex*>(spectrum.data());
          SLICESTREAM_CUFFT_CHECK(cufftExecR2C(forward.get(), real.data(), complex));
          SLICESTREAM_CUFFT_CHECK(cufftExecC2R(inverse.get(), complex, real.data()));
        },
        reps, timing_stream());
    report.add("filter transforms by padded width")
        .set("setup", spec.name)
        .set("rows", static_cast<double>(rows))
        .set("cols", static_cast<double>(spec.detector.cols))
        .set("padded width", static_cast<double>(width))
        .set("chosen", width == padded_filter_width(spec.detector.cols) ? 1.0 : 0.0)
        .set("R2C + C2R us", 1e3 * ms)
        .set("ns per padded value", 1e6 * ms / (static_cast<double>(rows) * width));
  }
}

// Runs `work` twice on `stream`: a warm-up, then between cudaProfilerStart/Stop (ncu
// --profile-from-start off captures the warm run only).
void profile_warm(const std::function<void(cudaStream_t)>& work, cuda::Stream& stream) {
  for (int run = 0; run < 2; ++run) {
    if (run == 1) SLICESTREAM_CUDA_CHECK(cudaProfilerStart());
    work(stream.get());
    stream.synchronize();
    if (run == 1) SLICESTREAM_CUDA_CHECK(cudaProfilerStop());
  }
}

// For a profiler (ncu): one batched incremental update of `batch` projections (the backend's
// default storage), warm (profile_warm).
void profile_batched(Scene& scene, int batch) {
  for (const cuda::ProjectionStorage storage :
       {cuda::ProjectionStorage::kTextureHalf, cuda::ProjectionStorage::kTextureHalfMirrored}) {
    const BatchedUpdate update{scene, scene.store(storage), angular_weight(scene.spec.projections)};
    const cuda::Backprojector backprojector(scene.beam, scene.spec.detector,
                                            {32, 4, 0, interpolation_of(storage)});
    cuda::Stream stream;
    profile_warm(
        [&](cudaStream_t s) {
          scene.store(storage).replace_slots(update.replacements(0, batch), s);
          backprojector.run(update.jobs(0, batch), s);
        },
        stream);
    std::printf("profiled: %s %s, %s, batch %d\n", scene.spec.name.c_str(), to_string(scene.beam),
                cuda::to_string(storage), batch);
  }
}

// For a profiler (ncu): the full recompute of the three slices with the automatic tuning and the
// default storage, and then each slice alone, each warm (profile_warm).
void profile_recompute(Scene& scene) {
  const cuda::ProjectionStorage storage = cuda::ProjectionStorage::kTextureHalfMirrored;
  const std::vector<cuda::BackprojectJob> jobs =
      scene.full_recompute_jobs(angular_weight(scene.spec.projections), scene.store(storage));
  const cuda::Backprojector backprojector(scene.beam, scene.spec.detector,
                                          {32, 4, 0, interpolation_of(storage)});
  cuda::Stream stream;
  std::vector<std::vector<cuda::BackprojectJob>> runs = {jobs};
  for (const cuda::BackprojectJob& job : jobs)
    runs.push_back({job});
  for (const auto& run : runs)
    profile_warm([&](cudaStream_t s) { backprojector.run(run, s); }, stream);
  std::printf("profiled: %s %s full recompute, then each slice alone\n", scene.spec.name.c_str(),
              to_string(scene.beam));
}

int run(int argc, char** argv) {
  CLI::App app{"CUDA backend benchmark"};
  std::string setups_arg = "flexray,highspeed,tomobank";
  std::string json_path = "cuda_bench.json";
  int reps = 20;
  int frames = 200;
  bool quick = false;
  bool incremental_tuning = false;
  bool l2_study = false;
  app.add_option("--setups", setups_arg, "comma-separated: flexray, highspeed, tomobank");
  app.add_option("--reps", reps, "timed repetitions per measurement (median)");
  app.add_flag("--quick", quick, "skip the tuning search (automatic tuning only)");
  app.add_flag("--incremental-tuning", incremental_tuning,
               "also search the tuning of the incremental backprojection, batches of 1 and 8 (fp16 "
               "texels and mirrored pairs)");
  app.add_flag("--slices-in-l2", l2_study,
               "also measure batches of 8 with the live slices kept in L2 (fp16 texels; sets the "
               "device's persisting-L2 limit while it runs)");
  app.add_option("--frames", frames, "frames of the backend per-frame sequence (FleX-ray)");
  app.add_option("--json", json_path, "where to write the JSON results");
  int profile_batch = 0;
  app.add_option("--profile-batch", profile_batch,
                 "only run one batched incremental update of this many projections per cone "
                 "set-up, twice (for ncu: the second launches are the warm ones)")
      ->check(CLI::Range(1, kMaxBenchBatch));
  bool profile_full = false;
  app.add_flag("--profile-recompute", profile_full,
               "only run the full recompute and each slice alone once per cone set-up, warm (for "
               "ncu --profile-from-start off)");
  CLI11_PARSE(app, argc, argv);

  const std::string reason = cuda::device_unavailable_reason(0);
  if (!reason.empty()) {
    std::fprintf(stderr, "cuda_bench: no usable GPU: %s\n", reason.c_str());
    return 2;
  }
  const cuda::DeviceSummary device = cuda::describe_device(0);
  std::printf("device: %s, %d SMs, compute %d.%d, %.1f GiB\n", device.name.c_str(),
              device.multiprocessors, device.compute_major, device.compute_minor,
              static_cast<double>(device.memory_total_bytes) / (1 << 30));
  if (profile_full || profile_batch > 0) {
    for (const SetupSpec& spec : kernelkit_setups()) {
      if (setups_arg.find(spec.name) == std::string::npos) continue;
      std::unique_ptr<Scene> scene = make_scene(spec, BeamKind::kCone);
      if (profile_full) {
        profile_recompute(*scene);
      } else {
        profile_batched(*scene, profile_batch);
      }
    }
    return 0;
  }
  Report report;
  for (const CeilingResult& c : measure_ceilings()) {
    report.add("ceilings").set("what", c.what).set("per second", c.per_second).set("unit", c.unit);
  }
  report.print("ceilings");

  std::vector<std::pair<std::string, BeamKind>> done;
  for (const SetupSpec& spec : kernelkit_setups()) {
    if (setups_arg.find(spec.name) == std::string::npos) continue;
    for (BeamKind beam : {BeamKind::kCone, BeamKind::kParallel}) {
      std::unique_ptr<Scene> scene = make_scene(spec, beam);
      full_recompute(*scene, quick, reps, report);
      for (cuda::ProjectionStorage storage : kBenchStorages) {
        incremental(*scene, storage, std::max(3, reps / 4), report);
        incremental_batches(*scene, storage, std::max(3, reps / 4), report);
        filtered_refresh(*scene, storage, std::max(3, reps / 4), report);
      }
      if (l2_study) {
        slices_in_l2(*scene, cuda::ProjectionStorage::kTextureHalf, std::max(3, reps / 4), report);
      }
      if (incremental_tuning) {
        for (cuda::ProjectionStorage storage :
             {cuda::ProjectionStorage::kTextureHalf, cuda::ProjectionStorage::kTextureHalfMirrored})
          incremental_sweep(*scene, storage, std::max(3, reps / 4), report);
      }
      // Partial results survive a time limit: the JSON so far, and a line per scene.
      report.write_json(json_path, device.name);
      std::printf("done: %s %s\n", spec.name.c_str(), to_string(beam));
      std::fflush(stdout);
    }
  }
  for (const SetupSpec& spec : kernelkit_setups()) {
    if (setups_arg.find(spec.name) == std::string::npos) continue;
    filter_transforms_by_width(spec, reps, report);
  }
  for (const SetupSpec& spec : kernelkit_setups()) {
    if (spec.name != "flexray" || setups_arg.find(spec.name) == std::string::npos) continue;
    backend_sequence(spec, std::max(1, frames), report);
    report.write_json(json_path, device.name);
    std::printf("done: backend per-frame sequence (%s)\n", spec.name.c_str());
    std::fflush(stdout);
  }
  report.print("tuning search");
  report.print("quasi-3D full recompute");
  report.print("incremental refresh per projection");
  report.print("batched incremental refresh");
  report.print("incremental refresh from the filter");
  report.print("slices kept in L2");
  report.print("batched BP tuning search");
  report.print("backend per-frame sequence");
  report.print("filter transforms by padded width");
  report.write_json(json_path, device.name);
  std::printf("\nJSON: %s\n", json_path.c_str());
  return 0;
}

}  // namespace
}  // namespace slicestream::bench

int main(int argc, char** argv) {
  try {
    return slicestream::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_bench: %s\n", e.what());
    return 1;
  }
}

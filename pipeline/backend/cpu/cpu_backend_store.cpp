// CpuBackend's projection store and backprojection: store updates as the shared update plan
// (update_plan.hpp) lays them out, backprojection of stored slots over plane ranges, targets.
#include <algorithm>
#include <cstring>
#include <string>

#include "pipeline/backend/cpu/cpu_backend_impl.hpp"

namespace slicestream {
namespace {

// Work per backprojection task (points x projections): big enough to amortise the hand-off,
// small enough that three slices still split into many tasks for the workers.
constexpr std::size_t kSamplesPerTask = std::size_t{1} << 17;

CpuTarget& cpu_target(ReconTarget& target) {
  auto* cpu = dynamic_cast<CpuTarget*>(&target);
  if (cpu == nullptr) throw BackendError("cpu backend: reconstruction target of another backend");
  return *cpu;
}

const CpuTarget& cpu_target(const ReconTarget& target) {
  const auto* cpu = dynamic_cast<const CpuTarget*>(&target);
  if (cpu == nullptr) throw BackendError("cpu backend: reconstruction target of another backend");
  return *cpu;
}

}  // namespace

CpuProjection& cpu_projection(ProjectionBuffer& buffer) {
  auto* projection = dynamic_cast<CpuProjection*>(&buffer);
  if (projection == nullptr)
    throw BackendError("cpu backend: projection buffer of another backend");
  return *projection;
}

void CpuBackend::Impl::run_backprojection(const std::vector<BackprojectionJob>& jobs) {
  struct Task {
    const BackprojectionJob* job;
    int plane;
    int row_begin;
    int row_end;
  };
  std::vector<Task> tasks;
  for (const BackprojectionJob& job : jobs) {
    if (job.count == 0) continue;
    const GridSpec& grid = job.target->grid();
    const std::size_t row_samples =
        static_cast<std::size_t>(grid.width) * static_cast<std::size_t>(job.count);
    // Rows per task: about kSamplesPerTask of work, and at least 8 tasks per plane.
    const int by_work = static_cast<int>(std::max<std::size_t>(1, kSamplesPerTask / row_samples));
    const int rows_per_task = std::max(1, std::min(by_work, grid.height / 8));
    for (int plane = job.plane_begin; plane < job.plane_end; ++plane) {
      for (int row = 0; row < grid.height; row += rows_per_task) {
        tasks.push_back({&job, plane, row, std::min(grid.height, row + rows_per_task)});
      }
    }
  }
  const DetectorShape detector = setup.geometry.detector;
  workers.parallel_for(tasks.size(), 1, [&](std::size_t begin, std::size_t end, int) {
    for (std::size_t i = begin; i < end; ++i) {
      const Task& task = tasks[i];
      const BackprojectionJob& job = *task.job;
      cpu::backproject_rows(job.target->grid(), detector, job.refs, job.count, job.scale,
                            job.target->values.data(), task.plane, task.row_begin, task.row_end);
    }
  });
}

void CpuBackend::replace_projections(std::vector<ProjectionUpdate>& updates, float scale) {
  Impl& m = *impl_;
  m.require_scan("replace_projection");
  const UpdatePlan plan = plan_updates(updates, m.slots, m.max_run());
  for (const UpdateRun& run : plan.runs)
    m.apply_run(run, updates, scale);
  if (!plan.refusal.empty()) throw BackendError(plan.refusal);
}

void CpuBackend::Impl::apply_run(const UpdateRun& run, std::vector<ProjectionUpdate>& updates,
                                 float scale) {
  // Everything is checked before anything changes.
  for (const PlannedUpdate& planned : run.updates) {
    if (cpu_projection(*updates[planned.index].projection).values.size() !=
        setup.geometry.detector.pixels()) {
      throw BackendError("cpu backend: projection of another scan's detector size");
    }
  }
  for (const PlannedTarget& planned : run.targets)
    (void)cpu_target(*planned.target);

  // A difference new - old is computed in place in the old buffer (released when the new
  // projection is stored); slots of a run are distinct, so each old buffer is its own.
  const std::size_t count = run.updates.size();
  std::vector<std::unique_ptr<ProjectionBuffer>> fresh(count);
  for (std::size_t k = 0; k < count; ++k) {
    const PlannedUpdate& planned = run.updates[k];
    fresh[k] = std::move(updates[planned.index].projection);
    if (planned.live == LiveUpdate::kDifference) {
      subtract_in_place(cpu_projection(*fresh[k]).values,
                        stored[static_cast<std::size_t>(planned.slot)]->values);
    }
  }

  // One job per target with every projection of the run that reaches it.
  std::vector<std::vector<cpu::ProjectionRef>> refs(run.targets.size());
  std::vector<BackprojectionJob> jobs;
  for (std::size_t t = 0; t < run.targets.size(); ++t) {
    for (const PlannedSource& source : run.targets[t].sources) {
      const PlannedUpdate& planned = run.updates[source.update];
      const ProjectionMap& map = updates[planned.index].map;
      const float* old_values = source.kind == SourceKind::kNew
                                    ? nullptr
                                    : stored[static_cast<std::size_t>(planned.slot)]->values.data();
      switch (source.kind) {
        case SourceKind::kNew:
          refs[t].push_back({cpu_projection(*fresh[source.update]).values.data(), map});
          break;
        case SourceKind::kDifference:
          refs[t].push_back({old_values, map});
          break;
        case SourceKind::kOld: {
          ProjectionMap negated = planned.old_map;  // -BP(old): the weight carries the sign
          negated.weight = -negated.weight;
          refs[t].push_back({old_values, negated});
          break;
        }
      }
    }
    CpuTarget& target = cpu_target(*run.targets[t].target);
    jobs.push_back(
        {&target, refs[t].data(), static_cast<int>(refs[t].size()), scale, 0, target.grid().depth});
  }
  try {
    run_backprojection(jobs);
  } catch (...) {
    // A slot holding a difference instead of its projection must not be read again.
    for (const PlannedUpdate& planned : run.updates) {
      if (planned.live == LiveUpdate::kDifference) slots.forget(planned.slot);
    }
    throw;
  }

  for (std::size_t k = 0; k < count; ++k) {
    const PlannedUpdate& planned = run.updates[k];
    ProjectionUpdate& u = updates[planned.index];
    stored[static_cast<std::size_t>(planned.slot)].reset(
        static_cast<CpuProjection*>(fresh[k].release()));  // checked above
    slots.store(planned.slot, u.map);
    u.applied = true;
  }
}

void CpuBackend::Impl::subtract_in_place(const std::vector<float>& minuend,
                                         std::vector<float>& values) {
  float* out = values.data();
  const float* from = minuend.data();
  const std::size_t pixels = values.size();
  workers.parallel_for(pixels, std::max<std::size_t>(pixels / 8, 4096),
                       [&](std::size_t b, std::size_t e, int) {
                         for (std::size_t i = b; i < e; ++i)
                           out[i] = from[i] - out[i];
                       });
}

void CpuBackend::backproject_store(const std::vector<int>& slots, ReconTarget& target, float scale,
                                   bool accumulate, int plane_begin, int plane_end) {
  Impl& m = *impl_;
  m.require_scan("backproject_store");
  CpuTarget& t = cpu_target(target);
  const GridSpec& grid = t.grid();
  check_plane_range(kCpuOwner, grid.depth, plane_begin, plane_end);
  std::vector<cpu::ProjectionRef> refs;
  for (int slot : m.slots.filled_of(slots))
    refs.push_back({m.stored[static_cast<std::size_t>(slot)]->values.data(), m.slots.map(slot)});
  if (!accumulate) {
    const std::size_t plane_points =
        static_cast<std::size_t>(grid.width) * static_cast<std::size_t>(grid.height);
    std::fill(t.values.begin() + static_cast<std::ptrdiff_t>(plane_points * plane_begin),
              t.values.begin() + static_cast<std::ptrdiff_t>(plane_points * plane_end), 0.0f);
  }
  m.run_backprojection(
      {{&t, refs.data(), static_cast<int>(refs.size()), scale, plane_begin, plane_end}});
}

void CpuBackend::set_slot_maps(const std::vector<ProjectionMap>& maps) {
  Impl& m = *impl_;
  m.require_scan("set_slot_maps");
  m.slots.set_maps(maps);
}

void CpuBackend::clear_target(ReconTarget& target) {
  CpuTarget& t = cpu_target(target);
  std::fill(t.values.begin(), t.values.end(), 0.0f);
}

void CpuBackend::copy_target(const ReconTarget& from, ReconTarget& to) {
  const CpuTarget& source = cpu_target(from);
  CpuTarget& destination = cpu_target(to);
  if (source.values.size() != destination.values.size()) {
    throw BackendError("cpu backend: copy_target between grids of different sizes");
  }
  destination.values = source.values;
}

void CpuBackend::read_target(const ReconTarget& target, float* host) {
  const CpuTarget& t = cpu_target(target);
  std::memcpy(host, t.values.data(), t.values.size() * sizeof(float));
}

}  // namespace slicestream

// CpuBackend's projection store and backprojection: +BP(new) - BP(old) updates, the
// accumulate list, backprojection of stored slots over plane ranges, targets.
#include <algorithm>
#include <cstring>
#include <string>

#include "pipeline/backend/cpu/cpu_backend_impl.hpp"

namespace slicestream {
namespace {

// Work per backprojection task (points x projections): big enough to amortise the hand-off,
// small enough that three slices still split into many tasks for the workers.
constexpr std::size_t kSamplesPerTask = std::size_t{1} << 17;

bool same_map(const ProjectionMap& a, const ProjectionMap& b) {
  return std::memcmp(&a, &b, sizeof(ProjectionMap)) == 0;
}

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
  // Runs of distinct slots are fused: every target is read and written once per run.
  for (std::size_t begin = 0; begin < updates.size();) {
    const std::size_t count = distinct_slot_run(updates, begin, updates.size());
    m.replace_run(updates, begin, count, scale);
    begin += count;
  }
}

void CpuBackend::Impl::replace_run(std::vector<ProjectionUpdate>& updates, std::size_t begin,
                                   std::size_t count, float scale) {
  // Everything is checked before anything changes.
  for (std::size_t i = begin; i < begin + count; ++i) {
    const ProjectionUpdate& u = updates[i];
    if (u.slot < 0 || static_cast<std::size_t>(u.slot) >= slots.size()) {
      throw BackendError("cpu backend: slot " + std::to_string(u.slot) + " outside the window of " +
                         std::to_string(slots.size()));
    }
    if (!u.projection) throw BackendError("cpu backend: replace_projection without a projection");
    if (cpu_projection(*u.projection).values.size() != setup.geometry.detector.pixels()) {
      throw BackendError("cpu backend: projection of another scan's detector size");
    }
    for (const auto* list : {&u.live, &u.accumulate}) {
      for (ReconTarget* target : *list) {
        if (target == nullptr) throw BackendError("cpu backend: null reconstruction target");
        (void)cpu_target(*target);
      }
    }
  }

  // Per update: live targets get +BP(new) - BP(old). With an unchanged map that is one
  // backprojection of the difference, computed in place in the old buffer (released when the
  // new projection is stored). Slots of a run are distinct, so each old buffer is its own.
  std::vector<std::unique_ptr<ProjectionBuffer>> fresh(count);
  std::vector<std::vector<cpu::ProjectionRef>> live_refs(count);
  std::vector<bool> differenced(count, false);
  for (std::size_t k = 0; k < count; ++k) {
    ProjectionUpdate& u = updates[begin + k];
    fresh[k] = std::move(u.projection);
    const CpuProjection& projection = cpu_projection(*fresh[k]);
    StoreSlot& stored = slots[static_cast<std::size_t>(u.slot)];
    if (u.live.empty()) continue;
    if (stored.filled && same_map(stored.map, u.map)) {
      float* old_values = stored.projection->values.data();
      const float* new_values = projection.values.data();
      const std::size_t pixels = projection.values.size();
      workers.parallel_for(pixels, std::max<std::size_t>(pixels / 8, 4096),
                           [&](std::size_t b, std::size_t e, int) {
                             for (std::size_t i = b; i < e; ++i) {
                               old_values[i] = new_values[i] - old_values[i];
                             }
                           });
      differenced[k] = true;
      live_refs[k].push_back({old_values, u.map});
    } else {
      live_refs[k].push_back({projection.values.data(), u.map});
      if (stored.filled) {
        ProjectionMap negated = stored.map;  // -BP(old): the weight carries the sign
        negated.weight = -negated.weight;
        live_refs[k].push_back({stored.projection->values.data(), negated});
      }
    }
  }

  // One job per target with every projection of the run that reaches it.
  std::vector<CpuTarget*> targets;
  std::vector<std::vector<cpu::ProjectionRef>> refs;
  auto refs_of = [&](ReconTarget* target) -> std::vector<cpu::ProjectionRef>& {
    CpuTarget* t = &cpu_target(*target);
    const auto it = std::find(targets.begin(), targets.end(), t);
    if (it != targets.end()) return refs[static_cast<std::size_t>(it - targets.begin())];
    targets.push_back(t);
    refs.emplace_back();
    return refs.back();
  };
  for (std::size_t k = 0; k < count; ++k) {
    const ProjectionUpdate& u = updates[begin + k];
    for (ReconTarget* target : u.live) {
      std::vector<cpu::ProjectionRef>& r = refs_of(target);
      r.insert(r.end(), live_refs[k].begin(), live_refs[k].end());
    }
    for (ReconTarget* target : u.accumulate) {
      refs_of(target).push_back({cpu_projection(*fresh[k]).values.data(), u.map});
    }
  }
  std::vector<BackprojectionJob> jobs;
  for (std::size_t t = 0; t < targets.size(); ++t) {
    jobs.push_back({targets[t], refs[t].data(), static_cast<int>(refs[t].size()), scale, 0,
                    targets[t]->grid().depth});
  }
  try {
    run_backprojection(jobs);
  } catch (...) {
    // A slot holding a difference instead of its projection must not be read again.
    for (std::size_t k = 0; k < count; ++k) {
      if (differenced[k]) slots[static_cast<std::size_t>(updates[begin + k].slot)].filled = false;
    }
    throw;
  }

  for (std::size_t k = 0; k < count; ++k) {
    ProjectionUpdate& u = updates[begin + k];
    StoreSlot& stored = slots[static_cast<std::size_t>(u.slot)];
    stored.projection.reset(static_cast<CpuProjection*>(fresh[k].release()));  // checked above
    stored.map = u.map;
    stored.filled = true;
    u.applied = true;
  }
}

void CpuBackend::backproject_store(const std::vector<int>& slots, ReconTarget& target, float scale,
                                   bool accumulate, int plane_begin, int plane_end) {
  Impl& m = *impl_;
  m.require_scan("backproject_store");
  CpuTarget& t = cpu_target(target);
  const GridSpec& grid = t.grid();
  if (plane_begin < 0 || plane_end > grid.depth || plane_begin > plane_end) {
    throw BackendError("cpu backend: plane range [" + std::to_string(plane_begin) + ", " +
                       std::to_string(plane_end) + ") outside a target of depth " +
                       std::to_string(grid.depth));
  }
  std::vector<cpu::ProjectionRef> refs;
  refs.reserve(slots.size());
  for (int slot : slots) {
    if (slot < 0 || static_cast<std::size_t>(slot) >= m.slots.size()) {
      throw BackendError("cpu backend: slot " + std::to_string(slot) + " outside the window");
    }
    const StoreSlot& stored = m.slots[static_cast<std::size_t>(slot)];
    if (stored.filled) refs.push_back({stored.projection->values.data(), stored.map});
  }
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
  if (maps.size() != m.slots.size()) {
    throw BackendError("cpu backend: set_slot_maps got " + std::to_string(maps.size()) +
                       " maps for " + std::to_string(m.slots.size()) + " slots");
  }
  for (std::size_t i = 0; i < maps.size(); ++i)
    m.slots[i].map = maps[i];
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

// CpuBackend's projection store and backprojection: +BP(new) - BP(old) updates, the
// accumulate list, backprojection of stored slots over plane ranges, targets.
#include <algorithm>
#include <cstring>
#include <string>

#include "pipeline/cpu_backend_impl.hpp"

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

void CpuBackend::replace_projection(int slot, const ProjectionMap& map,
                                    std::unique_ptr<ProjectionBuffer> projection,
                                    const std::vector<ReconTarget*>& live,
                                    const std::vector<ReconTarget*>& accumulate, float scale) {
  Impl& m = *impl_;
  m.require_scan("replace_projection");
  if (slot < 0 || static_cast<std::size_t>(slot) >= m.slots.size()) {
    throw BackendError("cpu backend: slot " + std::to_string(slot) + " outside the window of " +
                       std::to_string(m.slots.size()));
  }
  if (!projection) throw BackendError("cpu backend: replace_projection without a projection");
  CpuProjection& fresh = cpu_projection(*projection);
  if (fresh.values.size() != m.setup.geometry.detector.pixels()) {
    throw BackendError("cpu backend: projection of another scan's detector size");
  }
  StoreSlot& stored = m.slots[static_cast<std::size_t>(slot)];

  // Live targets get +BP(new) - BP(old). With an unchanged map that is one backprojection of the
  // difference, computed in place in the old buffer (which is released afterwards).
  std::vector<cpu::ProjectionRef> live_refs;
  if (!live.empty()) {
    if (stored.filled && same_map(stored.map, map)) {
      float* old_values = stored.projection->values.data();
      const float* new_values = fresh.values.data();
      const std::size_t pixels = fresh.values.size();
      m.workers.parallel_for(pixels, std::max<std::size_t>(pixels / 8, 4096),
                             [&](std::size_t begin, std::size_t end, int) {
                               for (std::size_t i = begin; i < end; ++i) {
                                 old_values[i] = new_values[i] - old_values[i];
                               }
                             });
      live_refs.push_back({old_values, map});
    } else {
      live_refs.push_back({fresh.values.data(), map});
      if (stored.filled) {
        ProjectionMap negated = stored.map;  // -BP(old): the weight carries the sign
        negated.weight = -negated.weight;
        live_refs.push_back({stored.projection->values.data(), negated});
      }
    }
  }
  const cpu::ProjectionRef new_ref{fresh.values.data(), map};
  std::vector<BackprojectionJob> jobs;
  for (ReconTarget* target : live) {
    CpuTarget& t = cpu_target(*target);
    jobs.push_back(
        {&t, live_refs.data(), static_cast<int>(live_refs.size()), scale, 0, t.grid().depth});
  }
  for (ReconTarget* target : accumulate) {
    CpuTarget& t = cpu_target(*target);
    jobs.push_back({&t, &new_ref, 1, scale, 0, t.grid().depth});
  }
  m.run_backprojection(jobs);

  std::unique_ptr<ProjectionBuffer> owned = std::move(projection);
  stored.projection.reset(static_cast<CpuProjection*>(owned.release()));  // checked above
  stored.map = map;
  stored.filled = true;
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

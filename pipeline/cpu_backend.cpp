#include "pipeline/cpu_backend.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <sstream>
#include <string>

#include "kernels/cpu/backproject_cpu.hpp"
#include "kernels/cpu/preprocess_cpu.hpp"
#include "kernels/cpu/ramp_filter_cpu.hpp"
#include "pipeline/cpu_buffers.hpp"
#include "pipeline/worker_pool.hpp"

namespace slicestream {
namespace {

// Work per backprojection task (points x projections): big enough to amortise the hand-off,
// small enough that three slices still split into many tasks for the workers.
constexpr std::size_t kSamplesPerTask = std::size_t{1} << 17;
// Free projection buffers kept for reuse (the pipeline's queues bound how many are in flight).
constexpr std::size_t kMaxFreeProjections = 32;

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

std::size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size);
}

std::string mib(std::size_t bytes) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return out.str();
}

bool same_map(const ProjectionMap& a, const ProjectionMap& b) {
  return std::memcmp(&a, &b, sizeof(ProjectionMap)) == 0;
}

CpuProjection& cpu_projection(ProjectionBuffer& buffer) {
  auto* projection = dynamic_cast<CpuProjection*>(&buffer);
  if (projection == nullptr)
    throw BackendError("cpu backend: projection buffer of another backend");
  return *projection;
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

struct Slot {
  std::unique_ptr<CpuProjection> projection;
  ProjectionMap map{};
  bool filled = false;
};

// One target updated from a list of projections over a plane range.
struct BackprojectionJob {
  CpuTarget* target;
  const cpu::ProjectionRef* refs;
  int count;
  float scale;
  int plane_begin;
  int plane_end;
};

}  // namespace

struct CpuBackend::Impl {
  explicit Impl(const CpuBackendOptions& options)
      : workers(options.threads),
        memory_total(physical_memory_bytes()),
        memory_limit(options.memory_limit_bytes > 0 ? options.memory_limit_bytes
                                                    : memory_total / 4 * 3),
        device(cpu_model_name()) {}

  WorkerPool workers;
  const std::size_t memory_total;
  const std::size_t memory_limit;
  const std::string device;
  std::shared_ptr<std::atomic<std::size_t>> target_bytes =
      std::make_shared<std::atomic<std::size_t>>(0);

  // Scan state: written by begin_scan/end_scan while the stages are idle.
  bool scan_active = false;
  ScanSetup setup;
  std::size_t scan_bytes = 0;
  std::shared_ptr<ProjectionPool> projections;
  std::vector<Slot> slots;

  // Swapped by the reconstruct thread while preprocess/filter threads may read them.
  mutable std::mutex swap_mutex;
  std::shared_ptr<const cpu::PreprocessTables> tables;
  std::shared_ptr<const cpu::RampFilter> ramp;
  FilterConfig filter_config;

  void require_scan(const char* operation) const {
    if (!scan_active) {
      throw BackendError(std::string("cpu backend: ") + operation + " without an active scan");
    }
  }

  std::size_t row_grain(int rows) const {
    const int parts = 4 * workers.max_participants();
    return static_cast<std::size_t>(std::max(1, rows / parts));
  }

  std::shared_ptr<const cpu::RampFilter> make_ramp(const FilterConfig& config) const {
    try {
      return std::make_shared<const cpu::RampFilter>(setup.geometry.detector, config,
                                                     workers.max_participants());
    } catch (const BackendError&) {
      throw;
    } catch (const std::exception& e) {
      throw BackendError(std::string("cpu backend: cannot set up the ramp filter: ") + e.what());
    }
  }

  void run_backprojection(const std::vector<BackprojectionJob>& jobs);
};

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

CpuBackend::CpuBackend(const CpuBackendOptions& options) : impl_(std::make_unique<Impl>(options)) {}

CpuBackend::~CpuBackend() = default;

BackendInfo CpuBackend::info() const {
  BackendInfo info;
  info.name = "cpu";
  info.device = impl_->device;
  info.threads = impl_->workers.threads();
  info.memory_total_bytes = impl_->memory_total;
  info.memory_used_by_scan_bytes = impl_->scan_bytes + impl_->target_bytes->load();
  return info;
}

void CpuBackend::begin_scan(const ScanSetup& setup) {
  Impl& m = *impl_;
  const std::string problem = validate_geometry(setup.geometry);
  if (!problem.empty()) throw BackendError("cpu backend: invalid scan geometry: " + problem);
  const std::size_t pixels = setup.geometry.detector.pixels();
  const std::size_t slots = setup.geometry.vectors.size();
  const std::size_t frame_bytes = pixels * sizeof(float);
  const std::size_t store_bytes = slots * frame_bytes;
  const std::size_t in_flight_bytes = setup.projections_in_flight * frame_bytes;
  const std::size_t calibration_bytes = 2 * frame_bytes;
  const std::size_t needed = store_bytes + in_flight_bytes + calibration_bytes;
  const std::size_t targets = m.target_bytes->load();
  if (needed + targets > m.memory_limit) {
    std::ostringstream out;
    out << "cpu backend: the scan does not fit in the memory limit of " << mib(m.memory_limit)
        << ": projection store " << slots << " x " << setup.geometry.detector.rows << " x "
        << setup.geometry.detector.cols << " floats = " << mib(store_bytes) << ", "
        << setup.projections_in_flight << " projections in flight = " << mib(in_flight_bytes)
        << ", calibration " << mib(calibration_bytes) << ", targets " << mib(targets);
    throw BackendError(out.str());
  }
  end_scan();
  try {
    m.setup = setup;
    m.projections = std::make_shared<ProjectionPool>(
        pixels, std::min(kMaxFreeProjections, setup.projections_in_flight + 4));
    m.slots.clear();
    m.slots.resize(slots);
    auto tables = std::make_shared<const cpu::PreprocessTables>(
        cpu::make_preprocess_tables(setup.geometry.detector, {}, {}));
    auto ramp = m.make_ramp(setup.filter);
    std::lock_guard<std::mutex> lock(m.swap_mutex);
    m.tables = std::move(tables);
    m.ramp = std::move(ramp);
    m.filter_config = setup.filter;
  } catch (const std::bad_alloc&) {
    m.slots.clear();
    throw BackendError("cpu backend: out of memory while setting up the scan");
  }
  m.scan_bytes = needed;
  m.scan_active = true;
}

void CpuBackend::end_scan() {
  Impl& m = *impl_;
  m.slots.clear();
  m.projections.reset();
  {
    std::lock_guard<std::mutex> lock(m.swap_mutex);
    m.tables.reset();
    m.ramp.reset();
  }
  m.scan_bytes = 0;
  m.scan_active = false;
}

void CpuBackend::set_calibration(const std::vector<float>& dark, const std::vector<float>& flat) {
  Impl& m = *impl_;
  m.require_scan("set_calibration");
  const DetectorShape shape = m.setup.geometry.detector;
  for (const std::vector<float>* values : {&dark, &flat}) {
    if (!values->empty() && values->size() != shape.pixels()) {
      throw BackendError("cpu backend: calibration image has " + std::to_string(values->size()) +
                         " pixels, the detector " + std::to_string(shape.pixels()));
    }
  }
  auto tables =
      std::make_shared<const cpu::PreprocessTables>(cpu::make_preprocess_tables(shape, dark, flat));
  std::lock_guard<std::mutex> lock(m.swap_mutex);
  m.tables = std::move(tables);
}

void CpuBackend::set_filter(const FilterConfig& config) {
  Impl& m = *impl_;
  if (!m.scan_active) {
    std::lock_guard<std::mutex> lock(m.swap_mutex);
    m.filter_config = config;
    return;
  }
  auto ramp = m.make_ramp(config);  // planning happens here, off the filter thread
  std::lock_guard<std::mutex> lock(m.swap_mutex);
  m.ramp = std::move(ramp);
  m.filter_config = config;
}

std::unique_ptr<ProjectionBuffer> CpuBackend::preprocess(const FrameView& raw,
                                                         const ProjectionVector& vector,
                                                         PreprocessCounters* counters) {
  Impl& m = *impl_;
  m.require_scan("preprocess");
  const DetectorShape shape = m.setup.geometry.detector;
  if (raw.shape != shape || raw.type != m.setup.pixel_type || raw.data == nullptr) {
    throw BackendError("cpu backend: frame shape or pixel type differs from the scan");
  }
  std::shared_ptr<const cpu::PreprocessTables> tables;
  {
    std::lock_guard<std::mutex> lock(m.swap_mutex);
    tables = m.tables;
  }
  auto out = std::make_unique<CpuProjection>(m.projections);
  const CosineWeight cosine = make_cosine_weight(m.setup.geometry.beam, vector, shape);
  std::vector<PreprocessCounters> per_participant(
      static_cast<std::size_t>(m.workers.max_participants()));
  float* values = out->values.data();
  m.workers.parallel_for(static_cast<std::size_t>(shape.rows), m.row_grain(shape.rows),
                         [&](std::size_t begin, std::size_t end, int participant) {
                           cpu::preprocess_rows(raw, *tables, m.setup.preprocess, cosine, values,
                                                static_cast<int>(begin), static_cast<int>(end),
                                                &per_participant[participant]);
                         });
  if (counters != nullptr) {
    for (const PreprocessCounters& c : per_participant) {
      counters->clamped_low += c.clamped_low;
      counters->non_finite += c.non_finite;
    }
  }
  return out;
}

void CpuBackend::filter(ProjectionBuffer& projection) {
  Impl& m = *impl_;
  m.require_scan("filter");
  CpuProjection& cpu = cpu_projection(projection);
  std::shared_ptr<const cpu::RampFilter> ramp;
  {
    std::lock_guard<std::mutex> lock(m.swap_mutex);
    ramp = m.ramp;
  }
  if (cpu.values.size() != m.setup.geometry.detector.pixels()) {
    throw BackendError("cpu backend: projection of another scan's detector size");
  }
  const int rows = m.setup.geometry.detector.rows;
  float* values = cpu.values.data();
  m.workers.parallel_for(static_cast<std::size_t>(rows), m.row_grain(rows),
                         [&](std::size_t begin, std::size_t end, int participant) {
                           ramp->filter_rows(values, static_cast<int>(begin), static_cast<int>(end),
                                             participant);
                         });
}

std::unique_ptr<ReconTarget> CpuBackend::create_target(const GridSpec& grid) {
  Impl& m = *impl_;
  if (grid.width <= 0 || grid.height <= 0 || grid.depth <= 0) {
    throw BackendError("cpu backend: target grid must have a positive size");
  }
  const std::size_t bytes = grid.points() * sizeof(float);
  const std::size_t used = m.scan_bytes + m.target_bytes->load();
  if (used + bytes > m.memory_limit) {
    throw BackendError("cpu backend: a " + std::to_string(grid.width) + " x " +
                       std::to_string(grid.height) + " x " + std::to_string(grid.depth) +
                       " target (" + mib(bytes) + ") does not fit: " + mib(used) +
                       " in use, limit " + mib(m.memory_limit));
  }
  try {
    return std::make_unique<CpuTarget>(grid, m.target_bytes);
  } catch (const std::bad_alloc&) {
    throw BackendError("cpu backend: out of memory for a " + mib(bytes) + " target");
  }
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
  Slot& stored = m.slots[static_cast<std::size_t>(slot)];

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
    const Slot& stored = m.slots[static_cast<std::size_t>(slot)];
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

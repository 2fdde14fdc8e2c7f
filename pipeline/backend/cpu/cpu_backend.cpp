#include "pipeline/backend/cpu/cpu_backend.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <sstream>
#include <string>

#include "pipeline/backend/cpu/cpu_backend_impl.hpp"
#include "pipeline/backend/cpu/cpu_slice_refiner.hpp"
#include "pipeline/backend/refinement_setup.hpp"

namespace slicestream {
namespace {

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
  return mib_text(bytes);
}

}  // namespace

CpuBackend::Impl::Impl(const CpuBackendOptions& options, SharedMemoryBudget memory_budget)
    : workers(options.threads),
      memory_total(physical_memory_bytes()),
      budget(std::move(memory_budget)),
      device(cpu_model_name()) {
  budget->set_limit_bytes(options.memory_limit_bytes);
}

CpuBackend::CpuBackend(const CpuBackendOptions& options)
    : impl_(std::make_unique<Impl>(options, host_memory_)) {}

CpuBackend::~CpuBackend() = default;

BackendInfo CpuBackend::info() const {
  BackendInfo info;
  info.name = "cpu";
  info.device = impl_->device;
  info.threads = impl_->workers.threads();
  info.memory_total_bytes = impl_->memory_total;
  info.memory_used_by_scan_bytes = impl_->scan_bytes->load() + impl_->target_bytes->load();
  info.memory_used_by_refiners_bytes = impl_->refiner_bytes->load();
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
  const std::size_t refiners = m.refiner_bytes->load();
  // The scan replaces the previous one's store and buffers. Its room is held from the check
  // until the scan's account says the same, so that no other charge takes it meanwhile.
  const std::size_t others = m.used() - m.scan_bytes->load();
  const std::shared_ptr<MemoryCharge> room = m.budget->try_charge(needed, m.scan_bytes->load());
  if (!room) {
    std::ostringstream out;
    out << "cpu backend: the scan does not fit in the memory limit of " << mib(m.memory_limit())
        << ": projection store " << slots << " x " << setup.geometry.detector.rows << " x "
        << setup.geometry.detector.cols << " floats = " << mib(store_bytes) << ", "
        << setup.projections_in_flight << " projections in flight = " << mib(in_flight_bytes)
        << ", calibration " << mib(calibration_bytes) << ", targets " << mib(targets)
        << ", slice refiners " << mib(refiners) << ", slice images and replies "
        << mib(others - targets - refiners);
    throw BackendError(out.str());
  }
  end_scan();
  try {
    m.setup = setup;
    m.projections = std::make_shared<ProjectionPool>(
        pixels, std::min(kMaxFreeProjections, setup.projections_in_flight + 4));
    m.stored.clear();
    m.stored.resize(slots);
    m.slots = StoreSlots(kCpuOwner, slots);
    auto tables = std::make_shared<const cpu::PreprocessTables>(
        cpu::make_preprocess_tables(setup.geometry.detector, {}, {}));
    auto ramp = m.make_ramp(setup.filter);
    std::lock_guard<std::mutex> lock(m.swap_mutex);
    m.tables = std::move(tables);
    m.ramp = std::move(ramp);
    m.filter_config = setup.filter;
  } catch (const std::bad_alloc&) {
    m.stored.clear();
    m.slots = StoreSlots(kCpuOwner);
    throw BackendError("cpu backend: out of memory while setting up the scan");
  }
  *m.scan_bytes = needed;
  m.scan_active = true;
}

void CpuBackend::end_scan() {
  Impl& m = *impl_;
  m.stored.clear();
  m.slots = StoreSlots(kCpuOwner);
  m.projections.reset();
  {
    std::lock_guard<std::mutex> lock(m.swap_mutex);
    m.tables.reset();
    m.ramp.reset();
  }
  *m.scan_bytes = 0;
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
                                                         const ProjectionVector& vector) {
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
  PreprocessCounters counts;
  for (const PreprocessCounters& c : per_participant) {
    counts.clamped_low += c.clamped_low;
    counts.non_finite += c.non_finite;
  }
  m.preprocess_counts.add(counts);
  return out;
}

std::vector<PreprocessCounters> CpuBackend::take_preprocess_counts() {
  return impl_->preprocess_counts.take();
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

void CpuBackend::read_rows(ProjectionBuffer& projection, int row_begin, int count, float* host) {
  Impl& m = *impl_;
  m.require_scan("read_rows");
  const CpuProjection& cpu = cpu_projection(projection);
  const DetectorShape shape = m.setup.geometry.detector;
  if (row_begin < 0 || count < 0 || row_begin + count > shape.rows || host == nullptr ||
      cpu.values.size() != shape.pixels()) {
    throw BackendError("cpu backend: read_rows outside the projection");
  }
  const std::size_t cols = static_cast<std::size_t>(shape.cols);
  std::copy_n(cpu.values.begin() + static_cast<std::ptrdiff_t>(row_begin * cols),
              static_cast<std::size_t>(count) * cols, host);
}

std::unique_ptr<SliceRefiner> CpuBackend::create_refiner(const RefinementSetup& setup) {
  Impl& m = *impl_;
  return make_cpu_slice_refiner(setup, m.workers, m.budget, m.refiner_bytes);
}

std::string CpuBackend::refiner_memory_problem(const RefinementSetup& setup) const {
  const Impl& m = *impl_;
  const std::size_t used = m.used();
  const std::size_t needed = estimated_cpu_refiner_bytes(setup);
  if (used + needed <= m.memory_limit()) return {};
  return "the system matrix and CGLS vectors of this slice need about " + mib(needed) + ", " +
         mib(used) + " of the memory limit of " + mib(m.memory_limit()) +
         " are in use (scan, slices, other refiners)";
}

std::unique_ptr<ReconTarget> CpuBackend::create_target(const GridSpec& grid) {
  Impl& m = *impl_;
  if (grid.width <= 0 || grid.height <= 0 || grid.depth <= 0) {
    throw BackendError("cpu backend: target grid must have a positive size");
  }
  const std::size_t bytes = grid.points() * sizeof(float);
  // Held until the target has charged its own bytes, so that no other charge takes the room.
  const std::shared_ptr<MemoryCharge> room = m.budget->try_charge(bytes);
  if (!room) {
    throw BackendError("cpu backend: a " + std::to_string(grid.width) + " x " +
                       std::to_string(grid.height) + " x " + std::to_string(grid.depth) +
                       " target (" + mib(bytes) + ") does not fit: " + mib(m.used()) +
                       " in use, limit " + mib(m.memory_limit()));
  }
  try {
    return std::make_unique<CpuTarget>(grid, m.target_bytes);
  } catch (const std::bad_alloc&) {
    throw BackendError("cpu backend: out of memory for a " + mib(bytes) + " target");
  }
}

}  // namespace slicestream

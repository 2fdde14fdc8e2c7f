#include "pipeline/cuda_backend/cuda_backend.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_stream.hpp"
#include "kernels/cuda/device_probe.hpp"
#include "kernels/cuda/preprocessor.hpp"
#include "kernels/cuda/projection_texture_store.hpp"
#include "kernels/cuda/ramp_filter_cuda.hpp"
#include "pipeline/cuda_backend/cuda_buffers.hpp"

namespace slicestream {
namespace {

// Projection buffers allocated up front beyond what the pipeline says it holds in flight.
constexpr std::size_t kSpareProjections = 4;
constexpr std::size_t kDefaultInFlight = 8;

std::string mib(std::size_t bytes) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << static_cast<double>(bytes) / (1024.0 * 1024.0) << " MiB";
  return out.str();
}

// Runs `body`, turning CUDA, allocation and argument failures into BackendError.
template <class F>
auto guarded(const char* operation, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const BackendError&) {
    throw;
  } catch (const cuda::CudaError& e) {
    throw BackendError(std::string("cuda backend: ") + operation + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw BackendError(std::string("cuda backend: ") + operation + ": out of host memory");
  } catch (const std::exception& e) {
    throw BackendError(std::string("cuda backend: ") + operation + ": " + e.what());
  }
}

bool same_map(const ProjectionMap& a, const ProjectionMap& b) {
  return std::memcmp(&a, &b, sizeof(ProjectionMap)) == 0;
}

CudaTarget& cuda_target(ReconTarget& target) {
  auto* t = dynamic_cast<CudaTarget*>(&target);
  if (t == nullptr) throw BackendError("cuda backend: reconstruction target of another backend");
  return *t;
}

const CudaTarget& cuda_target(const ReconTarget& target) {
  const auto* t = dynamic_cast<const CudaTarget*>(&target);
  if (t == nullptr) throw BackendError("cuda backend: reconstruction target of another backend");
  return *t;
}

// Everything that lives for one scan.
struct ScanState {
  ScanSetup setup;
  std::uint64_t id = 0;
  std::size_t budget_bytes = 0;
  std::vector<ProjectionMap> maps;
  std::vector<bool> filled;
  std::unique_ptr<cuda::ProjectionTextureStore> store;
  std::unique_ptr<cuda::Preprocessor> preprocessor;
  std::unique_ptr<cuda::RampFilterCuda> ramp;
  std::shared_ptr<CudaProjectionPool> pool;
  std::unique_ptr<cuda::Backprojector> backprojector;
};

}  // namespace

struct CudaBackend::Impl {
  Impl(int device_index, const CudaBackendOptions& opts) : device(device_index), options(opts) {
    SLICESTREAM_CUDA_CHECK(cudaSetDevice(device));
    summary = cuda::describe_device(device);
    preprocess_stream = std::make_unique<cuda::Stream>();
    filter_stream = std::make_unique<cuda::Stream>();
    reconstruct_stream = std::make_unique<cuda::Stream>();
  }

  const int device;
  CudaBackendOptions options;
  cuda::DeviceSummary summary;
  std::unique_ptr<cuda::Stream> preprocess_stream;
  std::unique_ptr<cuda::Stream> filter_stream;
  std::unique_ptr<cuda::Stream> reconstruct_stream;
  std::shared_ptr<std::atomic<std::size_t>> target_bytes =
      std::make_shared<std::atomic<std::size_t>>(0);
  std::uint64_t next_scan_id = 1;

  std::unique_ptr<ScanState> scan;  // written by begin_scan/end_scan while the stages are idle

  std::mutex preprocess_mutex;  // preprocess vs set_calibration
  std::mutex filter_mutex;      // filter vs set_filter
  FilterConfig filter_config;
  bool filter_config_pending = false;

  void use_device() const { SLICESTREAM_CUDA_CHECK(cudaSetDevice(device)); }

  ScanState& require_scan(const char* operation) const {
    if (!scan) {
      throw BackendError(std::string("cuda backend: ") + operation + " without an active scan");
    }
    return *scan;
  }

  void synchronize_all() const {
    preprocess_stream->synchronize();
    filter_stream->synchronize();
    reconstruct_stream->synchronize();
  }

  CudaProjection& own_projection(ProjectionBuffer& buffer, const ScanState& s) const {
    auto* projection = dynamic_cast<CudaProjection*>(&buffer);
    if (projection == nullptr) {
      throw BackendError("cuda backend: projection buffer of another backend");
    }
    if (projection->scan_id() != s.id) {
      throw BackendError("cuda backend: projection buffer of an earlier scan");
    }
    return *projection;
  }

  void check_slot(const ScanState& s, int slot) const {
    if (slot < 0 || static_cast<std::size_t>(slot) >= s.maps.size()) {
      throw BackendError("cuda backend: slot " + std::to_string(slot) + " outside the window of " +
                         std::to_string(s.maps.size()));
    }
  }

  // The interpolation the store can serve. Gather needs driver support for gather on layered
  // arrays; without it the exact paths are the store's linear copy, else four point fetches.
  cuda::BackprojectTuning effective_tuning(const cuda::BackprojectTuning& wanted,
                                           const cuda::ProjectionTextureStore& store) const {
    using cuda::BackprojectInterpolation;
    cuda::BackprojectTuning t = wanted;
    if (t.interpolation == BackprojectInterpolation::kTextureGather && !store.gather_supported()) {
      switch (store.linear_copy()) {
        case cuda::LinearCopy::kQuads:
          t.interpolation = BackprojectInterpolation::kLinearQuads;
          break;
        case cuda::LinearCopy::kPlain:
          t.interpolation = BackprojectInterpolation::kLinearMemory;
          break;
        default:
          t.interpolation = BackprojectInterpolation::kTexturePoint4;
          break;
      }
    }
    const bool needs_plain = t.interpolation == BackprojectInterpolation::kLinearMemory;
    const bool needs_quads = t.interpolation == BackprojectInterpolation::kLinearQuads;
    if ((needs_plain && store.linear_copy() != cuda::LinearCopy::kPlain) ||
        (needs_quads && store.linear_copy() != cuda::LinearCopy::kQuads)) {
      throw BackendError(std::string("cuda backend: ") + cuda::to_string(t.interpolation) +
                         " interpolation needs the store's " + (needs_plain ? "plain" : "quad") +
                         " linear copy (CudaBackendOptions::linear_copy)");
    }
    return t;
  }
};

CudaBackend::CudaBackend(int device, const CudaBackendOptions& options) {
  guarded("start-up", [&] {
    const std::string reason = cuda::device_unavailable_reason(device);
    if (!reason.empty()) throw BackendError("cuda backend: " + reason);
    const std::string problem = cuda::validate(options.tuning);
    if (!problem.empty()) throw BackendError("cuda backend: invalid tuning: " + problem);
    impl_ = std::make_unique<Impl>(device, options);
  });
}

CudaBackend::~CudaBackend() {
  if (impl_) {
    try {
      impl_->use_device();
      impl_->synchronize_all();
    } catch (...) {
      // Destruction must not throw; a broken context frees nothing more anyway.
    }
  }
}

BackendInfo CudaBackend::info() const {
  BackendInfo info;
  info.name = "cuda";
  info.device = impl_->summary.name;
  info.threads = 1;
  info.memory_total_bytes = impl_->summary.memory_total_bytes;
  info.memory_used_by_scan_bytes =
      (impl_->scan ? impl_->scan->budget_bytes : 0) + impl_->target_bytes->load();
  return info;
}

void CudaBackend::begin_scan(const ScanSetup& setup) {
  Impl& m = *impl_;
  guarded("begin_scan", [&] {
    m.use_device();
    const std::string problem = validate_geometry(setup.geometry);
    if (!problem.empty()) throw BackendError("cuda backend: invalid scan geometry: " + problem);
    const DetectorShape detector = setup.geometry.detector;
    const std::string unsupported =
        cuda::ProjectionTextureStore::unsupported_reason(m.device, detector);
    if (!unsupported.empty()) throw BackendError("cuda backend: " + unsupported);
    end_scan();

    // The memory budget, computed before allocating anything.
    const int slots = static_cast<int>(setup.geometry.vectors.size());
    cuda::ProjectionStoreOptions store_options;
    store_options.linear_copy = m.options.linear_copy;
    store_options.max_layers_per_array = m.options.max_layers_per_array;
    const std::size_t frame_bytes = detector.pixels() * sizeof(float);
    const std::size_t in_flight =
        (setup.projections_in_flight > 0 ? setup.projections_in_flight : kDefaultInFlight) +
        kSpareProjections;
    const std::size_t store_bytes =
        cuda::ProjectionTextureStore::device_bytes(detector, slots, store_options);
    const std::size_t pool_bytes = in_flight * frame_bytes;
    const std::size_t preprocess_bytes = cuda::Preprocessor::device_bytes(detector);
    const std::size_t filter_bytes = cuda::RampFilterCuda::device_bytes(detector);
    const std::size_t needed = store_bytes + pool_bytes + preprocess_bytes + filter_bytes;
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    SLICESTREAM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::size_t usable = free_bytes > m.options.reserve_bytes
                                   ? free_bytes - m.options.reserve_bytes
                                   : std::size_t{0};
    if (needed > usable) {
      std::ostringstream out;
      out << "cuda backend: the scan does not fit in the memory of " << m.summary.name
          << ": it needs " << mib(needed) << " (projection store " << slots << " x "
          << detector.rows << " x " << detector.cols << " floats, linear copy "
          << cuda::to_string(store_options.linear_copy) << " = " << mib(store_bytes) << ", "
          << in_flight << " projections in flight = " << mib(pool_bytes) << ", preprocessing "
          << mib(preprocess_bytes) << ", filter " << mib(filter_bytes) << "), " << mib(free_bytes)
          << " of " << mib(total_bytes) << " are free and " << mib(m.options.reserve_bytes)
          << " stay reserved";
      throw BackendError(out.str());
    }

    auto s = std::make_unique<ScanState>();
    s->setup = setup;
    s->id = m.next_scan_id++;
    s->budget_bytes = needed;
    s->maps = make_projection_maps(setup.geometry);
    s->filled.assign(static_cast<std::size_t>(slots), false);
    s->store =
        std::make_unique<cuda::ProjectionTextureStore>(m.device, detector, slots, store_options);
    s->preprocessor = std::make_unique<cuda::Preprocessor>(detector, m.preprocess_stream->get());
    s->ramp = std::make_unique<cuda::RampFilterCuda>(detector, setup.filter);
    s->pool = std::make_shared<CudaProjectionPool>(detector.pixels(), in_flight);
    s->backprojector = std::make_unique<cuda::Backprojector>(
        setup.geometry.beam, detector, m.effective_tuning(m.options.tuning, *s->store));
    {
      std::lock_guard<std::mutex> lock(m.filter_mutex);
      m.filter_config = setup.filter;
      m.filter_config_pending = false;
    }
    m.scan = std::move(s);
  });
}

void CudaBackend::end_scan() {
  Impl& m = *impl_;
  guarded("end_scan", [&] {
    m.use_device();
    m.synchronize_all();
    m.scan.reset();
  });
}

void CudaBackend::set_calibration(const std::vector<float>& dark, const std::vector<float>& flat) {
  Impl& m = *impl_;
  guarded("set_calibration", [&] {
    ScanState& s = m.require_scan("set_calibration");
    m.use_device();
    const DetectorShape shape = s.setup.geometry.detector;
    for (const std::vector<float>* values : {&dark, &flat}) {
      if (!values->empty() && values->size() != shape.pixels()) {
        throw BackendError("cuda backend: calibration image has " + std::to_string(values->size()) +
                           " pixels, the detector " + std::to_string(shape.pixels()));
      }
    }
    std::lock_guard<std::mutex> lock(m.preprocess_mutex);
    s.preprocessor->set_calibration(dark, flat, m.preprocess_stream->get());
  });
}

void CudaBackend::set_filter(const FilterConfig& config) {
  Impl& m = *impl_;
  guarded("set_filter", [&] {
    (void)ramp_filter_response(2, config);  // validates the settings now, on the caller's thread
    std::lock_guard<std::mutex> lock(m.filter_mutex);
    m.filter_config = config;
    m.filter_config_pending = m.scan != nullptr;  // applied by the filter thread's next call
  });
}

std::unique_ptr<ProjectionBuffer> CudaBackend::preprocess(const FrameView& raw,
                                                          const ProjectionVector& vector,
                                                          PreprocessCounters* counters) {
  Impl& m = *impl_;
  return guarded("preprocess", [&]() -> std::unique_ptr<ProjectionBuffer> {
    ScanState& s = m.require_scan("preprocess");
    m.use_device();
    const DetectorShape shape = s.setup.geometry.detector;
    if (raw.shape != shape || raw.type != s.setup.pixel_type || raw.data == nullptr) {
      throw BackendError("cuda backend: frame shape or pixel type differs from the scan");
    }
    const CosineWeight cosine = make_cosine_weight(s.setup.geometry.beam, vector, shape);
    auto out = std::make_unique<CudaProjection>(s.pool, s.id);
    const cudaStream_t stream = m.preprocess_stream->get();
    std::lock_guard<std::mutex> lock(m.preprocess_mutex);
    out->last_use().wait_on(stream);  // an earlier user of the pooled buffer
    s.preprocessor->run(raw, s.setup.preprocess, cosine, out->values(), stream, counters);
    out->last_use().record(stream);
    return out;
  });
}

void CudaBackend::filter(ProjectionBuffer& projection) {
  Impl& m = *impl_;
  guarded("filter", [&] {
    ScanState& s = m.require_scan("filter");
    m.use_device();
    CudaProjection& p = m.own_projection(projection, s);
    const cudaStream_t stream = m.filter_stream->get();
    std::lock_guard<std::mutex> lock(m.filter_mutex);
    if (m.filter_config_pending) {
      s.ramp->set_config(m.filter_config, stream);
      m.filter_config_pending = false;
    }
    p.last_use().wait_on(stream);
    s.ramp->filter(p.values(), stream);
    p.last_use().record(stream);
  });
}

std::unique_ptr<ReconTarget> CudaBackend::create_target(const GridSpec& grid) {
  Impl& m = *impl_;
  return guarded("create_target", [&]() -> std::unique_ptr<ReconTarget> {
    if (grid.width <= 0 || grid.height <= 0 || grid.depth <= 0) {
      throw BackendError("cuda backend: target grid must have a positive size");
    }
    m.use_device();
    const std::size_t bytes = grid.points() * sizeof(float);
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    SLICESTREAM_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (bytes + m.options.reserve_bytes > free_bytes) {
      throw BackendError("cuda backend: a " + std::to_string(grid.width) + " x " +
                         std::to_string(grid.height) + " x " + std::to_string(grid.depth) +
                         " target (" + mib(bytes) + ") does not fit: " + mib(free_bytes) +
                         " free on " + m.summary.name + ", " + mib(m.options.reserve_bytes) +
                         " reserved");
    }
    return std::make_unique<CudaTarget>(grid, m.target_bytes, m.reconstruct_stream->get());
  });
}

void CudaBackend::replace_projection(int slot, const ProjectionMap& map,
                                     std::unique_ptr<ProjectionBuffer> projection,
                                     const std::vector<ReconTarget*>& live,
                                     const std::vector<ReconTarget*>& accumulate, float scale) {
  Impl& m = *impl_;
  guarded("replace_projection", [&] {
    ScanState& s = m.require_scan("replace_projection");
    m.use_device();
    m.check_slot(s, slot);
    if (!projection) throw BackendError("cuda backend: replace_projection without a projection");
    CudaProjection& fresh = m.own_projection(*projection, s);
    const cudaStream_t stream = m.reconstruct_stream->get();
    fresh.last_use().wait_on(stream);  // filtered on the filter stream

    cuda::ProjectionTextureStore& store = *s.store;
    const std::size_t index = static_cast<std::size_t>(slot);
    const bool had_old = s.filled[index];
    const ProjectionMap old_map = s.maps[index];

    // Live targets get +BP(new) - BP(old): with an unchanged map one backprojection of the
    // difference (computed exactly into the scratch layer); otherwise the old projection is kept
    // in the scratch layer and both are backprojected in the same launch. One pass over the data
    // also writes the new projection into its slot in place.
    std::vector<cuda::BackprojectSource> live_sources;
    cuda::ScratchContent scratch = cuda::ScratchContent::kUnchanged;
    if (!live.empty() && had_old && same_map(old_map, map)) {
      scratch = cuda::ScratchContent::kDifference;
      live_sources.push_back({map, store.scratch_ref(), scale});
    } else if (!live.empty() && had_old) {
      scratch = cuda::ScratchContent::kOldProjection;
      live_sources.push_back({map, store.slot_ref(slot), scale});
      live_sources.push_back({old_map, store.scratch_ref(), -scale});
    } else if (!live.empty()) {
      live_sources.push_back({map, store.slot_ref(slot), scale});
    }
    store.replace_slot(slot, fresh.values(), scratch, stream);
    fresh.last_use().record(stream);

    std::vector<cuda::BackprojectJob> jobs;
    auto add_job = [&](ReconTarget* target, const std::vector<cuda::BackprojectSource>& sources) {
      if (target == nullptr) throw BackendError("cuda backend: null reconstruction target");
      CudaTarget& t = cuda_target(*target);
      cuda::BackprojectJob job;
      job.grid = t.grid();
      job.data = t.values();
      job.plane_begin = 0;
      job.plane_end = t.grid().depth;
      job.accumulate = true;
      job.sources = sources;
      jobs.push_back(std::move(job));
    };
    for (ReconTarget* target : live)
      add_job(target, live_sources);
    const std::vector<cuda::BackprojectSource> new_source = {{map, store.slot_ref(slot), scale}};
    for (ReconTarget* target : accumulate)
      add_job(target, new_source);
    s.backprojector->run(jobs, stream);

    s.maps[index] = map;
    s.filled[index] = true;
    // `projection` returns its buffer to the pool here; its next user waits for last_use.
  });
}

void CudaBackend::backproject_store(const std::vector<int>& slots, ReconTarget& target, float scale,
                                    bool accumulate, int plane_begin, int plane_end) {
  Impl& m = *impl_;
  guarded("backproject_store", [&] {
    ScanState& s = m.require_scan("backproject_store");
    m.use_device();
    CudaTarget& t = cuda_target(target);
    const GridSpec& grid = t.grid();
    if (plane_begin < 0 || plane_end > grid.depth || plane_begin > plane_end) {
      throw BackendError("cuda backend: plane range [" + std::to_string(plane_begin) + ", " +
                         std::to_string(plane_end) + ") outside a target of depth " +
                         std::to_string(grid.depth));
    }
    cuda::BackprojectJob job;
    job.grid = grid;
    job.data = t.values();
    job.plane_begin = plane_begin;
    job.plane_end = plane_end;
    job.accumulate = accumulate;
    job.sources.reserve(slots.size());
    for (int slot : slots) {
      m.check_slot(s, slot);
      const std::size_t index = static_cast<std::size_t>(slot);
      if (s.filled[index]) job.sources.push_back({s.maps[index], s.store->slot_ref(slot), scale});
    }
    if (plane_begin == plane_end) return;
    s.backprojector->run({job}, m.reconstruct_stream->get());
  });
}

void CudaBackend::set_slot_maps(const std::vector<ProjectionMap>& maps) {
  Impl& m = *impl_;
  guarded("set_slot_maps", [&] {
    ScanState& s = m.require_scan("set_slot_maps");
    if (maps.size() != s.maps.size()) {
      throw BackendError("cuda backend: set_slot_maps got " + std::to_string(maps.size()) +
                         " maps for " + std::to_string(s.maps.size()) + " slots");
    }
    s.maps = maps;  // the maps travel with each launch's parameters: nothing to upload
  });
}

void CudaBackend::clear_target(ReconTarget& target) {
  Impl& m = *impl_;
  guarded("clear_target", [&] {
    m.use_device();
    CudaTarget& t = cuda_target(target);
    SLICESTREAM_CUDA_CHECK(cudaMemsetAsync(t.values(), 0, t.bytes(), m.reconstruct_stream->get()));
  });
}

void CudaBackend::copy_target(const ReconTarget& from, ReconTarget& to) {
  Impl& m = *impl_;
  guarded("copy_target", [&] {
    m.use_device();
    const CudaTarget& source = cuda_target(from);
    CudaTarget& destination = cuda_target(to);
    if (source.bytes() != destination.bytes()) {
      throw BackendError("cuda backend: copy_target between grids of different sizes");
    }
    if (&source == &destination) return;
    SLICESTREAM_CUDA_CHECK(cudaMemcpyAsync(destination.values(), source.values(), source.bytes(),
                                           cudaMemcpyDeviceToDevice, m.reconstruct_stream->get()));
  });
}

void CudaBackend::read_target(const ReconTarget& target, float* host) {
  Impl& m = *impl_;
  guarded("read_target", [&] {
    if (host == nullptr) throw BackendError("cuda backend: read_target into a null buffer");
    m.use_device();
    const CudaTarget& t = cuda_target(target);
    const cudaStream_t stream = m.reconstruct_stream->get();
    SLICESTREAM_CUDA_CHECK(
        cudaMemcpyAsync(host, t.values(), t.bytes(), cudaMemcpyDeviceToHost, stream));
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  });
}

void CudaBackend::set_backproject_tuning(const cuda::BackprojectTuning& tuning) {
  Impl& m = *impl_;
  guarded("set_backproject_tuning", [&] {
    const std::string problem = cuda::validate(tuning);
    if (!problem.empty()) throw BackendError("cuda backend: invalid tuning: " + problem);
    if (m.scan) m.scan->backprojector->set_tuning(m.effective_tuning(tuning, *m.scan->store));
    m.options.tuning = tuning;
  });
}

cuda::BackprojectTuning CudaBackend::backproject_tuning() const {
  return impl_->scan ? impl_->scan->backprojector->tuning() : impl_->options.tuning;
}

bool CudaBackend::texture_gather_supported() const {
  return impl_->scan && impl_->scan->store->gather_supported();
}

void CudaBackend::synchronize() {
  Impl& m = *impl_;
  guarded("synchronize", [&] {
    m.use_device();
    m.synchronize_all();
  });
}

std::unique_ptr<Backend> make_cuda_backend(int device) {
  return std::make_unique<CudaBackend>(device);
}

std::string cuda_unavailable_reason_impl() {
  return cuda::device_unavailable_reason(0);
}

}  // namespace slicestream

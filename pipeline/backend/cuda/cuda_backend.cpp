#include "pipeline/backend/cuda/cuda_backend.hpp"

#include <algorithm>

#include "pipeline/backend/cuda/cuda_backend_impl.hpp"
#include "pipeline/backend/cuda/cuda_slice_refiner.hpp"

namespace slicestream {

using cuda_backend_detail::cuda_target;
using cuda_backend_detail::guarded;
using cuda_backend_detail::kDefaultInFlight;
using cuda_backend_detail::kSpareProjections;
using cuda_backend_detail::mib;
using cuda_backend_detail::ScanState;

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
  info.memory_used_by_refiners_bytes = impl_->refiner_bytes->load();
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
    store_options.storage = projection_storage(m.options);
    store_options.max_layers_per_array = m.options.max_layers_per_array;
    store_options.scratch_layers = std::max(1, setup.max_projection_batch);
    const cuda::FilteredRows rows_for_store = filtered_rows(m.options);
    const std::size_t projection_floats =
        cuda::RampFilterCuda::buffer_floats(detector, rows_for_store);
    const std::size_t frame_bytes = projection_floats * sizeof(float);
    const std::size_t in_flight =
        (setup.projections_in_flight > 0 ? setup.projections_in_flight : kDefaultInFlight) +
        kSpareProjections;
    const std::size_t store_bytes =
        cuda::ProjectionTextureStore::device_bytes(detector, slots, store_options);
    const std::size_t pool_bytes = in_flight * frame_bytes;
    const std::size_t preprocess_bytes = cuda::Preprocessor::device_bytes(detector);
    const std::size_t filter_bytes = cuda::RampFilterCuda::device_bytes(detector);
    const std::size_t needed = store_bytes + pool_bytes + preprocess_bytes + filter_bytes;
    // Held until the scan's allocations below are made.
    const DeviceMemoryAdmissions::Admission admission =
        m.admissions.admit(needed, m.options.reserve_bytes);
    if (!admission.admitted) {
      const std::size_t free_bytes = admission.memory.free_bytes;
      const std::size_t total_bytes = admission.memory.total_bytes;
      std::ostringstream out;
      out << "cuda backend: the scan does not fit in the memory of " << m.summary.name
          << ": it needs " << mib(needed) << " (projection store " << slots << " x "
          << detector.rows << " x " << detector.cols << " "
          << cuda::to_string(store_options.storage) << " = " << mib(store_bytes) << ", "
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
    s->slots = StoreSlots(cuda_backend_detail::kCudaOwner, static_cast<std::size_t>(slots));
    s->store =
        std::make_unique<cuda::ProjectionTextureStore>(m.device, detector, slots, store_options);
    s->preprocessor = std::make_unique<cuda::Preprocessor>(detector, m.preprocess_stream->get(),
                                                           m.options.use_graphs);
    s->filtered_rows = rows_for_store;
    s->ramp = std::make_unique<cuda::RampFilterCuda>(detector, setup.filter, m.options.use_graphs,
                                                     in_flight);
    s->pool = std::make_shared<CudaProjectionPool>(projection_floats, in_flight);
    s->backprojector =
        std::make_unique<cuda::Backprojector>(setup.geometry.beam, detector, m.options.tuning);
    if (m.options.use_graphs) s->reconstruct_graph = std::make_unique<cuda::GraphReplayer>();
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
    if (m.scan) {
      std::lock_guard<std::mutex> lock(m.preprocess_mutex);
      m.ended_scan_counts.add(m.scan->preprocessor->take_counts(m.preprocess_stream->get()));
    }
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
                                                          const ProjectionVector& vector) {
  Impl& m = *impl_;
  return guarded("preprocess", [&]() -> std::unique_ptr<ProjectionBuffer> {
    ScanState& s = m.require_scan("preprocess");
    m.use_device();
    const DetectorShape shape = s.setup.geometry.detector;
    if (raw.shape != shape || raw.type != s.setup.pixel_type || raw.data == nullptr) {
      throw BackendError("cuda backend: frame shape or pixel type differs from the scan");
    }
    const CosineWeight cosine = make_cosine_weight(s.setup.geometry.beam, vector, shape);
    auto out = std::make_unique<CudaProjection>(s.pool, s.id, shape.cols);
    const cudaStream_t stream = m.preprocess_stream->get();
    std::lock_guard<std::mutex> lock(m.preprocess_mutex);
    out->last_use().wait_on(stream);  // an earlier user of the pooled buffer
    s.preprocessor->run(raw, s.setup.preprocess, cosine, out->values(), stream);
    out->last_use().record(stream);
    return out;
  });
}

std::vector<PreprocessCounters> CudaBackend::take_preprocess_counts() {
  Impl& m = *impl_;
  return guarded("take_preprocess_counts", [&] {
    m.use_device();
    std::lock_guard<std::mutex> lock(m.preprocess_mutex);
    if (m.scan)
      m.ended_scan_counts.add(m.scan->preprocessor->take_counts(m.preprocess_stream->get()));
    return m.ended_scan_counts.take();
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
    // Padded rows are no input for another filtering (it reads dense rows).
    if (p.row_pitch() != s.setup.geometry.detector.cols) {
      throw BackendError("cuda backend: projection filtered twice");
    }
    p.last_use().wait_on(stream);
    s.ramp->filter(p.values(), stream, s.filtered_rows);
    p.last_use().record(stream);
    p.set_row_pitch(cuda::RampFilterCuda::row_pitch(s.setup.geometry.detector, s.filtered_rows));
  });
}

void CudaBackend::read_rows(ProjectionBuffer& projection, int row_begin, int count, float* host) {
  Impl& m = *impl_;
  guarded("read_rows", [&] {
    ScanState& s = m.require_scan("read_rows");
    m.use_device();
    CudaProjection& p = m.own_projection(projection, s);
    const DetectorShape shape = s.setup.geometry.detector;
    if (row_begin < 0 || count < 0 || row_begin + count > shape.rows || host == nullptr) {
      throw BackendError("cuda backend: read_rows outside the projection");
    }
    if (count == 0) return;
    // On the preprocess stream, which has just enqueued this projection, so the copy waits for
    // nothing but it.
    const cudaStream_t stream = m.preprocess_stream->get();
    const std::size_t cols = static_cast<std::size_t>(shape.cols);
    const std::size_t pitch = static_cast<std::size_t>(p.row_pitch());
    p.last_use().wait_on(stream);
    SLICESTREAM_CUDA_CHECK(cudaMemcpy2DAsync(
        host, cols * sizeof(float), p.values() + static_cast<std::size_t>(row_begin) * pitch,
        pitch * sizeof(float), cols * sizeof(float), static_cast<std::size_t>(count),
        cudaMemcpyDeviceToHost, stream));
    SLICESTREAM_CUDA_CHECK(cudaStreamSynchronize(stream));
  });
}

std::unique_ptr<SliceRefiner> CudaBackend::create_refiner(const RefinementSetup& setup) {
  Impl& m = *impl_;
  return guarded("create_refiner", [&]() -> std::unique_ptr<SliceRefiner> {
    return make_cuda_slice_refiner(m.device, setup, m.options.reserve_bytes, m.refiner_bytes,
                                   m.admissions);
  });
}

std::string CudaBackend::refiner_memory_problem(const RefinementSetup& setup) const {
  const Impl& m = *impl_;
  return guarded("refiner_memory_problem", [&]() -> std::string {
    const std::string shortfall =
        refiner_memory_shortfall(setup, m.admissions, m.options.reserve_bytes);
    if (shortfall.empty()) return {};
    return "the system matrix and CGLS vectors of this slice need up to " + shortfall + " on " +
           m.summary.name + " (the scan, the slices and " + mib(m.refiner_bytes->load()) +
           " of other refiners hold the rest)";
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
    // Held until the target is allocated.
    const DeviceMemoryAdmissions::Admission admission =
        m.admissions.admit(bytes, m.options.reserve_bytes);
    if (!admission.admitted) {
      const std::string shortfall =
          device_memory_shortfall(bytes, admission.memory.free_bytes, m.options.reserve_bytes);
      throw BackendError("cuda backend: a " + std::to_string(grid.width) + " x " +
                         std::to_string(grid.height) + " x " + std::to_string(grid.depth) +
                         " target does not fit on " + m.summary.name + ": " + shortfall);
    }
    return std::make_unique<CudaTarget>(grid, m.target_bytes, m.reconstruct_stream->get());
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

cuda::ProjectionStorage projection_storage(const CudaBackendOptions& options) {
  if (options.tuning.interpolation == cuda::BackprojectInterpolation::kExact) {
    return cuda::ProjectionStorage::kLinear;
  }
  if (!options.half_texels) return cuda::ProjectionStorage::kTexture;
  return options.mirrored_texels ? cuda::ProjectionStorage::kTextureHalfMirrored
                                 : cuda::ProjectionStorage::kTextureHalf;
}

cuda::FilteredRows filtered_rows(const CudaBackendOptions& options) {
  return options.crop_in_store_update ? cuda::FilteredRows::kPadded : cuda::FilteredRows::kDense;
}

std::unique_ptr<TargetReadback> CudaBackend::read_target_async(const ReconTarget& target) {
  Impl& m = *impl_;
  return guarded("read_target_async", [&]() -> std::unique_ptr<TargetReadback> {
    m.use_device();
    const CudaTarget& t = cuda_target(target);
    return std::make_unique<CudaReadback>(m.readback_pool, t.values(), t.grid().points(),
                                          m.reconstruct_stream->get());
  });
}

CudaBackendOptions cuda_backend_options(const CudaSettings& settings) {
  CudaBackendOptions options;
  options.reserve_bytes = settings.reserve_bytes;
  options.use_graphs = settings.use_graphs;
  options.readback_lend_bytes = settings.readback_lend_bytes;
  options.host_wait = settings.host_wait;
  const bool exact = settings.interpolation == CudaInterpolation::kExact;
  const bool automatic = settings.texels == CudaTexels::kAuto;
  const bool mirrored = settings.texels == CudaTexels::kFloat16Mirrored || (automatic && !exact);
  const bool half = mirrored || settings.texels == CudaTexels::kFloat16;
  if (exact && half) {
    throw BackendError(
        "cuda backend: exact interpolation reads fp32 projections; fp16 texels need the texture "
        "interpolation");
  }
  options.tuning.interpolation =
      exact ? cuda::BackprojectInterpolation::kExact : cuda::BackprojectInterpolation::kTexture;
  options.half_texels = half;
  options.mirrored_texels = mirrored;
  return options;
}

std::unique_ptr<Backend> make_cuda_backend(const CudaSettings& settings) {
  return std::make_unique<CudaBackend>(settings.device, cuda_backend_options(settings));
}

std::string cuda_unavailable_reason_impl(int device) {
  return cuda::device_unavailable_reason(device);
}

}  // namespace slicestream

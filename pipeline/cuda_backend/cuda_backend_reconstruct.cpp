// The reconstruct stage's work on the GPU: in-place store updates with the incremental
// backprojection, full recomputes from the store, centre-of-rotation map changes, tuning.
#include "pipeline/cuda_backend/cuda_backend.hpp"

#include "pipeline/cuda_backend/cuda_backend_impl.hpp"

namespace slicestream {

using cuda_backend_detail::cuda_target;
using cuda_backend_detail::guarded;
using cuda_backend_detail::same_map;
using cuda_backend_detail::ScanState;

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

}  // namespace slicestream

// The reconstruct stage's work on the GPU: in-place store updates with the incremental
// backprojection, full recomputes from the store, centre-of-rotation map changes, tuning.
#include "pipeline/backend/cuda/cuda_backend.hpp"

#include "pipeline/backend/cuda/cuda_backend_impl.hpp"

namespace slicestream {

using cuda_backend_detail::cuda_target;
using cuda_backend_detail::guarded;
using cuda_backend_detail::reads_texture_layers;
using cuda_backend_detail::same_map;
using cuda_backend_detail::ScanState;

void CudaBackend::replace_projections(std::vector<ProjectionUpdate>& updates, float scale) {
  Impl& m = *impl_;
  guarded("replace_projection", [&] {
    ScanState& s = m.require_scan("replace_projection");
    m.use_device();
    // Runs of distinct slots, at most one per scratch layer, each in one replacement pass and one
    // backprojection launch.
    const auto limit = static_cast<std::size_t>(s.store->scratch_layers());
    for (std::size_t begin = 0; begin < updates.size();) {
      const std::size_t count = distinct_slot_run(updates, begin, limit);
      m.replace_run(s, updates, begin, count, scale);
      begin += count;
    }
  });
}

void CudaBackend::Impl::replace_run(ScanState& s, std::vector<ProjectionUpdate>& updates,
                                    std::size_t begin, std::size_t count, float scale) {
  // Everything is checked before anything is enqueued.
  for (std::size_t i = begin; i < begin + count; ++i) {
    const ProjectionUpdate& u = updates[i];
    check_slot(s, u.slot);
    if (!u.projection) throw BackendError("cuda backend: replace_projection without a projection");
    (void)own_projection(*u.projection, s);
    for (const auto* list : {&u.live, &u.accumulate}) {
      for (ReconTarget* target : *list) {
        if (target == nullptr) throw BackendError("cuda backend: null reconstruction target");
        (void)cuda_target(*target);
      }
    }
  }
  const cudaStream_t stream = reconstruct_stream->get();
  cuda::ProjectionTextureStore& store = *s.store;
  if (reads_texture_layers(s.backprojector->tuning().interpolation) &&
      !store.texture_layers_current()) {
    throw BackendError("cuda backend: texture interpolation while the texture layers are stale");
  }

  // Per update k (scratch layer k): live targets get +BP(new) - BP(old). With an unchanged map
  // one backprojection of the difference (computed exactly into the scratch layer); otherwise the
  // old projection is kept in the scratch layer and both are backprojected. The replacement pass
  // also writes every new projection into its slot in place; slots of a run are distinct, so a
  // slot read by the backprojection holds its update's projection.
  std::vector<std::unique_ptr<ProjectionBuffer>> fresh(count);
  std::vector<cuda::SlotReplacement> replacements;
  std::vector<cuda::BackprojectJob> jobs;
  auto job_of = [&](ReconTarget* target) -> cuda::BackprojectJob& {
    CudaTarget& t = cuda_target(*target);
    for (cuda::BackprojectJob& job : jobs) {
      if (job.data == t.values()) return job;
    }
    cuda::BackprojectJob job;
    job.grid = t.grid();
    job.data = t.values();
    job.plane_begin = 0;
    job.plane_end = t.grid().depth;
    job.accumulate = true;
    jobs.push_back(std::move(job));
    return jobs.back();
  };
  for (std::size_t k = 0; k < count; ++k) {
    ProjectionUpdate& u = updates[begin + k];
    fresh[k] = std::move(u.projection);
    CudaProjection& projection = own_projection(*fresh[k], s);
    projection.last_use().wait_on(stream);  // filtered on the filter stream
    const std::size_t index = static_cast<std::size_t>(u.slot);
    const bool had_old = s.filled[index];
    const ProjectionMap& old_map = s.maps[index];
    const cuda::TextureRef scratch = store.scratch_ref(static_cast<int>(k));
    std::vector<cuda::BackprojectSource> live_sources;
    cuda::ScratchContent content = cuda::ScratchContent::kUnchanged;
    if (!u.live.empty() && had_old && same_map(old_map, u.map)) {
      content = cuda::ScratchContent::kDifference;
      live_sources.push_back({u.map, scratch, scale});
    } else if (!u.live.empty() && had_old) {
      content = cuda::ScratchContent::kOldProjection;
      live_sources.push_back({u.map, store.slot_ref(u.slot), scale});
      live_sources.push_back({old_map, scratch, -scale});
    } else if (!u.live.empty()) {
      live_sources.push_back({u.map, store.slot_ref(u.slot), scale});
    }
    replacements.push_back({u.slot, projection.values(), content});
    for (ReconTarget* target : u.live) {
      std::vector<cuda::BackprojectSource>& sources = job_of(target).sources;
      sources.insert(sources.end(), live_sources.begin(), live_sources.end());
    }
    for (ReconTarget* target : u.accumulate) {
      job_of(target).sources.push_back({u.map, store.slot_ref(u.slot), scale});
    }
  }

  cuda::LaunchSequence sequence;
  store.append_replace_slots(replacements, sequence);
  s.backprojector->append(jobs, sequence);
  if (s.reconstruct_graph) {
    s.reconstruct_graph->launch(sequence, stream);
  } else {
    sequence.enqueue(stream);
  }
  for (std::size_t k = 0; k < count; ++k) {
    ProjectionUpdate& u = updates[begin + k];
    own_projection(*fresh[k], s).last_use().record(stream);
    const std::size_t index = static_cast<std::size_t>(u.slot);
    s.maps[index] = u.map;
    s.filled[index] = true;
    u.applied = true;
    // fresh[k] returns its buffer to the pool at the end; its next user waits for last_use.
  }
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
    if (cuda_backend_detail::reads_texture_layers(s.backprojector->tuning().interpolation) &&
        !s.store->texture_layers_current()) {
      throw BackendError("cuda backend: texture interpolation while the texture layers are stale");
    }
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

bool CudaBackend::texture_gather_supported() const {
  return impl_->scan && impl_->scan->store->gather_supported();
}

bool CudaBackend::texture_layer_writes() const {
  return impl_->scan && impl_->scan->store->texture_layer_writes();
}

CudaBackend::GraphCounts CudaBackend::graph_captures() const {
  GraphCounts counts;
  if (!impl_->scan) return counts;
  const ScanState& s = *impl_->scan;
  for (const cuda::GraphReplayer* g :
       {s.preprocessor->graph(), s.ramp->graph(),
        static_cast<const cuda::GraphReplayer*>(s.reconstruct_graph.get())}) {
    if (g != nullptr) counts.update_failures += g->update_failures();
  }
  if (const cuda::GraphReplayer* g = s.preprocessor->graph()) counts.preprocess = g->captures();
  if (const cuda::GraphReplayer* g = s.ramp->graph()) counts.filter = g->captures();
  if (s.reconstruct_graph) counts.reconstruct = s.reconstruct_graph->captures();
  return counts;
}

const CudaBackendOptions& CudaBackend::options() const {
  return impl_->options;
}

void CudaBackend::synchronize() {
  Impl& m = *impl_;
  guarded("synchronize", [&] {
    m.use_device();
    m.synchronize_all();
  });
}

}  // namespace slicestream

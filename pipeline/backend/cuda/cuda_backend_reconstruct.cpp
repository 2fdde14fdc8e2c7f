// The reconstruct stage's work on the GPU: in-place store updates as the shared update plan
// (update_plan.hpp) lays them out, full recomputes from the store, centre-of-rotation map changes,
// tuning.
#include "pipeline/backend/cuda/cuda_backend.hpp"

#include "pipeline/backend/cuda/cuda_backend_impl.hpp"

namespace slicestream {

using cuda_backend_detail::cuda_target;
using cuda_backend_detail::guarded;
using cuda_backend_detail::kCudaOwner;
using cuda_backend_detail::ScanState;
using cuda_backend_detail::scratch_content;

void CudaBackend::replace_projections(std::vector<ProjectionUpdate>& updates, float scale) {
  Impl& m = *impl_;
  guarded("replace_projection", [&] {
    ScanState& s = m.require_scan("replace_projection");
    m.use_device();
    // Runs of at most one update per scratch layer, each in one replacement pass and one
    // backprojection launch.
    const UpdatePlan plan =
        plan_updates(updates, s.slots, static_cast<std::size_t>(s.store->scratch_layers()));
    for (const UpdateRun& run : plan.runs)
      m.apply_run(s, run, updates, scale);
    if (!plan.refusal.empty()) throw BackendError(plan.refusal);
  });
}

void CudaBackend::Impl::apply_run(ScanState& s, const UpdateRun& run,
                                  std::vector<ProjectionUpdate>& updates, float scale) {
  // Everything is checked before anything is enqueued.
  for (const PlannedUpdate& planned : run.updates)
    (void)own_projection(*updates[planned.index].projection, s);
  for (const PlannedTarget& planned : run.targets)
    (void)cuda_target(*planned.target);
  const cudaStream_t stream = reconstruct_stream->get();
  cuda::ProjectionTextureStore& store = *s.store;

  // Update k owns scratch layer k: the replacement pass computes new - old into it exactly
  // (kDifference) or keeps the old projection there (kNewMinusOld), and writes every new
  // projection into its slot in place; slots of a run are distinct, so a slot read by the
  // backprojection holds its update's projection. A projection the filter left padded
  // (filtered_rows) is cropped by this pass: it reads the filter's output once, no copy first.
  const std::size_t count = run.updates.size();
  std::vector<std::unique_ptr<ProjectionBuffer>> fresh(count);
  std::vector<cuda::SlotReplacement> replacements;
  for (std::size_t k = 0; k < count; ++k) {
    const PlannedUpdate& planned = run.updates[k];
    fresh[k] = std::move(updates[planned.index].projection);
    CudaProjection& projection = own_projection(*fresh[k], s);
    projection.last_use().wait_on(stream);  // filtered on the filter stream
    replacements.push_back(
        {planned.slot, projection.values(), scratch_content(planned.live), projection.row_pitch()});
  }
  std::vector<cuda::BackprojectJob> jobs;
  for (const PlannedTarget& planned : run.targets) {
    CudaTarget& t = cuda_target(*planned.target);
    cuda::BackprojectJob job;
    job.grid = t.grid();
    job.data = t.values();
    job.plane_begin = 0;
    job.plane_end = t.grid().depth;
    job.accumulate = true;
    for (const PlannedSource& source : planned.sources) {
      const PlannedUpdate& update = run.updates[source.update];
      const ProjectionMap& map = updates[update.index].map;
      const cuda::TextureRef scratch = store.scratch_ref(static_cast<int>(source.update));
      switch (source.kind) {
        case SourceKind::kNew:
          job.sources.push_back({map, store.slot_ref(update.slot), scale});
          break;
        case SourceKind::kDifference:
          job.sources.push_back({map, scratch, scale});
          break;
        case SourceKind::kOld:
          job.sources.push_back({update.old_map, scratch, -scale});
          break;
      }
    }
    jobs.push_back(std::move(job));
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
    const PlannedUpdate& planned = run.updates[k];
    ProjectionUpdate& u = updates[planned.index];
    own_projection(*fresh[k], s).last_use().record(stream);
    s.slots.store(planned.slot, u.map);
    u.applied = true;
    // fresh[k] returns its buffer to the pool at the end; its next user waits for last_use.
  }
}

std::uint64_t CudaBackend::store_values_clamped() const {
  return impl_->scan ? impl_->scan->store->values_clamped() : 0;
}

void CudaBackend::backproject_store(const std::vector<int>& slots, ReconTarget& target, float scale,
                                    bool accumulate, int plane_begin, int plane_end) {
  Impl& m = *impl_;
  guarded("backproject_store", [&] {
    ScanState& s = m.require_scan("backproject_store");
    m.use_device();
    CudaTarget& t = cuda_target(target);
    const GridSpec& grid = t.grid();
    check_plane_range(kCudaOwner, grid.depth, plane_begin, plane_end);
    cuda::BackprojectJob job;
    job.grid = grid;
    job.data = t.values();
    job.plane_begin = plane_begin;
    job.plane_end = plane_end;
    job.accumulate = accumulate;
    for (int slot : s.slots.filled_of(slots))
      job.sources.push_back({s.slots.map(slot), s.store->slot_ref(slot), scale});
    if (plane_begin == plane_end) return;
    s.backprojector->run({job}, m.reconstruct_stream->get());
  });
}

void CudaBackend::set_slot_maps(const std::vector<ProjectionMap>& maps) {
  Impl& m = *impl_;
  guarded("set_slot_maps", [&] {
    ScanState& s = m.require_scan("set_slot_maps");
    s.slots.set_maps(maps);  // the maps travel with each launch's parameters: nothing to upload
  });
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

void CudaBackend::synchronize() {
  Impl& m = *impl_;
  guarded("synchronize", [&] {
    m.use_device();
    m.synchronize_all();
  });
}

}  // namespace slicestream

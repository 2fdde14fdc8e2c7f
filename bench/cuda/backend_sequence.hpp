// The CUDA backend's whole per-frame sequence as the pipeline drives it (preprocess with
// counters, filter, store update into three live slices), timed on the host for a stream of
// frames: CUDA graphs against kernel-by-kernel launches, store updates one by one against
// batches, the filter's crop fused into the store update against a pass of its own.
#pragma once

#include "bench_report.hpp"
#include "bench_scene.hpp"

namespace slicestream::bench {

// Rows of section "backend per-frame sequence" for `frames` timed frames of `spec` (cone).
void backend_sequence(const SetupSpec& spec, int frames, Report& report);

}  // namespace slicestream::bench

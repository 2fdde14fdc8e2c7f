// CPU twin of the fused preprocessing pass: flat-field correction, guards, -log, FDK cosine
// pre-weighting, evaluated in one pass per pixel through the expression layer (kernels/expr/).
#pragma once

#include <vector>

#include "kernels/frame_view.hpp"
#include "kernels/preprocess_params.hpp"
#include "kernels/projection_map.hpp"

namespace slicestream::cpu {

// Per-pixel constants, built once per calibration (averaged darks and flats).
struct PreprocessTables {
  DetectorShape shape;
  std::vector<float> dark;      // averaged dark current
  std::vector<float> inv_gain;  // 1 / (flat - dark); 0 marks a dead pixel (flat <= dark)
};

// dark/flat may be empty: no darks means dark = 0, no flats means the raw values already are
// transmissions (gain 1).
PreprocessTables make_preprocess_tables(DetectorShape shape, const std::vector<float>& dark,
                                        const std::vector<float>& flat);

// Rows [row_begin, row_end) of `raw` into `out` (float, same shape):
//   out = cosine.at(r, c) * (already_linear ? raw : -log(max((raw - dark) * inv_gain, min_t)))
// dead pixels give 0. Counters are added to (callers running rows in parallel pass their own).
void preprocess_rows(const FrameView& raw, const PreprocessTables& tables,
                     const PreprocessParams& params, const CosineWeight& cosine, float* out,
                     int row_begin, int row_end, PreprocessCounters* counters);

}  // namespace slicestream::cpu

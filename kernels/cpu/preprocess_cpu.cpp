#include "kernels/cpu/preprocess_cpu.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/expr/host_evaluate.hpp"
#include "kernels/expr/preprocess_expression.hpp"

namespace slicestream::cpu {
namespace {

void check_calibration_size(const std::vector<float>& values, DetectorShape shape,
                            const char* what) {
  if (!values.empty() && values.size() != shape.pixels()) {
    throw std::invalid_argument(std::string(what) + " has " + std::to_string(values.size()) +
                                " values, the detector " + std::to_string(shape.pixels()));
  }
}

// The fused pass for one pixel type and mode (kernels/expr/preprocess_expression.hpp).
template <class Pixel, bool kLinear, bool kWeighted>
void preprocess_typed(const Pixel* raw, const PreprocessTables& tables,
                      const PreprocessParams& params, const CosineWeight& cosine, float* out,
                      int row_begin, int row_end, PreprocessCounters* counters) {
  const auto pass = expr::preprocess_expression<kLinear, kWeighted>(
      raw, tables.dark.data(), tables.inv_gain.data(), params.min_transmission, cosine);
  expr::Counts<2> counts{};
  expr::assign_rows(out, pass.result, {tables.shape.rows, tables.shape.cols}, row_begin, row_end,
                    &counts, pass.non_finite, pass.clamped_low);
  if (counters != nullptr) {
    counters->non_finite += counts[0];
    counters->clamped_low += counts[1];
  }
}

template <class Pixel>
void preprocess_pixels(const void* raw, const PreprocessTables& tables,
                       const PreprocessParams& params, const CosineWeight& cosine, float* out,
                       int row_begin, int row_end, PreprocessCounters* counters) {
  const Pixel* pixels = static_cast<const Pixel*>(raw);
  const bool weighted = cosine.enabled;
  if (params.already_linear) {
    if (weighted) {
      preprocess_typed<Pixel, true, true>(pixels, tables, params, cosine, out, row_begin, row_end,
                                          counters);
    } else {
      preprocess_typed<Pixel, true, false>(pixels, tables, params, cosine, out, row_begin, row_end,
                                           counters);
    }
  } else if (weighted) {
    preprocess_typed<Pixel, false, true>(pixels, tables, params, cosine, out, row_begin, row_end,
                                         counters);
  } else {
    preprocess_typed<Pixel, false, false>(pixels, tables, params, cosine, out, row_begin, row_end,
                                          counters);
  }
}

}  // namespace

PreprocessTables make_preprocess_tables(DetectorShape shape, const std::vector<float>& dark,
                                        const std::vector<float>& flat) {
  if (shape.rows <= 0 || shape.cols <= 0) {
    throw std::invalid_argument("preprocess tables need a detector with rows and columns");
  }
  check_calibration_size(dark, shape, "dark field");
  check_calibration_size(flat, shape, "flat field");
  const std::size_t pixels = shape.pixels();
  PreprocessTables tables;
  tables.shape = shape;
  tables.dark.assign(pixels, 0.0f);
  tables.inv_gain.assign(pixels, 1.0f);
  for (std::size_t i = 0; i < pixels; ++i) {
    const float d = dark.empty() ? 0.0f : dark[i];
    if (!std::isfinite(d)) {
      tables.inv_gain[i] = 0.0f;  // a broken dark value makes the pixel unusable
      continue;
    }
    tables.dark[i] = d;
    if (!flat.empty()) {
      const float gain = flat[i] - d;
      // flat <= dark (or a non-finite flat) is a dead pixel: 0 marks it, the pass outputs 0.
      const float inverse = 1.0f / gain;
      tables.inv_gain[i] = gain > 0.0f && std::isfinite(inverse) ? inverse : 0.0f;
    }
  }
  return tables;
}

void preprocess_rows(const FrameView& raw, const PreprocessTables& tables,
                     const PreprocessParams& params, const CosineWeight& cosine, float* out,
                     int row_begin, int row_end, PreprocessCounters* counters) {
  if (raw.shape != tables.shape) {
    throw std::invalid_argument("frame shape differs from the preprocessing tables");
  }
  if (tables.dark.size() != tables.shape.pixels() ||
      tables.inv_gain.size() != tables.shape.pixels()) {
    throw std::invalid_argument("preprocessing tables are incomplete");
  }
  if (row_begin < 0 || row_end > raw.shape.rows || row_begin > row_end) {
    throw std::invalid_argument("preprocess row range outside the frame");
  }
  if (raw.data == nullptr || out == nullptr) {
    throw std::invalid_argument("preprocess needs input and output buffers");
  }
  if (!params.already_linear &&
      !(params.min_transmission > 0.0f && std::isfinite(params.min_transmission))) {
    throw std::invalid_argument("min_transmission must be a positive finite number");
  }
  switch (raw.type) {
    case PixelType::kUint16:
      preprocess_pixels<std::uint16_t>(raw.data, tables, params, cosine, out, row_begin, row_end,
                                       counters);
      return;
    case PixelType::kUint32:
      preprocess_pixels<std::uint32_t>(raw.data, tables, params, cosine, out, row_begin, row_end,
                                       counters);
      return;
    case PixelType::kFloat32:
      preprocess_pixels<float>(raw.data, tables, params, cosine, out, row_begin, row_end, counters);
      return;
  }
  throw std::invalid_argument("unknown pixel type");
}

}  // namespace slicestream::cpu

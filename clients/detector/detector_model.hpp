// The simulated detector's response: counts = dark + I0 exp(-line integral), optionally with
// Poisson photon noise, stored in the scan's pixel type.
#pragma once

#include <cstdint>

#include "clients/detector/frame_source.hpp"
#include "clients/detector/pixel_buffer.hpp"

namespace slicestream::detector {

struct DetectorModel {
  PixelType pixel_type = PixelType::kUint16;
  double flat_counts = 30000;  // I0: counts of an open-beam pixel above the dark level
  double dark_counts = 100;    // offset every pixel reports without beam (no noise of its own)
  bool poisson_noise = false;  // photon counts ~ Poisson(I0 exp(-line integral))
  std::uint64_t seed = 1;
  // Emit line integrals as float32 (no darks, no flats); with noise, -ln(counts / I0) of the noisy
  // photon counts (counts clamped to at least 1).
  bool already_linear = false;

  PixelType wire_pixel_type() const { return already_linear ? PixelType::kFloat32 : pixel_type; }
};

// Each frame draws its noise from its own stream, keyed by what the frame is, so the frames are
// reproducible for a seed whatever the order and threads that render them.
std::uint64_t noise_stream_key(FrameKind kind, std::uint64_t index_within_kind);

// Fills `out` (already shaped, of the model's wire pixel type). `line_integrals` (out.pixels()
// values) is the object's projection; nullptr means no object (a flat field). A dark frame is
// `beam_on` = false.
void expose(const DetectorModel& model, const float* line_integrals, bool beam_on,
            std::uint64_t noise_key, PixelBuffer& out);

}  // namespace slicestream::detector

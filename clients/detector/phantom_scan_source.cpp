#include "clients/detector/phantom_scan_source.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "clients/detector/moving_inclusion.hpp"

namespace slicestream::detector {

namespace {

constexpr double kTwoPi = 6.283185307179586;

void require(bool condition, const std::string& message) {
  if (!condition) throw std::invalid_argument(message);
}

SimulationConfig validated(SimulationConfig c) {
  require(c.rotations >= 1, "--rotations must be at least 1");
  require(c.darks >= 0 && c.flats >= 0, "the numbers of darks and flats cannot be negative");
  require(c.supersample >= 1 && c.supersample <= 16, "--supersample must be in 1..16");
  require(c.threads >= 1, "--threads must be at least 1");
  require(std::isfinite(c.detector.flat_counts) && c.detector.flat_counts > 0,
          "the flat-field intensity I0 must be positive");
  require(std::isfinite(c.detector.dark_counts) && c.detector.dark_counts >= 0,
          "the dark level cannot be negative");
  require(!c.detector.already_linear || (c.darks == 0 && c.flats == 0),
          "already-linear frames are line integrals: they take no darks or flats");
  require(std::isfinite(c.attenuation_per_mm), "the attenuation must be finite");
  if (c.placement == Placement::kAngle) {
    require(std::isfinite(c.angle_step_rad) && c.angle_step_rad > 0,
            "frames placed by angle need a positive angular step");
  }
  return c;
}

// The largest semi-axis of any ellipsoid: half the longest chord through the phantom.
double largest_semi_axis_mm(const std::vector<phantom::Ellipsoid>& phantom) {
  double largest = 0;
  for (const phantom::Ellipsoid& e : phantom) {
    largest = std::max({largest, e.semi_axes_mm.x, e.semi_axes_mm.y, e.semi_axes_mm.z});
  }
  return largest;
}

}  // namespace

PhantomScanSource::PhantomScanSource(SimulationConfig config)
    : config_(validated(std::move(config))), geometry_(config_.geometry) {
  require(config_.placement == Placement::kPosition || geometry_.is_circular(),
          "frames can only be placed by angle in a circular geometry (no vectors, no parallel-beam "
          "detector offset)");
  const VolumeBox& box = geometry_.volume();
  outer_attenuation_per_mm_ = config_.attenuation_per_mm;
  if (outer_attenuation_per_mm_ <= 0) {
    const double semi_axis_mm = largest_semi_axis_mm(phantom::shepp_logan_3d(box, 1.0));
    outer_attenuation_per_mm_ = kDefaultMaxLineIntegral / (2.0 * semi_axis_mm);
  }
  head_ = phantom::shepp_logan_3d(box, outer_attenuation_per_mm_);

  const int slots = geometry_.slot_count();
  const std::uint64_t projections =
      config_.projections > 0
          ? config_.projections
          : static_cast<std::uint64_t>(config_.rotations) * static_cast<std::uint64_t>(slots);
  sequence_ = {static_cast<std::uint64_t>(config_.darks), static_cast<std::uint64_t>(config_.flats),
               projections};

  // Positions repeat every rotation (slot placement) or every full turn (angle placement, when
  // 360 degrees is a whole number of steps; otherwise every frame is new).
  std::uint64_t period = static_cast<std::uint64_t>(slots);
  if (config_.placement == Placement::kAngle) {
    const double steps_per_turn = kTwoPi / config_.angle_step_rad;
    const double rounded = std::round(steps_per_turn);
    period = std::abs(steps_per_turn - rounded) < 1e-9 * steps_per_turn
                 ? static_cast<std::uint64_t>(rounded)
                 : sequence_.projections;
  }
  distinct_positions_ = static_cast<int>(std::min(period, sequence_.projections));

  const DetectorShape shape = geometry_.detector();
  const PixelType wire_type = config_.detector.wire_pixel_type();
  const bool encode_ahead = !config_.dynamic && !config_.detector.poisson_noise;
  const std::size_t bytes_per_position =
      shape.pixels() * (encode_ahead ? pixel_bytes(wire_type) : sizeof(float));
  cache_bytes_ = bytes_per_position * static_cast<std::size_t>(distinct_positions_);
  if (cache_bytes_ <= config_.cache_limit_bytes) {
    cache_mode_ = encode_ahead ? CacheMode::kEncoded : CacheMode::kLineIntegrals;
  } else {
    cache_bytes_ = 0;
  }

  if (!config_.detector.already_linear) {
    noiseless_dark_ = exposed(nullptr, false, 0);
    DetectorModel noiseless = config_.detector;
    noiseless.poisson_noise = false;
    auto flat = std::make_shared<PixelBuffer>(wire_type, shape);
    expose(noiseless, nullptr, true, 0, *flat);
    noiseless_flat_ = std::move(flat);
  }

  geometry_.fill_scan_begin(scan_begin_);
  scan_begin_.set_pixel_type(to_wire(wire_type));
  scan_begin_.set_dark_count(static_cast<std::uint32_t>(config_.darks));
  scan_begin_.set_flat_count(static_cast<std::uint32_t>(config_.flats));
  scan_begin_.set_already_linear(config_.detector.already_linear);
  scan_begin_.set_description(config_.description);
}

bool PhantomScanSource::prepare(const std::function<void(int, int)>& progress,
                                const std::atomic<bool>* cancel) {
  prepared_ = false;
  if (cache_mode_ == CacheMode::kNone) return true;
  const int total = distinct_positions_;
  encoded_cache_.assign(cache_mode_ == CacheMode::kEncoded ? total : 0, nullptr);
  line_integral_cache_.assign(cache_mode_ == CacheMode::kLineIntegrals ? total : 0, {});

  std::atomic<int> next{0};
  std::mutex mutex;  // guards `done`, `failure` and the progress callback
  int done = 0;
  std::exception_ptr failure;
  auto work = [&] {
    std::vector<float> projection;
    for (int position = next++; position < total; position = next++) {
      if (cancel && cancel->load()) return;
      try {
        projection.assign(geometry_.detector().pixels(), 0.0f);
        project_into(head_, vector_of(static_cast<std::uint64_t>(position)), projection.data());
        if (cache_mode_ == CacheMode::kEncoded) {
          encoded_cache_[position] = exposed(projection.data(), true, 0);
        } else {
          line_integral_cache_[position] = projection;
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
        next = total;
        return;
      }
      std::lock_guard<std::mutex> lock(mutex);
      ++done;
      if (progress) progress(done, total);
    }
  };
  const int workers = std::max(1, std::min(config_.threads, total));
  std::vector<std::thread> threads;
  for (int i = 1; i < workers; ++i)
    threads.emplace_back(work);
  work();
  for (std::thread& thread : threads)
    thread.join();
  if (failure) std::rethrow_exception(failure);
  prepared_ = done == total;
  return prepared_;
}

double PhantomScanSource::scan_fraction(std::uint64_t projection_index) const {
  if (sequence_.projections <= 1) return 0;
  return static_cast<double>(projection_index) / static_cast<double>(sequence_.projections - 1);
}

std::vector<phantom::Ellipsoid> PhantomScanSource::phantom_at(
    std::uint64_t projection_index) const {
  std::vector<phantom::Ellipsoid> phantom = head_;
  if (config_.dynamic) {
    phantom.push_back(moving_inclusion(geometry_.volume(), outer_attenuation_per_mm_,
                                       scan_fraction(projection_index)));
  }
  return phantom;
}

ProjectionVector PhantomScanSource::vector_of(std::uint64_t projection_index) const {
  const std::uint64_t slots = static_cast<std::uint64_t>(geometry_.slot_count());
  if (config_.placement == Placement::kPosition) {
    return geometry_.slot_geometry().vectors[projection_index % slots];
  }
  return geometry_.vector_at_angle(angle_of(projection_index));
}

double PhantomScanSource::angle_of(std::uint64_t projection_index) const {
  // Reduced to one turn first: a position gets bit-identical angles (and vectors) every turn.
  const std::uint64_t step_in_turn =
      projection_index % static_cast<std::uint64_t>(distinct_positions_);
  return geometry_.spec().slot_angles_rad.front() +
         static_cast<double>(step_in_turn) * config_.angle_step_rad;
}

void PhantomScanSource::project_into(const std::vector<phantom::Ellipsoid>& phantom,
                                     const ProjectionVector& vec, float* out) const {
  phantom::project(phantom, geometry_.beam(), vec, geometry_.detector(), out, config_.supersample);
}

void PhantomScanSource::line_integrals(std::uint64_t projection_index,
                                       std::vector<float>& out) const {
  const std::size_t pixels = geometry_.detector().pixels();
  const std::uint64_t position = projection_index % static_cast<std::uint64_t>(distinct_positions_);
  const ProjectionVector vec = vector_of(projection_index);
  if (prepared_ && cache_mode_ == CacheMode::kLineIntegrals) {
    out = line_integral_cache_[position];
  } else {
    out.assign(pixels, 0.0f);
    project_into(head_, vec, out.data());
  }
  if (config_.dynamic) {
    // Line integrals add up: the cached head plus the inclusion's own projection is exact.
    std::vector<float> inclusion(pixels, 0.0f);
    project_into({moving_inclusion(geometry_.volume(), outer_attenuation_per_mm_,
                                   scan_fraction(projection_index))},
                 vec, inclusion.data());
    for (std::size_t i = 0; i < pixels; ++i)
      out[i] += inclusion[i];
  }
}

std::shared_ptr<const PixelBuffer> PhantomScanSource::exposed(const float* line_integrals,
                                                              bool beam_on,
                                                              std::uint64_t noise_key) const {
  auto frame =
      std::make_shared<PixelBuffer>(config_.detector.wire_pixel_type(), geometry_.detector());
  expose(config_.detector, line_integrals, beam_on, noise_key, *frame);
  return frame;
}

OutgoingFrame PhantomScanSource::render(std::uint64_t frame) {
  OutgoingFrame out;
  out.kind = sequence_.kind_of(frame);
  const std::uint64_t index = sequence_.index_within_kind(frame);
  out.index = static_cast<std::uint32_t>(index);
  switch (out.kind) {
    case FrameKind::kDark:
      out.pixels = noiseless_dark_;  // no photons, so no photon noise
      return out;
    case FrameKind::kFlat:
      out.pixels = config_.detector.poisson_noise
                       ? exposed(nullptr, true, noise_stream_key(FrameKind::kFlat, index))
                       : noiseless_flat_;
      return out;
    case FrameKind::kProjection:
      break;
  }
  const std::uint64_t slots = static_cast<std::uint64_t>(geometry_.slot_count());
  out.position = static_cast<std::uint32_t>(index % slots);
  if (config_.placement == Placement::kAngle) out.angle_rad = angle_of(index);
  if (prepared_ && cache_mode_ == CacheMode::kEncoded) {
    out.pixels = encoded_cache_[index % static_cast<std::uint64_t>(distinct_positions_)];
    return out;
  }
  std::vector<float> projection;
  line_integrals(index, projection);
  out.pixels = exposed(projection.data(), true, noise_stream_key(FrameKind::kProjection, index));
  return out;
}

}  // namespace slicestream::detector

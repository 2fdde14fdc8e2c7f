#include "tests/support/ellipse_phantom_2d.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/solvers/cgls.hpp"

namespace slicestream::tensorcore {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Point and direction in the ellipse's frame, scaled to the unit circle.
struct UnitFrame {
  Vec2 point;
  Vec2 direction;
};

UnitFrame to_unit(const Ellipse2d& e, Vec2 point, Vec2 direction) {
  const double c = std::cos(e.angle_rad);
  const double s = std::sin(e.angle_rad);
  const Vec2 p = point - e.center_mm;
  return {{(c * p.x + s * p.y) / e.semi_axis_x_mm, (-s * p.x + c * p.y) / e.semi_axis_y_mm},
          {(c * direction.x + s * direction.y) / e.semi_axis_x_mm,
           (-s * direction.x + c * direction.y) / e.semi_axis_y_mm}};
}

}  // namespace

std::vector<Ellipse2d> shepp_logan_2d(double radius_mm, double outer_value) {
  // Toft's modified Shepp-Logan: value, a, b, x0, y0, phi (degrees), on [-1, 1]^2.
  const double table[10][6] = {
      {1.0, 0.69, 0.92, 0, 0, 0},        {-0.8, 0.6624, 0.8740, 0, -0.0184, 0},
      {-0.2, 0.11, 0.31, 0.22, 0, -18},  {-0.2, 0.16, 0.41, -0.22, 0, 18},
      {0.1, 0.21, 0.25, 0, 0.35, 0},     {0.1, 0.046, 0.046, 0, 0.1, 0},
      {0.1, 0.046, 0.046, 0, -0.1, 0},   {0.1, 0.046, 0.023, -0.08, -0.605, 0},
      {0.1, 0.023, 0.023, 0, -0.606, 0}, {0.1, 0.023, 0.046, 0.06, -0.605, 0},
  };
  std::vector<Ellipse2d> phantom;
  for (const auto& row : table) {
    phantom.push_back({{row[3] * radius_mm, row[4] * radius_mm},
                       row[1] * radius_mm,
                       row[2] * radius_mm,
                       row[5] * kPi / 180,
                       row[0] * outer_value});
  }
  return phantom;
}

double value_at(const std::vector<Ellipse2d>& phantom, Vec2 point_mm) {
  double v = 0;
  for (const Ellipse2d& e : phantom) {
    const UnitFrame f = to_unit(e, point_mm, {});
    if (dot(f.point, f.point) <= 1) v += e.value;
  }
  return v;
}

double line_integral(const std::vector<Ellipse2d>& phantom, Vec2 point_mm, Vec2 direction) {
  double total = 0;
  const double direction_len = std::sqrt(dot(direction, direction));
  for (const Ellipse2d& e : phantom) {
    // |p + t d|^2 = 1 in the unit frame: a t^2 + 2 b t + c = 0; chord in t is 2 sqrt(D) / a,
    // in mm times |direction|.
    const UnitFrame f = to_unit(e, point_mm, direction);
    const double a = dot(f.direction, f.direction);
    const double b = dot(f.point, f.direction);
    const double c = dot(f.point, f.point) - 1;
    const double discriminant = b * b - a * c;
    if (discriminant <= 0 || a <= 0) continue;
    total += e.value * 2 * std::sqrt(discriminant) / a * direction_len;
  }
  return total;
}

namespace {

// Row `row` of sample_phantom's image.
void sample_row(const std::vector<Ellipse2d>& phantom, const ImageGrid2d& grid, int supersample,
                long long row, float* out) {
  const double px = grid.pixel_mm;
  for (int col = 0; col < grid.width; ++col) {
    double sum = 0;
    for (int sy = 0; sy < supersample; ++sy) {
      for (int sx = 0; sx < supersample; ++sx) {
        const Vec2 p{
            (col + (sx + 0.5) / supersample - grid.width / 2.0) * px,
            (static_cast<double>(row) + (sy + 0.5) / supersample - grid.height / 2.0) * px};
        sum += value_at(phantom, p);
      }
    }
    out[col] = static_cast<float>(sum / (supersample * supersample));
  }
}

// Projection `a` of project_phantom's sinogram.
void project_angle(const std::vector<Ellipse2d>& phantom, const Geometry2d& geometry,
                   int supersample, std::size_t a, float* out) {
  const ProjectionVector2d& v = geometry.vectors[a];
  const int bins = geometry.bins;
  for (int b = 0; b < bins; ++b) {
    double sum = 0;
    for (int s = 0; s < supersample; ++s) {
      const Vec2 point = v.detector_center + (b + (s + 0.5) / supersample - bins / 2.0) * v.u;
      const Vec2 dir =
          geometry.beam == BeamKind::kParallel ? v.source_or_ray : point - v.source_or_ray;
      sum += line_integral(phantom, point, dir);
    }
    out[b] = static_cast<float>(sum / supersample);
  }
}

}  // namespace

std::vector<float> sample_phantom(Executor& executor, const std::vector<Ellipse2d>& phantom,
                                  const ImageGrid2d& grid, int supersample) {
  std::vector<float> image(static_cast<std::size_t>(grid.pixels()));
  executor.parallel_for(static_cast<std::size_t>(grid.height), 1,
                        [&](std::size_t begin, std::size_t end, int) {
                          for (std::size_t row = begin; row < end; ++row) {
                            sample_row(phantom, grid, supersample, static_cast<long long>(row),
                                       image.data() + row * static_cast<std::size_t>(grid.width));
                          }
                        });
  return image;
}

std::vector<float> project_phantom(Executor& executor, const std::vector<Ellipse2d>& phantom,
                                   const Geometry2d& geometry, int supersample) {
  std::vector<float> sinogram(static_cast<std::size_t>(geometry.rays()));
  executor.parallel_for(
      static_cast<std::size_t>(geometry.angles()), 1, [&](std::size_t begin, std::size_t end, int) {
        for (std::size_t a = begin; a < end; ++a) {
          project_angle(phantom, geometry, supersample, a,
                        sinogram.data() + a * static_cast<std::size_t>(geometry.bins));
        }
      });
  return sinogram;
}

PhantomProblem2d make_phantom_problem(Executor& executor, int size, int angles, int bins) {
  PhantomProblem2d p;
  p.grid = ImageGrid2d{size, size, 1.0};
  p.geometry =
      make_parallel_2d(uniform_angles(angles, kPi), bins, static_cast<double>(size) / bins);
  const std::vector<Ellipse2d> phantom = shepp_logan_2d(0.5 * size);
  p.truth = sample_phantom(executor, phantom, p.grid, 4);
  p.data = project_phantom(executor, phantom, p.geometry, 4);
  return p;
}

double relative_error(const std::vector<float>& x, const std::vector<float>& reference) {
  return solvers::relative_residual(x.data(), reference.data(), reference.size());
}

namespace {
float slice_scale(int s) {
  return 1.0f + 0.01f * static_cast<float>(s);
}
}  // namespace

std::vector<float> scaled_slices(const std::vector<float>& values, int slices) {
  const std::size_t n = static_cast<std::size_t>(slices);
  std::vector<float> out(values.size() * n);
  for (std::size_t r = 0; r < values.size(); ++r) {
    for (std::size_t s = 0; s < n; ++s)
      out[r * n + s] = values[r] * slice_scale(static_cast<int>(s));
  }
  return out;
}

std::vector<double> slice_errors(const std::vector<float>& x, const std::vector<float>& truth,
                                 int slices) {
  const std::size_t n = static_cast<std::size_t>(slices);
  std::vector<double> errors(n);
  std::vector<float> slice_x(truth.size()), slice_truth(truth.size());
  for (std::size_t s = 0; s < n; ++s) {
    for (std::size_t p = 0; p < truth.size(); ++p) {
      slice_x[p] = x[p * n + s];
      slice_truth[p] = truth[p] * slice_scale(static_cast<int>(s));
    }
    errors[s] = relative_error(slice_x, slice_truth);
  }
  return errors;
}

double furthest_slice_error(const std::vector<double>& errors, double reference) {
  double furthest = reference;
  for (double e : errors) {
    if (std::fabs(e - reference) > std::fabs(furthest - reference)) furthest = e;
  }
  return furthest;
}

}  // namespace slicestream::tensorcore

#include "kernels/phantom/ellipsoid_phantom.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace slicestream::phantom {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kDegree = kPi / 180.0;

// 3x3 matrix, rows first.
struct Matrix3 {
  double m[3][3];
  Vec3 operator*(Vec3 a) const {
    return {m[0][0] * a.x + m[0][1] * a.y + m[0][2] * a.z,
            m[1][0] * a.x + m[1][1] * a.y + m[1][2] * a.z,
            m[2][0] * a.x + m[2][1] * a.y + m[2][2] * a.z};
  }
};

// Rz(phi) Rx(theta) Rz(psi): its columns are the ellipsoid's own axes in world coordinates.
Matrix3 rotation(double phi, double theta, double psi) {
  const double cf = std::cos(phi), sf = std::sin(phi);
  const double ct = std::cos(theta), st = std::sin(theta);
  const double cp = std::cos(psi), sp = std::sin(psi);
  // Rz(phi) Rx(theta)
  const double a[3][3] = {{cf, -sf * ct, sf * st}, {sf, cf * ct, -cf * st}, {0, st, ct}};
  const double rz[3][3] = {{cp, -sp, 0}, {sp, cp, 0}, {0, 0, 1}};
  Matrix3 r{};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 3; ++k)
        r.m[i][j] += a[i][k] * rz[k][j];
    }
  }
  return r;
}

// World point to the ellipsoid's unit-sphere coordinates: q = S^-1 R^T (x - c), as a matrix
// and an offset so that the inner loops do one product per ellipsoid.
struct UnitFrame {
  Matrix3 to_unit;
  Vec3 center;
  double attenuation;
};

UnitFrame unit_frame(const Ellipsoid& e) {
  const Matrix3 r = rotation(e.phi_rad, e.theta_rad, e.psi_rad);
  const double inv_axes[3] = {1.0 / e.semi_axes_mm.x, 1.0 / e.semi_axes_mm.y,
                              1.0 / e.semi_axes_mm.z};
  UnitFrame f{};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j)
      f.to_unit.m[i][j] = inv_axes[i] * r.m[j][i];
  }
  f.center = e.center_mm;
  f.attenuation = e.attenuation_per_mm;
  return f;
}

std::vector<UnitFrame> unit_frames(const std::vector<Ellipsoid>& phantom) {
  std::vector<UnitFrame> frames;
  frames.reserve(phantom.size());
  for (const Ellipsoid& e : phantom) {
    if (!(e.semi_axes_mm.x > 0 && e.semi_axes_mm.y > 0 && e.semi_axes_mm.z > 0)) {
      throw std::invalid_argument("phantom ellipsoid with a non-positive semi-axis");
    }
    frames.push_back(unit_frame(e));
  }
  return frames;
}

double value_in_frames(const std::vector<UnitFrame>& frames, Vec3 point) {
  double value = 0;
  for (const UnitFrame& f : frames) {
    const Vec3 q = f.to_unit * (point - f.center);
    if (dot(q, q) <= 1.0) value += f.attenuation;
  }
  return value;
}

// |p + t d|^2 = 1 in unit-sphere coordinates: the chord spans t2 - t1 = 2 sqrt(disc) / |d|^2
// parameter units, i.e. (t2 - t1) |direction| millimetres of the world line.
double integral_in_frames(const std::vector<UnitFrame>& frames, Vec3 point, Vec3 direction) {
  const double direction_length = norm(direction);
  double total = 0;
  for (const UnitFrame& f : frames) {
    const Vec3 p = f.to_unit * (point - f.center);
    const Vec3 d = f.to_unit * direction;
    const double a = dot(d, d);
    const double b = dot(p, d);
    const double c = dot(p, p) - 1.0;
    const double disc = b * b - a * c;
    if (disc > 0) total += f.attenuation * 2.0 * std::sqrt(disc) / a * direction_length;
  }
  return total;
}

// The rays of one projection in an ellipsoid's unit-sphere frame, as affine functions of the
// detector position (dc, dr) relative to the detector centre, in pixels. Cone beam: all rays
// start at the source (constant point p) and point to the pixel (direction q0 + dc qu + dr qv);
// parallel beam: constant direction q, starting points p0 + dc pu + dr pv in the detector plane.
// project() then spends a few multiply-adds per ellipsoid and pixel instead of two 3x3 products.
struct RayFamily {
  Vec3 p0, pu, pv;
  Vec3 q0, qu, qv;
  double attenuation;
};

std::vector<RayFamily> ray_families(const std::vector<UnitFrame>& frames, BeamKind beam,
                                    const ProjectionVector& vector) {
  std::vector<RayFamily> families;
  families.reserve(frames.size());
  for (const UnitFrame& f : frames) {
    const Matrix3& m = f.to_unit;
    RayFamily family{};
    family.attenuation = f.attenuation;
    if (beam == BeamKind::kCone) {
      family.p0 = m * (vector.source_or_ray - f.center);
      family.q0 = m * (vector.detector_center - vector.source_or_ray);
      family.qu = m * vector.u;
      family.qv = m * vector.v;
    } else {
      family.p0 = m * (vector.detector_center - f.center);
      family.pu = m * vector.u;
      family.pv = m * vector.v;
      family.q0 = m * vector.source_or_ray;
    }
    families.push_back(family);
  }
  return families;
}

// Adds attenuation x chord of every ellipsoid for the rays at detector positions
// (dc0 + i, dr), i in [0, count), to sums[i], in units of the direction's parameter t (the caller
// multiplies by the direction's length in mm); the quadratic of integral_in_frames. The loop over
// i has no branches, so it vectorises.
template <bool kCone>
void add_chords(const std::vector<RayFamily>& families, double dc0, double dr, int count,
                double* sums) {
  for (const RayFamily& f : families) {
    for (int i = 0; i < count; ++i) {
      const double dc = dc0 + i;
      const Vec3 p = kCone ? f.p0 : f.p0 + dc * f.pu + dr * f.pv;
      const Vec3 q = kCone ? f.q0 + dc * f.qu + dr * f.qv : f.q0;
      const double a = dot(q, q);
      const double b = dot(p, q);
      const double c = dot(p, p) - 1.0;
      const double disc = b * b - a * c;
      const double chord = 2.0 * std::sqrt(disc > 0 ? disc : 0.0) / a;
      sums[i] += f.attenuation * chord;
    }
  }
}

// Modified Shepp-Logan (Toft's high-contrast intensities) in 3D, as in Schabel's phantom3d:
// intensity, semi-axes a b c, centre x y z, Euler angles phi theta psi (degrees).
struct UnitEllipsoid {
  double intensity, a, b, c, x, y, z, phi, theta, psi;
};
constexpr UnitEllipsoid kModifiedSheppLogan[] = {
    {1.0, 0.6900, 0.920, 0.810, 0.00, 0.0000, 0.00, 0, 0, 0},
    {-0.8, 0.6624, 0.874, 0.780, 0.00, -0.0184, 0.00, 0, 0, 0},
    {-0.2, 0.1100, 0.310, 0.220, 0.22, 0.0000, 0.00, -18, 0, 10},
    {-0.2, 0.1600, 0.410, 0.280, -0.22, 0.0000, 0.00, 18, 0, 10},
    {0.1, 0.2100, 0.250, 0.410, 0.00, 0.3500, -0.15, 0, 0, 0},
    {0.1, 0.0460, 0.046, 0.050, 0.00, 0.1000, 0.25, 0, 0, 0},
    {0.1, 0.0460, 0.046, 0.050, 0.00, -0.1000, 0.25, 0, 0, 0},
    {0.1, 0.0460, 0.023, 0.050, -0.08, -0.6050, 0.00, 0, 0, 0},
    {0.1, 0.0230, 0.023, 0.020, 0.00, -0.6060, 0.00, 0, 0, 0},
    {0.1, 0.0230, 0.046, 0.020, 0.06, -0.6050, 0.00, 0, 0, 0},
};

// Stretching by (sx, sy, sz) keeps an ellipsoid an ellipsoid. All table entries rotate about z
// only (theta = 0), so z stays a principal axis and the x-y cross-section is re-diagonalised:
// the quadratic form R diag(1/a^2, 1/b^2) R^T becomes S^-1 (...) S^-1.
Ellipsoid stretched(const UnitEllipsoid& u, Vec3 center, Vec3 half, double outer) {
  const double angle = (u.phi + u.psi) * kDegree;  // Rz(phi) Rz(psi) = Rz(phi + psi)
  const double c = std::cos(angle), s = std::sin(angle);
  const double ia = 1.0 / (u.a * u.a), ib = 1.0 / (u.b * u.b);
  const double qxx = (c * c * ia + s * s * ib) / (half.x * half.x);
  const double qyy = (s * s * ia + c * c * ib) / (half.y * half.y);
  const double qxy = (c * s * (ia - ib)) / (half.x * half.y);
  // Eigen-decomposition of [[qxx, qxy], [qxy, qyy]].
  const double mean = 0.5 * (qxx + qyy);
  const double radius = std::hypot(0.5 * (qxx - qyy), qxy);
  const double l1 = mean + radius;
  const double l2 = mean - radius;
  const double rot = 0.5 * std::atan2(2.0 * qxy, qxx - qyy);  // first eigenvector's angle
  Ellipsoid e;
  e.center_mm = {center.x + half.x * u.x, center.y + half.y * u.y, center.z + half.z * u.z};
  e.semi_axes_mm = {1.0 / std::sqrt(l1), 1.0 / std::sqrt(l2), half.z * u.c};
  e.phi_rad = rot;
  e.attenuation_per_mm = u.intensity * outer;
  return e;
}

}  // namespace

std::vector<Ellipsoid> shepp_logan_3d(const VolumeBox& box, double outer_attenuation_per_mm) {
  const Vec3 extent = box.extent();
  if (!(extent.x > 0 && extent.y > 0 && extent.z > 0)) {
    throw std::invalid_argument("phantom box must have a positive extent");
  }
  const Vec3 half = 0.45 * extent;  // 0.9 of the half-extents
  std::vector<Ellipsoid> phantom;
  for (const UnitEllipsoid& u : kModifiedSheppLogan) {
    phantom.push_back(stretched(u, box.center(), half, outer_attenuation_per_mm));
  }
  return phantom;
}

double value_at(const std::vector<Ellipsoid>& phantom, Vec3 point_mm) {
  return value_in_frames(unit_frames(phantom), point_mm);
}

double line_integral(const std::vector<Ellipsoid>& phantom, Vec3 point_mm, Vec3 direction) {
  return integral_in_frames(unit_frames(phantom), point_mm, direction);
}

void project(const std::vector<Ellipsoid>& phantom, BeamKind beam, const ProjectionVector& vector,
             DetectorShape detector, float* out, int supersample, int row_begin, int row_end) {
  if (row_end < 0) row_end = detector.rows;
  if (supersample < 1) throw std::invalid_argument("project: supersample must be >= 1");
  if (row_begin < 0 || row_end > detector.rows || row_begin > row_end) {
    throw std::invalid_argument("project: row range outside the detector");
  }
  const std::vector<RayFamily> families = ray_families(unit_frames(phantom), beam, vector);
  const bool cone = beam == BeamKind::kCone;
  const Vec3 source_to_center = vector.detector_center - vector.source_or_ray;
  const double ray_length = norm(vector.source_or_ray);  // parallel: |r|
  const int cols = detector.cols;
  const double col_center = 0.5 * cols - 0.5;
  const double row_center = 0.5 * detector.rows - 0.5;
  const double inv_samples = 1.0 / (supersample * supersample);
  std::vector<double> chords(static_cast<std::size_t>(cols));
  std::vector<double> totals(static_cast<std::size_t>(cols));
  for (int r = row_begin; r < row_end; ++r) {
    std::fill(totals.begin(), totals.end(), 0.0);
    for (int sr = 0; sr < supersample; ++sr) {
      const double dr = r - row_center + (sr + 0.5) / supersample - 0.5;
      for (int sc = 0; sc < supersample; ++sc) {
        const double dc0 = -col_center + (sc + 0.5) / supersample - 0.5;
        std::fill(chords.begin(), chords.end(), 0.0);
        if (cone) {
          add_chords<true>(families, dc0, dr, cols, chords.data());
        } else {
          add_chords<false>(families, dc0, dr, cols, chords.data());
        }
        for (int c = 0; c < cols; ++c) {
          // Cone: per unit of the source-to-pixel vector, whose length converts to millimetres.
          const double length =
              cone ? norm(source_to_center + (dc0 + c) * vector.u + dr * vector.v) : ray_length;
          totals[static_cast<std::size_t>(c)] += length * chords[static_cast<std::size_t>(c)];
        }
      }
    }
    float* row_out = out + static_cast<std::size_t>(r) * static_cast<std::size_t>(cols);
    for (int c = 0; c < cols; ++c) {
      row_out[c] = static_cast<float>(totals[static_cast<std::size_t>(c)] * inv_samples);
    }
  }
}

std::vector<float> sample(const std::vector<Ellipsoid>& phantom, const GridSpec& grid,
                          int supersample) {
  if (supersample < 1) throw std::invalid_argument("sample: supersample must be >= 1");
  const std::vector<UnitFrame> frames = unit_frames(phantom);
  // A slice (z_axis 0) has no thickness to sample; a volume cell does, even at depth 1.
  const bool has_thickness = grid.z_axis.x != 0 || grid.z_axis.y != 0 || grid.z_axis.z != 0;
  const int depth_samples = has_thickness ? supersample : 1;
  const double inv_samples = 1.0 / (supersample * supersample * depth_samples);
  const Vec3 base = to_vec3(grid.base);
  const Vec3 x_axis = to_vec3(grid.x_axis);
  const Vec3 y_axis = to_vec3(grid.y_axis);
  const Vec3 z_axis = to_vec3(grid.z_axis);
  std::vector<float> values(grid.points());
  std::size_t index = 0;
  for (int k = 0; k < grid.depth; ++k) {
    for (int j = 0; j < grid.height; ++j) {
      for (int i = 0; i < grid.width; ++i) {
        double total = 0;
        for (int sk = 0; sk < depth_samples; ++sk) {
          const double z = (k + (sk + 0.5) / depth_samples) / grid.depth;
          for (int sj = 0; sj < supersample; ++sj) {
            const double y = (j + (sj + 0.5) / supersample) / grid.height;
            for (int si = 0; si < supersample; ++si) {
              const double x = (i + (si + 0.5) / supersample) / grid.width;
              total += value_in_frames(frames, base + x * x_axis + y * y_axis + z * z_axis);
            }
          }
        }
        values[index++] = static_cast<float>(total * inv_samples);
      }
    }
  }
  return values;
}

}  // namespace slicestream::phantom

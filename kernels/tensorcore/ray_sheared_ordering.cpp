#include "kernels/tensorcore/ray_sheared_ordering.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace slicestream::tensorcore {

namespace {

constexpr double kPi = 3.14159265358979323846;

std::uint64_t morton(std::uint32_t x, std::uint32_t y) {
  std::uint64_t code = 0;
  for (int bit = 0; bit < 32; ++bit) {
    code |= static_cast<std::uint64_t>((x >> bit) & 1u) << (2 * bit);
    code |= static_cast<std::uint64_t>((y >> bit) & 1u) << (2 * bit + 1);
  }
  return code;
}

// Central ray direction angle in [0, pi).
double direction_angle(const Geometry2d& geometry, int projection) {
  const ProjectionVector2d& v = geometry.vectors[static_cast<std::size_t>(projection)];
  const Vec2 dir =
      geometry.beam == BeamKind::kParallel ? v.source_or_ray : v.detector_center - v.source_or_ray;
  double angle = std::atan2(dir.y, dir.x);
  angle = std::fmod(angle, kPi);
  if (angle < 0) angle += kPi;
  return angle;
}

// Signed difference a - b of two directions modulo pi, in (-pi/2, pi/2].
double direction_difference(double a, double b) {
  double d = std::fmod(a - b, kPi);
  if (d <= -kPi / 2) d += kPi;
  if (d > kPi / 2) d -= kPi;
  return d;
}

// Ranks of tiles (tx, ty) present in `present` along a Morton curve: slot base = rank * tile size.
std::vector<std::int64_t> morton_ranks(const std::vector<bool>& present, int tiles_x, int tiles_y) {
  std::vector<std::pair<std::uint64_t, std::int64_t>> order;
  for (int ty = 0; ty < tiles_y; ++ty) {
    for (int tx = 0; tx < tiles_x; ++tx) {
      const std::int64_t id = static_cast<std::int64_t>(ty) * tiles_x + tx;
      if (present[static_cast<std::size_t>(id)]) {
        order.emplace_back(morton(static_cast<std::uint32_t>(tx), static_cast<std::uint32_t>(ty)),
                           id);
      }
    }
  }
  std::sort(order.begin(), order.end());
  std::vector<std::int64_t> rank(present.size(), -1);
  for (std::size_t i = 0; i < order.size(); ++i) {
    rank[static_cast<std::size_t>(order[i].second)] = static_cast<std::int64_t>(i);
  }
  return rank;
}

IndexMapping sheared_layout(const ImageGrid2d& grid, double direction, int across_size,
                            int along_size) {
  const bool along_x = std::abs(std::cos(direction)) >= std::abs(std::sin(direction));
  // Along a ray, the across coordinate changes by `slope` per pixel along.
  const double slope = along_x ? std::tan(direction) : 1.0 / std::tan(direction);
  const int along_count = along_x ? grid.width : grid.height;
  const int across_count = along_x ? grid.height : grid.width;
  // Sheared across coordinate: across - round(slope * centred along); |slope| <= 1.
  auto sheared = [&](int along, int across) {
    return across - static_cast<int>(std::lround(slope * (along + 0.5 - along_count / 2.0)));
  };
  const int shift = along_count / 2 + 2;  // bound on |round(slope * centred along)|
  const int across_range = across_count + 2 * shift;
  const int tiles_x = (across_range + across_size - 1) / across_size;
  const int tiles_y = (along_count + along_size - 1) / along_size;
  std::vector<bool> present(static_cast<std::size_t>(tiles_x) * static_cast<std::size_t>(tiles_y),
                            false);
  auto tile_of = [&](int along, int across) {
    const int s = sheared(along, across) + shift;
    return static_cast<std::int64_t>(along / along_size) * tiles_x + s / across_size;
  };
  for (int along = 0; along < along_count; ++along) {
    for (int across = 0; across < across_count; ++across) {
      present[static_cast<std::size_t>(tile_of(along, across))] = true;
    }
  }
  const std::vector<std::int64_t> rank = morton_ranks(present, tiles_x, tiles_y);
  std::int64_t used_tiles = 0;
  for (bool p : present)
    used_tiles += p ? 1 : 0;
  std::vector<std::int32_t> slots(static_cast<std::size_t>(grid.pixels()));
  for (int row = 0; row < grid.height; ++row) {
    for (int col = 0; col < grid.width; ++col) {
      const int along = along_x ? col : row;
      const int across = along_x ? row : col;
      const int s = sheared(along, across) + shift;
      const std::int64_t tile = rank[static_cast<std::size_t>(tile_of(along, across))];
      slots[static_cast<std::size_t>(row) * static_cast<std::size_t>(grid.width) +
            static_cast<std::size_t>(col)] =
          static_cast<std::int32_t>(tile * across_size * along_size +
                                    (along % along_size) * across_size + s % across_size);
    }
  }
  return mapping_from_slots(std::move(slots), used_tiles * across_size * along_size);
}

void check_params(const RayShearedParams& p) {
  if (p.sectors < 1 || p.sectors > 64 || p.tile_across * p.tile_along != 16 || p.tile_across < 1 ||
      p.row_tile_bins < 1 || p.row_tile_projections < 1 ||
      32 % (p.row_tile_bins * p.row_tile_projections) != 0) {
    throw std::invalid_argument(
        "ray-sheared ordering: need 1..64 sectors, 16-pixel tiles and row tiles dividing 32");
  }
}

}  // namespace

RayShearedParams ray_sheared_params(int block_rows) {
  RayShearedParams p;
  if (block_rows == 16) {
    p.row_tile_bins = 4;
    p.row_tile_projections = 4;
  } else if (block_rows == 32) {
    p.row_tile_bins = 4;
    p.row_tile_projections = 8;
  }
  return p;
}

std::vector<int> projection_sectors(const Geometry2d& geometry, int sectors) {
  std::vector<int> out(static_cast<std::size_t>(geometry.angles()));
  const double width = kPi / sectors;
  for (int k = 0; k < geometry.angles(); ++k) {
    const int s = static_cast<int>(std::floor(direction_angle(geometry, k) / width + 0.5));
    out[static_cast<std::size_t>(k)] = s % sectors;
  }
  return out;
}

IndexMapping ray_sheared_row_mapping(const Geometry2d& geometry, const RayShearedParams& params) {
  check_params(params);
  const std::vector<int> sector = projection_sectors(geometry, params.sectors);
  const int bins = geometry.bins;
  const int bin_tiles = (bins + params.row_tile_bins - 1) / params.row_tile_bins;
  const int tile_rows = params.row_tile_bins * params.row_tile_projections;
  std::vector<std::int32_t> slots(static_cast<std::size_t>(geometry.rays()));
  long long base = 0;
  for (int s = 0; s < params.sectors; ++s) {
    // The sector's projections in order of direction, so that neighbours are adjacent.
    std::vector<std::pair<double, int>> members;
    const double center = s * kPi / params.sectors;
    for (int k = 0; k < geometry.angles(); ++k) {
      if (sector[static_cast<std::size_t>(k)] == s) {
        members.emplace_back(direction_difference(direction_angle(geometry, k), center), k);
      }
    }
    std::sort(members.begin(), members.end());
    const int projection_tiles =
        (static_cast<int>(members.size()) + params.row_tile_projections - 1) /
        params.row_tile_projections;
    std::vector<bool> present(
        static_cast<std::size_t>(bin_tiles) * static_cast<std::size_t>(projection_tiles), true);
    const std::vector<std::int64_t> rank = morton_ranks(present, bin_tiles, projection_tiles);
    for (std::size_t m = 0; m < members.size(); ++m) {
      const int pt = static_cast<int>(m) / params.row_tile_projections;
      const int pl = static_cast<int>(m) % params.row_tile_projections;
      for (int b = 0; b < bins; ++b) {
        const std::int64_t tile =
            rank[static_cast<std::size_t>(pt) * bin_tiles + b / params.row_tile_bins];
        slots[static_cast<std::size_t>(members[m].second) * bins + b] = static_cast<std::int32_t>(
            base + tile * tile_rows + pl * params.row_tile_bins + b % params.row_tile_bins);
      }
    }
    const long long sector_rows = static_cast<long long>(bin_tiles) * projection_tiles * tile_rows;
    base += (sector_rows + 31) / 32 * 32;
  }
  return mapping_from_slots(std::move(slots), base);
}

ColumnLayouts ray_sheared_columns(const Geometry2d& geometry, const ImageGrid2d& grid,
                                  const RayShearedParams& params) {
  check_params(params);
  const std::vector<int> sector = projection_sectors(geometry, params.sectors);
  std::vector<IndexMapping> layouts;
  for (int s = 0; s < params.sectors; ++s) {
    layouts.push_back(
        sheared_layout(grid, s * kPi / params.sectors, params.tile_across, params.tile_along));
  }
  std::vector<std::uint8_t> ray_layout(static_cast<std::size_t>(geometry.rays()));
  for (int k = 0; k < geometry.angles(); ++k) {
    for (int b = 0; b < geometry.bins; ++b) {
      ray_layout[static_cast<std::size_t>(k) * geometry.bins + b] =
          static_cast<std::uint8_t>(sector[static_cast<std::size_t>(k)]);
    }
  }
  return make_column_layouts(std::move(layouts), std::move(ray_layout));
}

}  // namespace slicestream::tensorcore

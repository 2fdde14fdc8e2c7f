#include "tests/support/operand_transforms_cpu.hpp"

namespace slicestream::tensorcore {

void map_rows(const IndexMapping& mapping, const float* in, float* out, int columns) {
  for (long long slot = 0; slot < mapping.mapped_size(); ++slot) {
    const std::int32_t original = mapping.to_original[static_cast<std::size_t>(slot)];
    for (int c = 0; c < columns; ++c) {
      out[slot * columns + c] =
          original < 0 ? 0.0f : in[static_cast<long long>(original) * columns + c];
    }
  }
}

void unmap_rows(const IndexMapping& mapping, const float* in, float* out, int columns) {
  for (long long i = 0; i < mapping.size(); ++i) {
    const long long slot = mapping.to_mapped[static_cast<std::size_t>(i)];
    for (int c = 0; c < columns; ++c)
      out[i * columns + c] = in[slot * columns + c];
  }
}

void replicate_columns(const ColumnLayouts& layouts, const float* image, float* out, int columns) {
  for (long long i = 0; i < layouts.mapped_size * columns; ++i)
    out[i] = 0;
  for (std::size_t l = 0; l < layouts.layouts.size(); ++l) {
    const IndexMapping& layout = layouts.layouts[l];
    for (long long p = 0; p < layout.size(); ++p) {
      const long long slot = layouts.offset[l] + layout.to_mapped[static_cast<std::size_t>(p)];
      for (int c = 0; c < columns; ++c)
        out[slot * columns + c] = image[p * columns + c];
    }
  }
}

void sum_columns(const ColumnLayouts& layouts, const float* in, float* image, int columns) {
  const long long pixels = layouts.pixels();
  for (long long i = 0; i < pixels * columns; ++i)
    image[i] = 0;
  for (std::size_t l = 0; l < layouts.layouts.size(); ++l) {
    const IndexMapping& layout = layouts.layouts[l];
    for (long long p = 0; p < pixels; ++p) {
      const long long slot = layouts.offset[l] + layout.to_mapped[static_cast<std::size_t>(p)];
      for (int c = 0; c < columns; ++c)
        image[p * columns + c] += in[slot * columns + c];
    }
  }
}

void symmetric_gather(const SymmetryPlan& plan, const float* image, float* x_oct, int slices) {
  const long long pixels = static_cast<long long>(plan.width) * plan.width;
  const int columns = kSymmetryCount * slices;
  for (long long i = 0; i < pixels * columns; ++i)
    x_oct[i] = 0;
  for (std::size_t i = 0; i < plan.octant_pixels.size(); ++i) {
    const long long q = plan.octant_pixels[i];
    for (int s = 0; s < slices; ++s) {
      for (int g = 0; g < kSymmetryCount; ++g) {
        const long long p = plan.pixel_image[static_cast<std::size_t>(g)][i];
        x_oct[q * columns + s * kSymmetryCount + g] = image[p * slices + s];
      }
    }
  }
}

void symmetric_combine(const SymmetryPlan& plan, const float* y_oct, float* y, int slices) {
  const int columns = kSymmetryCount * slices;
  for (long long r = 0; r < plan.rays; ++r) {
    for (int s = 0; s < slices; ++s) {
      double sum = 0;
      for (int g = 0; g < kSymmetryCount; ++g) {
        const long long source =
            plan.ray_image[static_cast<std::size_t>(kInverseSymmetry[static_cast<std::size_t>(g)])]
                          [static_cast<std::size_t>(r)];
        sum += y_oct[source * columns + s * kSymmetryCount + g];
      }
      y[r * slices + s] = static_cast<float>(sum);
    }
  }
}

void symmetric_spread(const SymmetryPlan& plan, const float* y, float* z, int slices) {
  const int columns = kSymmetryCount * slices;
  for (long long r = 0; r < plan.rays; ++r) {
    for (int s = 0; s < slices; ++s) {
      for (int g = 0; g < kSymmetryCount; ++g) {
        const long long target =
            plan.ray_image[static_cast<std::size_t>(g)][static_cast<std::size_t>(r)];
        z[r * columns + s * kSymmetryCount + g] = y[target * slices + s];
      }
    }
  }
}

void symmetric_scatter(const SymmetryPlan& plan, const float* s_oct, float* image, int slices) {
  const long long pixels = static_cast<long long>(plan.width) * plan.width;
  const int columns = kSymmetryCount * slices;
  for (long long i = 0; i < pixels * slices; ++i)
    image[i] = 0;
  for (std::size_t i = 0; i < plan.octant_pixels.size(); ++i) {
    const long long q = plan.octant_pixels[i];
    for (int s = 0; s < slices; ++s) {
      for (int g = 0; g < kSymmetryCount; ++g) {
        const long long p = plan.pixel_image[static_cast<std::size_t>(g)][i];
        image[p * slices + s] += s_oct[q * columns + s * kSymmetryCount + g];
      }
    }
  }
}

}  // namespace slicestream::tensorcore

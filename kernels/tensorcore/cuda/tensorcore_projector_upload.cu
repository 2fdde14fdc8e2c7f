// The upload of a TensorCoreProjector's matrix: the BSR blocks and their indices, the operand
// and result renumbering maps (symmetry transforms included) and, where the gathered products
// apply, both directions' grouped blocks and the gather tables.
#include <stdexcept>
#include <vector>

#include "kernels/tensorcore/cuda/tensorcore_projector_impl.hpp"
#include "kernels/tensorcore/symmetric_gather.hpp"

namespace slicestream::tensorcore::cuda {

void TensorCoreProjector::Impl::upload_matrix() {
  const BsrMatrixHalf& bsr = m->bsr;
  std::vector<std::uint16_t> padded_blocks(bsr.blocks);
  padded_blocks.resize(padded_blocks.size() + static_cast<std::size_t>(bsr.block_elements()), 0);
  blocks = DeviceBuffer(padded_blocks);
  row_ptr = DeviceBuffer(bsr.row_ptr);
  col_index = DeviceBuffer(bsr.col_index);
  col_ptr = DeviceBuffer(bsr.col_ptr);
  col_blocks = DeviceBuffer(bsr.col_blocks);
  col_block_rows = DeviceBuffer(bsr.col_block_rows);

  const long long pixels = m->grid.pixels();
  const long long rays = m->geometry.rays();
  const ColumnLayouts& cl = m->col_layouts;
  layouts = static_cast<int>(cl.layouts.size());
  const SymmetryPlan* plan = m->symmetry.get();

  // Canonical octant representative and transform mask of every pixel (symmetric only).
  std::vector<int> canonical(static_cast<std::size_t>(pixels), -1);
  std::vector<unsigned char> mask(static_cast<std::size_t>(pixels), 0);
  std::vector<int> octant(plan != nullptr ? static_cast<std::size_t>(8 * pixels) : 0, -1);
  if (plan != nullptr) {
    for (std::size_t i = 0; i < plan->octant_pixels.size(); ++i) {
      const int q = plan->octant_pixels[i];
      for (int t = 0; t < 8; ++t) {
        const int p = plan->pixel_image[static_cast<std::size_t>(t)][i];
        canonical[static_cast<std::size_t>(p)] = q;
        mask[static_cast<std::size_t>(p)] |= static_cast<unsigned char>(1u << t);
        octant[static_cast<std::size_t>(t * pixels + q)] = p;
      }
    }
  }

  std::vector<int> cols(static_cast<std::size_t>(bsr.cols), -1);
  std::vector<int> slots(static_cast<std::size_t>(layouts * pixels));
  for (int l = 0; l < layouts; ++l) {
    const IndexMapping& layout = cl.layouts[static_cast<std::size_t>(l)];
    const long long offset = cl.offset[static_cast<std::size_t>(l)];
    for (long long p = 0; p < pixels; ++p) {
      const long long slot = offset + layout.to_mapped[static_cast<std::size_t>(p)];
      if (plan == nullptr || plan->column_factor[static_cast<std::size_t>(p)] > 0) {
        cols[static_cast<std::size_t>(slot)] = static_cast<int>(p);
      }
      const long long source = plan == nullptr ? p : canonical[static_cast<std::size_t>(p)];
      slots[static_cast<std::size_t>(l * pixels + p)] =
          static_cast<int>(offset + layout.to_mapped[static_cast<std::size_t>(source)]);
    }
  }
  col_source = DeviceBuffer(cols);
  pixel_slots = DeviceBuffer(slots);

  std::vector<int> rows(static_cast<std::size_t>(bsr.rows), -1);
  for (long long r = 0; r < rays; ++r) {
    rows[static_cast<std::size_t>(m->row_mapping.to_mapped[static_cast<std::size_t>(r)])] =
        static_cast<int>(r);
  }
  row_source = DeviceBuffer(rows);
  std::vector<int> ray_slots(static_cast<std::size_t>((plan != nullptr ? 8 : 1) * rays));
  std::vector<int> images(plan != nullptr ? static_cast<std::size_t>(8 * rays) : 0);
  for (long long r = 0; r < rays; ++r) {
    if (plan == nullptr) {
      ray_slots[static_cast<std::size_t>(r)] =
          m->row_mapping.to_mapped[static_cast<std::size_t>(r)];
      continue;
    }
    for (int t = 0; t < 8; ++t) {
      const int source =
          plan->ray_image[static_cast<std::size_t>(kInverseSymmetry[static_cast<std::size_t>(t)])]
                         [static_cast<std::size_t>(r)];
      ray_slots[static_cast<std::size_t>(t * rays + r)] =
          m->row_mapping.to_mapped[static_cast<std::size_t>(source)];
      images[static_cast<std::size_t>(t * rays + r)] =
          plan->ray_image[static_cast<std::size_t>(t)][static_cast<std::size_t>(r)];
    }
  }
  ray_slot = DeviceBuffer(ray_slots);
  if (plan != nullptr) {
    ray_image = DeviceBuffer(images);
    octant_image = DeviceBuffer(octant);
    transform_mask = DeviceBuffer(mask);
  }
}

void TensorCoreProjector::Impl::DeviceGroupedBlocks::upload_from(const GroupedBlocks& g) {
  blocks = DeviceBuffer(g.blocks);
  group_chunk = DeviceBuffer(g.group_chunk);
  chunk_tile = DeviceBuffer(g.chunk_tile);
  chunk_block = DeviceBuffer(g.chunk_block);
  chunk_mask = DeviceBuffer(g.chunk_mask);
  groups = static_cast<int>(g.group_count());
}

void TensorCoreProjector::Impl::DeviceGroupedBlocks::describe(GatheredSpmmArgs& a) const {
  a.blocks = blocks.data();
  a.group_chunk = group_chunk.data();
  a.chunk_tile = chunk_tile.data();
  a.chunk_mask = chunk_mask.data();
  a.chunk_block = chunk_block.data();
  a.group_count = groups;
}

void TensorCoreProjector::Impl::upload_gathered() {
  if (m->symmetry == nullptr || !gathered_symmetry_problem(*m).empty() ||
      m->gathered_forward.block_count() == 0) {
    return;
  }
  if (m->gathered_backward.rows != m->bsr.cols || m->gathered_backward.cols != m->bsr.rows ||
      m->gathered_forward.rows != m->bsr.rows || m->gathered_forward.cols != m->bsr.cols) {
    throw std::logic_error("TensorCoreProjector: the grouped blocks do not match A_oct's");
  }
  const SymmetricGatherTables tables = make_symmetric_gather_tables(*m);
  gathered_fwd.upload_from(m->gathered_forward);
  gathered_bwd.upload_from(m->gathered_backward);
  ray_of_row = DeviceBuffer(tables.ray_of_row);
  pixel_of_col = DeviceBuffer(tables.pixel_of_col);
  gathered_available = true;
}

}  // namespace slicestream::tensorcore::cuda

#include "tests/support/bsr_multiply_cpu.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/half_float.hpp"

namespace slicestream::tensorcore {

namespace {

// The block products of one output tile (a block row forward, a block column transposed), in the
// kernels' order: blocks in storage order (forward) or column-index order (transposed). A block
// is seen in its orientation: out_count outputs x in_count inputs, weight(o, i); the inputs run
// in k-steps of at most 16 (a 32-row block transposed takes two; an 8-row one a single step, the
// kernels' 8 zero rays of padding adding nothing).
struct OrientedBlocks {
  const BsrMatrixHalf& bsr;
  bool transposed;
  int out_count() const { return transposed ? bsr.block_cols : bsr.block_rows; }
  int in_count() const { return transposed ? bsr.block_rows : bsr.block_cols; }
  long long tiles() const { return transposed ? bsr.block_col_count() : bsr.block_row_count(); }
  // Calls visit(weight, in_tile) for every block of tile t, weight(o, i) the fp16 weight.
  template <class Visit>
  void for_each_block(long long t, const Visit& visit) const {
    const std::vector<std::int32_t>& ptr = transposed ? bsr.col_ptr : bsr.row_ptr;
    for (std::int32_t e = ptr[static_cast<std::size_t>(t)];
         e < ptr[static_cast<std::size_t>(t) + 1]; ++e) {
      const std::int32_t b = transposed ? bsr.col_blocks[static_cast<std::size_t>(e)] : e;
      const long long in_tile = transposed ? bsr.col_block_rows[static_cast<std::size_t>(e)]
                                           : bsr.col_index[static_cast<std::size_t>(e)];
      const std::uint16_t* block =
          bsr.blocks.data() + static_cast<long long>(b) * bsr.block_elements();
      const int cols = bsr.block_cols;
      const bool t_ = transposed;
      visit(
          [block, cols, t_](int o, int i) {
            return half_to_float(t_ ? block[i * cols + o] : block[o * cols + i]);
          },
          in_tile);
    }
  }
};

// The tensor core model (mma_accumulation_model.hpp) for one output tile: chain[] holds the running
// accumulators, sum[] the fp32 sums they are added to at the end of each chain.
struct EmulatedTile {
  std::vector<float> chain, sum;
  int blocks_in_chain = 0;

  explicit EmulatedTile(std::size_t outputs) : chain(outputs, 0.0f), sum(outputs, 0.0f) {}
  // Before each block: a new chain every `chain_blocks` blocks (the kernels' fresh fragment).
  void begin_block(const MmaAccumulation& model) {
    if (model.chain_blocks > 0 && blocks_in_chain == model.chain_blocks) flush();
    ++blocks_in_chain;
  }
  void flush() {
    for (std::size_t i = 0; i < chain.size(); ++i) {
      sum[i] += chain[i];  // fp32, round to nearest
      chain[i] = 0.0f;
    }
    blocks_in_chain = 0;
  }
};

void check_model(const MmaAccumulation& model) {
  if (model.emulate && (model.step_products <= 0 || model.extra_bits < 0 || model.extra_bits > 20 ||
                        model.chain_blocks < 0)) {
    throw std::invalid_argument("BSR: invalid tensor core accumulation model");
  }
}

// One output tile with exact products and sums (double).
void exact_tile(const OrientedBlocks& blocks, const float* in, float* out_tile, int columns,
                long long t) {
  const int out_count = blocks.out_count();
  const int in_count = blocks.in_count();
  const std::size_t c_count = static_cast<std::size_t>(columns);
  const std::size_t outputs = static_cast<std::size_t>(out_count) * c_count;
  std::vector<double> acc(outputs, 0.0);
  blocks.for_each_block(t, [&](const auto& weight, long long in_tile) {
    const float* in_block = in + static_cast<std::size_t>(in_tile) * in_count * c_count;
    for (int o = 0; o < out_count; ++o) {
      for (int i = 0; i < in_count; ++i) {
        const double w = weight(o, i);
        if (w == 0) continue;
        for (std::size_t c = 0; c < c_count; ++c)
          acc[o * c_count + c] += w * in_block[i * c_count + c];
      }
    }
  });
  for (std::size_t i = 0; i < outputs; ++i)
    out_tile[i] = static_cast<float>(acc[i] * blocks.bsr.value_scale);
}

// One output tile through the tensor core model, in the kernels' k-steps and chains.
void emulated_tile(const OrientedBlocks& blocks, const float* in, float* out_tile, int columns,
                   const MmaAccumulation& model, long long t) {
  const int out_count = blocks.out_count();
  const int in_count = blocks.in_count();
  const int step_inputs = std::min(in_count, 16);
  const std::size_t c_count = static_cast<std::size_t>(columns);
  const std::size_t outputs = static_cast<std::size_t>(out_count) * c_count;
  EmulatedTile tile(outputs);
  std::vector<double> products(static_cast<std::size_t>(step_inputs));
  const int keep_bits = 24 + model.extra_bits;
  blocks.for_each_block(t, [&](const auto& weight, long long in_tile) {
    tile.begin_block(model);
    const float* in_block = in + static_cast<std::size_t>(in_tile) * in_count * c_count;
    for (int first = 0; first < in_count; first += step_inputs) {  // the kernels' k-steps
      for (int o = 0; o < out_count; ++o) {
        for (std::size_t c = 0; c < c_count; ++c) {
          for (int i = 0; i < step_inputs; ++i) {
            products[static_cast<std::size_t>(i)] =
                static_cast<double>(weight(o, first + i)) *
                static_cast<double>(in_block[(first + i) * c_count + c]);
          }
          float& acc = tile.chain[o * c_count + c];
          for (int f = 0; f < step_inputs; f += model.step_products) {  // the model's steps
            acc = mma_model::step(acc, products.data() + f,
                                  std::min(model.step_products, step_inputs - f), keep_bits);
          }
        }
      }
    }
  });
  tile.flush();
  for (std::size_t i = 0; i < outputs; ++i)
    out_tile[i] = static_cast<float>(static_cast<double>(tile.sum[i]) * blocks.bsr.value_scale);
}

// out (tiles x out_count rows) = the oriented blocks times in (in_count rows per in_tile), one
// output tile per index of the loop.
void multiply_blocks(Executor& executor, const OrientedBlocks& blocks, const float* in, float* out,
                     int columns, const MmaAccumulation& model) {
  check_model(model);
  const std::size_t outputs =
      static_cast<std::size_t>(blocks.out_count()) * static_cast<std::size_t>(columns);
  executor.parallel_for(static_cast<std::size_t>(blocks.tiles()), 1,
                        [&](std::size_t begin, std::size_t end, int) {
                          for (std::size_t t = begin; t < end; ++t) {
                            const auto tile = static_cast<long long>(t);
                            if (model.emulate) {
                              emulated_tile(blocks, in, out + t * outputs, columns, model, tile);
                            } else {
                              exact_tile(blocks, in, out + t * outputs, columns, tile);
                            }
                          }
                        });
}

}  // namespace

void bsr_multiply_cpu(Executor& executor, const BsrMatrixHalf& bsr, const float* x, float* y,
                      int columns, const MmaAccumulation& accumulation) {
  multiply_blocks(executor, OrientedBlocks{bsr, false}, x, y, columns, accumulation);
}

void bsr_multiply_transposed_cpu(Executor& executor, const BsrMatrixHalf& bsr, const float* y,
                                 float* x, int columns, const MmaAccumulation& accumulation) {
  multiply_blocks(executor, OrientedBlocks{bsr, true}, y, x, columns, accumulation);
}

}  // namespace slicestream::tensorcore

// How the fp16 BSR products accumulate. Following the published analyses of NVIDIA tensor core
// arithmetic (Fasi, Higham, Mikaitis, Pranesh 2021, "Numerical behavior of NVIDIA tensor cores";
// Khattak, Mikaitis 2025, "Accurate models of NVIDIA tensor cores"), one MMA k-step forms its
// fp16 x fp16 products exactly, aligns them and the fp32 accumulator to the largest exponent among
// them, truncates the aligned significands and rounds the sum toward zero to fp32. A long
// accumulation chain therefore loses the low bits of every product against a large accumulator,
// always toward zero: a bias of order (k-steps in the chain) x 2^-21 relative to the sum.
//
// The WMMA kernels keep such chains short (kMmaChainBlocks): each group of blocks accumulates in
// a fresh fragment, which is then added to an fp32 sum with ordinary round-to-nearest adds. A CPU
// model of this arithmetic, which the tests and the CPU accuracy benchmark use, is in
// tests/support/mma_accumulation_model.hpp.
#pragma once

namespace slicestream::tensorcore {

// Blocks per accumulation chain in the WMMA kernels (their unroll depth): each group of this many
// consecutive blocks of a block row (forward) or block column (transposed), counted from the first
// block, accumulates in a fresh fragment that is then added to the fp32 sum.
inline constexpr int kMmaChainBlocks = 4;

}  // namespace slicestream::tensorcore

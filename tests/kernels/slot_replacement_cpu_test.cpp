// cpu::replace_slot, the CPU twin of the projection store's replacement pass: rows read at their
// pitch (the padding never reaches the slot), fp16 rounding to nearest with ties to even before
// the difference is taken and of the difference into its fp16 scratch texel, every scratch
// content, and its refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "tests/support/slot_replacement_cpu.hpp"

namespace slicestream {
namespace {

constexpr DetectorShape kShape{2, 3};
constexpr int kPitch = 5;
constexpr float kPad = 1e30f;  // what the filter leaves beyond the detector's columns

// Two rows of three values, five floats apart.
const std::vector<float> kFresh = {1.0f, -2.5f, 0.25f, kPad, kPad, 3.75f, 0.5f, -1.0f, kPad, kPad};
const std::vector<float> kOld = {0.5f, 0.5f, 0.5f, -1.0f, 2.0f, 4.0f};

TEST(SlotReplacementCpu, CropsThePaddedRowsAndLeavesTheDifference) {
  std::vector<float> slot = kOld;
  std::vector<float> scratch;
  cpu::replace_slot(kShape, {kFresh.data(), kPitch}, cpu::SlotTexels::kFloat32,
                    cpu::SlotScratch::kDifference, slot, scratch);
  EXPECT_EQ(slot, (std::vector<float>{1.0f, -2.5f, 0.25f, 3.75f, 0.5f, -1.0f}));
  EXPECT_EQ(scratch, (std::vector<float>{0.5f, -3.0f, -0.25f, 4.75f, -1.5f, -5.0f}));
}

TEST(SlotReplacementCpu, KeepsTheOldProjectionOrNothing) {
  std::vector<float> slot = kOld;
  std::vector<float> scratch;
  cpu::replace_slot(kShape, {kFresh.data(), kPitch}, cpu::SlotTexels::kFloat32,
                    cpu::SlotScratch::kOldProjection, slot, scratch);
  EXPECT_EQ(scratch, kOld);
  std::vector<float> untouched = {7.0f};
  cpu::replace_slot(kShape, {kFresh.data(), kPitch}, cpu::SlotTexels::kFloat32,
                    cpu::SlotScratch::kUnchanged, slot, untouched);
  EXPECT_EQ(untouched, std::vector<float>{7.0f});
  EXPECT_EQ(slot[4], 0.5f);
}

TEST(SlotReplacementCpu, RoundsToHalfBeforeTheDifference) {
  // 1 + 2^-11 lies halfway between two fp16 values: ties go to the even one (1.0); 1 + 3 * 2^-12
  // rounds up to 1 + 2^-10; 70000 and -1e9 lie beyond fp16's range (they would round to
  // infinity) and are clamped to +-65504, NaN is zeroed.
  const float tie = 1.0f + std::ldexp(1.0f, -11);
  const float up = 1.0f + 3.0f * std::ldexp(1.0f, -12);
  const std::vector<float> fresh = {tie, up, 70000.0f, -tie, std::nanf(""), -1e9f};
  std::vector<float> slot = {1.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  std::vector<float> scratch;
  cpu::replace_slot(kShape, {fresh.data(), kShape.cols}, cpu::SlotTexels::kFloat16,
                    cpu::SlotScratch::kDifference, slot, scratch);
  EXPECT_EQ(slot[0], 1.0f);
  EXPECT_EQ(slot[1], 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(slot[2], 65504.0f);
  EXPECT_EQ(slot[3], -1.0f);
  EXPECT_EQ(slot[4], 0.0f);
  EXPECT_EQ(slot[5], -65504.0f);
  EXPECT_EQ(scratch[0], 0.0f);  // the difference of the stored values, not of the inputs
  EXPECT_EQ(scratch[1], std::ldexp(1.0f, -10));
  EXPECT_EQ(scratch[2], 65504.0f);
  EXPECT_EQ(cpu::as_stored(tie, cpu::SlotTexels::kFloat32), tie);
}

TEST(SlotReplacementCpu, RoundsAndClampsTheDifferenceIntoItsHalfTexel) {
  // The difference of two stored values is exact in fp32 and rounded to nearest into its fp16
  // scratch texel: 2048 - (1 + 2^-10) = 2046.999.. becomes 2047 (fp16 steps by 1 there); one
  // beyond +-65504 is clamped; a difference fp16 holds stays exact.
  const std::vector<float> fresh = {2048.0f, 65504.0f, -65504.0f, 0.75f, 3.0f, -2.0f};
  std::vector<float> slot = {1.0f + std::ldexp(1.0f, -10), -65504.0f, 1000.0f, 0.5f, 3.0f, 2.0f};
  std::vector<float> scratch;
  cpu::replace_slot(kShape, {fresh.data(), kShape.cols}, cpu::SlotTexels::kFloat16,
                    cpu::SlotScratch::kDifference, slot, scratch);
  EXPECT_EQ(scratch, (std::vector<float>{2047.0f, 65504.0f, -65504.0f, 0.25f, 0.0f, -4.0f}));
  EXPECT_EQ(slot, fresh);
  std::vector<float> exact = {1.0f + std::ldexp(1.0f, -10), 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  cpu::replace_slot(kShape, {fresh.data(), kShape.cols}, cpu::SlotTexels::kFloat32,
                    cpu::SlotScratch::kDifference, exact, scratch);
  EXPECT_EQ(scratch[0], 2048.0f - (1.0f + std::ldexp(1.0f, -10)));
}

TEST(SlotReplacementCpu, RefusesBadShapes) {
  std::vector<float> slot = kOld;
  std::vector<float> scratch;
  EXPECT_THROW(cpu::replace_slot(kShape, {kFresh.data(), 2}, cpu::SlotTexels::kFloat32,
                                 cpu::SlotScratch::kDifference, slot, scratch),
               std::invalid_argument);
  EXPECT_THROW(cpu::replace_slot(kShape, {nullptr, kPitch}, cpu::SlotTexels::kFloat32,
                                 cpu::SlotScratch::kDifference, slot, scratch),
               std::invalid_argument);
  std::vector<float> short_slot(5, 0.0f);
  EXPECT_THROW(cpu::replace_slot(kShape, {kFresh.data(), kPitch}, cpu::SlotTexels::kFloat32,
                                 cpu::SlotScratch::kDifference, short_slot, scratch),
               std::invalid_argument);
}

}  // namespace
}  // namespace slicestream

// SliceValues: a slice image's values, its own vector or a shared view of a buffer that an owner
// keeps alive. Reading never copies; writing gives shared values a copy of their own first; the
// owner lives exactly as long as some copy of the view does.
#include "pipeline/messages/slice_values.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "tests/kernels/test_support.hpp"

namespace slicestream {
namespace {

// Fresh values every run.
std::vector<float> random_values(std::size_t count) {
  static test::RandomSource random;
  return random.floats(count, -3.0, 5.0);
}

// A buffer with a flag that tells when it is gone.
struct Buffer {
  Buffer(std::vector<float> v, bool& gone) : values(std::move(v)), freed(gone) {}
  ~Buffer() { freed = true; }
  std::vector<float> values;
  bool& freed;
};

SliceValues view_of(const std::shared_ptr<Buffer>& buffer) {
  return SliceValues::shared(buffer, buffer->values.data(), buffer->values.size());
}

TEST(SliceValues, OwnValuesBehaveLikeAVector) {
  const std::vector<float> reference = random_values(257);
  SliceValues values = reference;
  EXPECT_FALSE(values.is_shared());
  EXPECT_EQ(values.size(), reference.size());
  EXPECT_EQ(values.to_vector(), reference);
  values.resize(300);
  values[299] = 7.5f;
  EXPECT_EQ(values.size(), 300u);
  EXPECT_EQ(values[299], 7.5f);
  const float* address = values.data();
  std::vector<float> taken = std::move(values).take_vector();
  EXPECT_EQ(taken.data(), address) << "own values are moved out, not copied";
}

TEST(SliceValues, ASharedViewReadsTheOwnersBufferWithoutCopying) {
  bool freed = false;
  auto buffer = std::make_shared<Buffer>(random_values(1000), freed);
  const std::vector<float> reference = buffer->values;
  const SliceValues values = view_of(buffer);
  EXPECT_TRUE(values.is_shared());
  EXPECT_EQ(values.data(), buffer->values.data());
  EXPECT_EQ(values.to_vector(), reference);
  EXPECT_EQ(values[17], reference[17]);
  const SliceValues copy = values;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_EQ(copy.data(), buffer->values.data()) << "a copy shares the buffer";
  EXPECT_EQ(copy, values);
}

TEST(SliceValues, TheOwnerLivesUntilTheLastViewIsGone) {
  bool freed = false;
  auto buffer = std::make_shared<Buffer>(random_values(64), freed);
  auto first = std::make_unique<SliceValues>(view_of(buffer));
  auto second = std::make_unique<SliceValues>(*first);
  buffer.reset();
  EXPECT_FALSE(freed);
  first.reset();
  EXPECT_FALSE(freed);
  second.reset();
  EXPECT_TRUE(freed);
}

TEST(SliceValues, WritingToASharedViewCopiesFirstAndLeavesTheBufferAlone) {
  bool freed = false;
  auto buffer = std::make_shared<Buffer>(random_values(128), freed);
  const std::vector<float> reference = buffer->values;
  SliceValues values = view_of(buffer);
  values[5] = 1e6f;
  EXPECT_FALSE(values.is_shared());
  EXPECT_NE(values.data(), buffer->values.data());
  EXPECT_EQ(buffer->values, reference) << "the owner's buffer is unchanged";
  EXPECT_EQ(values[5], 1e6f);
  EXPECT_EQ(values[6], reference[6]);
  buffer.reset();
  EXPECT_TRUE(freed) << "a view that copied no longer holds the owner";

  bool freed_too = false;
  auto other = std::make_shared<Buffer>(random_values(128), freed_too);
  SliceValues taken_from = view_of(other);
  std::vector<float> taken = std::move(taken_from).take_vector();
  EXPECT_EQ(taken, other->values) << "shared values are copied out";
  EXPECT_NE(taken.data(), other->values.data());
}

TEST(SliceValues, AssigningReplacesASharedViewWithOwnValues) {
  bool freed = false;
  auto buffer = std::make_shared<Buffer>(random_values(32), freed);
  SliceValues values = view_of(buffer);
  buffer.reset();
  const std::vector<float> replacement = random_values(16);
  values.assign(replacement.begin(), replacement.end());
  EXPECT_TRUE(freed);
  EXPECT_FALSE(values.is_shared());
  EXPECT_EQ(values.to_vector(), replacement);
}

TEST(SliceValues, SharedOwnValuesAreOneBufferForEveryCopy) {
  const std::vector<float> reference = random_values(1000);
  SliceValues values = reference;
  const float* own = values.data();
  values.share();
  EXPECT_TRUE(values.is_shared());
  // Read through a const reference: the non-const data() is a write and detaches.
  const SliceValues& read = values;
  EXPECT_EQ(read.data(), own) << "the vector moved into the shared buffer, not copied";
  values.share();
  EXPECT_EQ(read.data(), own) << "sharing twice changes nothing";
  const SliceValues copy = values;
  EXPECT_EQ(copy.data(), own);
  EXPECT_EQ(copy.to_vector(), reference);
  values.resize(10);  // writing detaches this copy only
  EXPECT_FALSE(values.is_shared());
  EXPECT_EQ(copy.data(), own);
  EXPECT_EQ(copy.to_vector(), reference);

  SliceValues empty;
  empty.share();
  EXPECT_TRUE(empty.empty());
}

}  // namespace
}  // namespace slicestream

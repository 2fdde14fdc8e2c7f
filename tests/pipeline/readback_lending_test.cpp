// A published slice keeps its readback's buffer: the publish stage hands the buffer itself to the
// sink (no copy on the host), the buffer lives exactly as long as some copy of the image does, and
// where the readback may not lend its buffer (the CUDA pool has lent its maximum) the values are
// copied out, counted, and the buffer goes back at once. The images are the same either way.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <random>
#include <vector>

#include "pipeline/backend/target_readback.hpp"
#include "tests/pipeline/forwarding_backend.hpp"
#include "tests/pipeline/pipeline_test_support.hpp"

namespace slicestream {
namespace {

// What the test backend's readbacks report: how many exist now, and their buffers' addresses.
struct ReadbackLedger {
  std::atomic<int> alive{0};
  std::atomic<int> created{0};
  bool lend = true;
};

class LedgerReadback final : public TargetReadback {
 public:
  LedgerReadback(std::vector<float> values, ReadbackLedger& ledger)
      : values_(std::move(values)), ledger_(ledger) {
    ++ledger_.alive;
    ++ledger_.created;
  }
  ~LedgerReadback() override { --ledger_.alive; }
  void wait() override {}
  const float* values() const override { return values_.data(); }
  std::size_t size() const override { return values_.size(); }
  bool lend() override { return ledger_.lend; }

 private:
  std::vector<float> values_;
  ReadbackLedger& ledger_;
};

class LedgerBackend final : public test::ForwardingBackend {
 public:
  explicit LedgerBackend(ReadbackLedger& ledger) : ledger_(ledger) {}
  std::unique_ptr<TargetReadback> read_target_async(const ReconTarget& target) override {
    std::vector<float> values(target.grid().points());
    read_target(target, values.data());
    return std::make_unique<LedgerReadback>(std::move(values), ledger_);
  }

 private:
  ReadbackLedger& ledger_;
};

class ReadbackLendingTest : public ::testing::Test {
 protected:
  static constexpr int kWindow = 12;

  // Two slices, a window and a half of random frames, every update published.
  void run_scan() {
    pipeline_ = std::make_unique<Pipeline>(test::one_update_per_frame_config(),
                                           std::make_unique<LedgerBackend>(ledger_), *sink_);
    pipeline_->start();
    test::TwoSliceScan s = test::begin_two_slice_scan(*pipeline_, kWindow);
    scan_ = std::move(s.scan);
    slices_ = std::move(s.slices);
    std::mt19937 rng(5);
    for (std::uint32_t i = 0; i < kWindow + kWindow / 2; ++i) {
      ASSERT_TRUE(pipeline_->submit(test::make_random_frame(scan_.description, i, rng)));
      pipeline_->wait_idle();
    }
  }

  // The last image of every slice equals a full recompute from the store, and is not zero.
  void expect_current_images() {
    for (const SetSliceCommand& slice : slices_)
      test::expect_last_publication_is_current(*pipeline_, *sink_, slice, 1e-6);
  }

  ReadbackLedger ledger_;
  std::unique_ptr<test::RecordingSink> sink_ = std::make_unique<test::RecordingSink>();
  std::unique_ptr<Pipeline> pipeline_;
  test::TestScan scan_;
  std::vector<SetSliceCommand> slices_;
};

TEST_F(ReadbackLendingTest, PublishedImagesKeepTheReadbackBufferUntilTheLastCopyIsGone) {
  run_scan();
  const std::vector<SliceImage> published = sink_->slices();
  ASSERT_GE(published.size(), 2u * kWindow);
  for (const SliceImage& image : published) {
    EXPECT_TRUE(image.values.is_shared()) << "slice " << image.slice_id << " #" << image.sequence;
    EXPECT_EQ(image.values.size(), static_cast<std::size_t>(image.width) * image.height);
  }
  expect_current_images();
  EXPECT_EQ(pipeline_->metrics().publications_copied_out, 0u);
  // The sink's copies hold every readback published, nothing else does (`published` shares them).
  EXPECT_EQ(ledger_.alive.load(), static_cast<int>(published.size()));

  pipeline_->stop(true);
  pipeline_.reset();
  sink_.reset();
  EXPECT_EQ(ledger_.alive.load(), static_cast<int>(published.size())) << "`published` holds them";
}

TEST_F(ReadbackLendingTest, ReadbacksThatMayNotLendAreCopiedOutCountedAndFreedAtOnce) {
  ledger_.lend = false;
  run_scan();
  const std::vector<SliceImage> published = sink_->slices();
  ASSERT_GE(published.size(), 2u * kWindow);
  for (const SliceImage& image : published) {
    EXPECT_FALSE(image.values.is_shared());
    EXPECT_EQ(image.values.size(), static_cast<std::size_t>(image.width) * image.height);
  }
  expect_current_images();
  EXPECT_EQ(pipeline_->metrics().publications_copied_out, published.size());
  EXPECT_EQ(ledger_.alive.load(), 0) << "every buffer went back when its values were copied";
  EXPECT_EQ(ledger_.created.load(), static_cast<int>(published.size()));
}

TEST_F(ReadbackLendingTest, BuffersGoBackWhenTheirImagesAreGone) {
  run_scan();
  ASSERT_GT(ledger_.alive.load(), 0);
  pipeline_->stop(true);
  pipeline_.reset();
  sink_.reset();
  EXPECT_EQ(ledger_.alive.load(), 0);
}

}  // namespace
}  // namespace slicestream

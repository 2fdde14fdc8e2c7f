#include "hdf5/hdf5_handle.hpp"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace slicestream::hdf5 {
namespace {

// Every identifier the counting closer closed, in order; it closes them with H5Sclose.
std::vector<hid_t> closed_ids;

herr_t counting_close(hid_t id) {
  closed_ids.push_back(id);
  return H5Sclose(id);
}

herr_t failing_close(hid_t id) {
  H5Sclose(id);
  return -1;
}

bool is_open(hid_t id) {
  return H5Iis_valid(id) > 0;
}

class HandleTest : public ::testing::Test {
 protected:
  void SetUp() override { closed_ids.clear(); }
  static hid_t new_space() {
    const hid_t id = H5Screate(H5S_SCALAR);
    EXPECT_GE(id, 0);
    return id;
  }
};

TEST_F(HandleTest, ClosesItsIdentifierOnceWhenItGoesOutOfScope) {
  const hid_t id = new_space();
  {
    const Handle handle(id, counting_close);
    EXPECT_TRUE(handle.valid());
    EXPECT_EQ(handle.get(), id);
    EXPECT_TRUE(is_open(id));
  }
  EXPECT_EQ(closed_ids, std::vector<hid_t>{id});
  EXPECT_FALSE(is_open(id));
}

TEST_F(HandleTest, CloseNowThenTheDestructorDoesNothingMore) {
  const hid_t id = new_space();
  {
    Handle handle(id, counting_close);
    EXPECT_TRUE(handle.close());
    EXPECT_FALSE(handle.valid());
    EXPECT_FALSE(is_open(id));
    EXPECT_TRUE(handle.close());  // a second close is a no-op
  }
  EXPECT_EQ(closed_ids, std::vector<hid_t>{id});
}

TEST_F(HandleTest, CloseSaysWhenHdf5ReportsAFailure) {
  Handle handle(new_space(), failing_close);
  EXPECT_FALSE(handle.close());
  EXPECT_FALSE(handle.valid());
}

TEST_F(HandleTest, AFailedCreateIsHeldButNeverClosed) {
  { const Handle handle(H5I_INVALID_HID, counting_close); }
  { const Handle empty; }
  EXPECT_TRUE(closed_ids.empty());
}

TEST_F(HandleTest, MoveConstructionHandsOverOwnership) {
  const hid_t id = new_space();
  {
    Handle first(id, counting_close);
    Handle second(std::move(first));
    EXPECT_FALSE(first.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is tested
    EXPECT_EQ(second.get(), id);
    EXPECT_TRUE(closed_ids.empty());
  }
  EXPECT_EQ(closed_ids, std::vector<hid_t>{id});
}

TEST_F(HandleTest, MoveAssignmentClosesWhatTheTargetHeldAndTakesTheOther) {
  const hid_t old_id = new_space();
  const hid_t new_id = new_space();
  {
    Handle target(old_id, counting_close);
    Handle source(new_id, counting_close);
    target = std::move(source);
    EXPECT_EQ(closed_ids, std::vector<hid_t>{old_id});
    EXPECT_FALSE(is_open(old_id));
    EXPECT_EQ(target.get(), new_id);
    EXPECT_FALSE(source.valid());  // NOLINT(bugprone-use-after-move)
    EXPECT_TRUE(is_open(new_id));
  }
  EXPECT_EQ(closed_ids, (std::vector<hid_t>{old_id, new_id}));
}

TEST_F(HandleTest, SelfMoveAssignmentKeepsTheIdentifierOpen) {
  const hid_t id = new_space();
  {
    Handle handle(id, counting_close);
    Handle& alias = handle;
    handle = std::move(alias);
    EXPECT_EQ(handle.get(), id);
    EXPECT_TRUE(is_open(id));
    EXPECT_TRUE(closed_ids.empty());
  }
  EXPECT_EQ(closed_ids, std::vector<hid_t>{id});
}

}  // namespace
}  // namespace slicestream::hdf5

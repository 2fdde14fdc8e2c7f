// DeviceMemoryAdmissions without a GPU: a fake driver whose free memory falls only when an
// admitted allocation is "made". Admissions in progress count against later checks until their
// tickets go, and threads admitting at once never take the reserve.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "pipeline/backend/device_memory_admissions.hpp"

namespace slicestream {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// The driver's free memory, lowered by allocate().
struct FakeDriver {
  std::atomic<std::size_t> free_bytes{1000 * kMiB};
  DeviceMemoryAdmissions::Query query() {
    return [this] { return DeviceMemoryInfo{free_bytes.load(), 2000 * kMiB}; };
  }
  void allocate(std::size_t bytes) { free_bytes -= bytes; }
};

// The bytes of admissions in progress: what the driver reports free less what admit() sees.
std::size_t in_progress(const DeviceMemoryAdmissions& admissions, const FakeDriver& driver) {
  return driver.free_bytes.load() - admissions.available().free_bytes;
}

TEST(DeviceMemoryAdmissions, AnAdmissionInProgressCountsUntilItsTicketGoes) {
  FakeDriver driver;
  DeviceMemoryAdmissions admissions(driver.query());
  // 1000 MiB free, 200 reserved: 800 usable.
  DeviceMemoryAdmissions::Admission first = admissions.admit(500 * kMiB, 200 * kMiB);
  ASSERT_TRUE(first.admitted);
  EXPECT_EQ(in_progress(admissions, driver), 500 * kMiB);
  // The driver still reports 1000 MiB free, but 500 of them are promised.
  DeviceMemoryAdmissions::Admission second = admissions.admit(400 * kMiB, 200 * kMiB);
  EXPECT_FALSE(second.admitted);
  EXPECT_EQ(second.memory.free_bytes, 500 * kMiB) << "free memory less the admission in progress";
  EXPECT_EQ(second.memory.total_bytes, 2000 * kMiB);
  EXPECT_EQ(admissions.available().free_bytes, 500 * kMiB) << "what an advisory check sees";
  EXPECT_EQ(in_progress(admissions, driver), 500 * kMiB) << "a refusal holds nothing";
  EXPECT_TRUE(admissions.admit(300 * kMiB, 200 * kMiB).admitted) << "what is left still fits";
  EXPECT_EQ(in_progress(admissions, driver), 500 * kMiB) << "that ticket went with its admission";

  // The allocation is made, then the ticket goes: counted once, by the driver.
  driver.allocate(500 * kMiB);
  first.ticket = DeviceMemoryAdmissions::Ticket();
  EXPECT_EQ(in_progress(admissions, driver), 0u);
  EXPECT_FALSE(admissions.admit(400 * kMiB, 200 * kMiB).admitted);
  EXPECT_TRUE(admissions.admit(300 * kMiB, 200 * kMiB).admitted);

  // An allocation that failed: its ticket goes and the bytes are free again.
  DeviceMemoryAdmissions::Admission failed = admissions.admit(300 * kMiB, 200 * kMiB);
  ASSERT_TRUE(failed.admitted);
  { DeviceMemoryAdmissions::Ticket gone = std::move(failed.ticket); }
  EXPECT_EQ(in_progress(admissions, driver), 0u);
}

TEST(DeviceMemoryAdmissions, ThreadsAdmittingAtOnceNeverTakeTheReserve) {
  for (int round = 0; round < 50; ++round) {
    FakeDriver driver;
    DeviceMemoryAdmissions admissions(driver.query());
    // Room for three and a half admissions of 100 MiB above the reserve.
    const std::size_t reserve = 1000 * kMiB - 350 * kMiB;
    constexpr int kThreads = 12;
    std::atomic<int> admitted{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&] {
        DeviceMemoryAdmissions::Admission admission = admissions.admit(100 * kMiB, reserve);
        if (!admission.admitted) return;
        ++admitted;
        driver.allocate(100 * kMiB);  // the allocation, then the ticket goes
      });
    }
    for (std::thread& thread : threads)
      thread.join();
    // Never more than fits; one fewer when a check falls between another thread's allocation
    // and its ticket's release (those bytes then count twice).
    EXPECT_LE(admitted.load(), 3) << "round " << round;
    EXPECT_GE(admitted.load(), 2) << "round " << round;
    EXPECT_GE(driver.free_bytes.load(), reserve);
    EXPECT_EQ(in_progress(admissions, driver), 0u);
  }
}

}  // namespace
}  // namespace slicestream

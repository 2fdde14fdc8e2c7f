// The slices endpoint with a subscriber that takes its messages slowly (a receive queue of one):
// it gets the newest image of every slice and every event, the images it had no room for are
// replaced by newer ones (counted), and a moved slice overtakes the images waiting for it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "clients/common/slice_subscriber.hpp"
#include "server/slice_publisher.hpp"
#include "tests/server/slow_subscriber_support.hpp"

namespace slicestream {
namespace {

using client::Publication;
using client::SliceSubscriber;
using client::Topic;
using test::ipc_address;
using test::wait_until_subscribed;
using namespace std::chrono_literals;

// 1 MB images.
constexpr int kSide = 512;

// Long enough that a busy test machine never makes a slow subscriber look stalled.
constexpr std::chrono::milliseconds kPatient{10000};

SliceImage image_of(std::uint32_t id, std::uint64_t version, bool moved = false) {
  SliceImage slice;
  slice.slice_id = id;
  slice.width = kSide;
  slice.height = kSide;
  slice.sequence = version;
  slice.moved = moved;
  slice.orientation.values = {1, 0, 0, 0, 1, 0, 0, 0, static_cast<float>(id)};
  slice.values.resize(static_cast<std::size_t>(kSide) * kSide);
  for (std::size_t i = 0; i < slice.values.size(); ++i)
    slice.values[i] = static_cast<float>(id * 1000 + version) + static_cast<float>(i % 7) * 0.1f;
  return slice;
}

// The slices endpoint with a ZeroMQ queue of one per subscriber, and a viewer that receives one
// image at a time (slices and events).
struct Endpoint {
  Endpoint(const char* name, std::chrono::milliseconds slow_subscriber_wait)
      : publisher(context, ipc_address(name), 1, ServerSecurity{}, counters, slow_subscriber_wait),
        viewer(publisher.address(), {Topic::kSlice, Topic::kEvent}, 1) {
    wait_until_subscribed(publisher, viewer);
  }

  zmq::context_t context{1};
  ServerCounters counters;
  SlicePublisher publisher;
  SliceSubscriber viewer;
};

TEST(SlowSubscriber, GetsTheNewestImageOfEverySliceAndEveryEvent) {
  Endpoint endpoint("slow", kPatient);
  SlicePublisher& publisher = endpoint.publisher;
  SliceSubscriber& subscriber = endpoint.viewer;
  ServerCounters& counters = endpoint.counters;
  const std::uint64_t sent_before = counters.publications.load();

  constexpr std::uint32_t kSlices = 3;
  constexpr std::uint64_t kVersions = 30;
  // The viewer takes a message every 10 ms while the images come faster.
  std::map<std::uint32_t, std::uint64_t> newest;
  std::uint64_t events = 0;
  std::uint64_t images = 0;
  std::thread viewer([&] {
    const auto done = [&] {
      if (events < kVersions || newest.size() < kSlices) return false;
      for (const auto& [id, sequence] : newest)
        if (sequence < kVersions) return false;
      return true;
    };
    while (!done()) {
      std::optional<Publication> got = subscriber.receive(2000);
      ASSERT_TRUE(got.has_value())
          << "nothing arrived for 2 s after " << images << " images and " << events << " events";
      if (got->topic == Topic::kEvent) {
        ASSERT_EQ(got->header.event().message(), std::to_string(++events)) << "events in order";
      } else {
        const auto& header = got->header.slice();
        std::uint64_t& seen = newest[header.slice_id()];
        EXPECT_GT(header.sequence(), seen) << "a slice's images arrive newest last";
        seen = header.sequence();
        EXPECT_EQ(got->values.front(), static_cast<float>(header.slice_id() * 1000 + seen));
        EXPECT_EQ(got->values.size(), static_cast<std::size_t>(kSide) * kSide);
        ++images;
      }
      std::this_thread::sleep_for(10ms);
    }
  });
  std::vector<SliceImage> slices;
  for (std::uint32_t id = 0; id < kSlices; ++id)
    slices.push_back(image_of(id, 0));
  for (std::uint64_t version = 1; version <= kVersions; ++version) {
    for (SliceImage& slice : slices) {
      slice.sequence = version;
      slice.values[0] = static_cast<float>(slice.slice_id * 1000 + version);
      publisher.publish_slice(slice);
    }
    publisher.publish_event({EventKind::kWarning, 0, "round", std::to_string(version)});
  }
  viewer.join();
  EXPECT_EQ(counters.named("publications_missed_by_slow_subscribers"), 0u);
  EXPECT_GT(counters.publications_superseded.load(), 0u) << "the backlog was thinned";
  // Counts add up: every image was sent or replaced by a newer one; every event was sent.
  EXPECT_EQ(images + counters.publications_superseded.load(), kSlices * kVersions);
  EXPECT_EQ(counters.publications.load() - sent_before, images + events);
  EXPECT_EQ(publisher.waiting(), 0u);
}

TEST(SlowSubscriber, AMovedSliceOvertakesTheImagesWaitingForIt) {
  Endpoint endpoint("moved", kPatient);
  SlicePublisher& publisher = endpoint.publisher;
  SliceSubscriber& subscriber = endpoint.viewer;

  // A backlog of routine images of slices 1..16 while the viewer takes nothing.
  constexpr std::uint32_t kBacklog = 16;
  SliceImage routine = image_of(1, 1);
  const SliceImage moved_slice = image_of(0, 1, /*moved=*/true);
  for (std::uint32_t id = 1; id <= kBacklog; ++id) {
    routine.slice_id = id;
    publisher.publish_slice(routine);
  }
  std::this_thread::sleep_for(20ms);  // what fits in ZeroMQ and the socket has left
  const std::size_t waiting = publisher.waiting();
  ASSERT_GE(waiting, 4u) << "no backlog: the test shows nothing";
  publisher.publish_slice(moved_slice);

  std::vector<std::uint32_t> order;
  while (order.size() < kBacklog + 1) {
    std::optional<Publication> got = subscriber.receive(2000);
    ASSERT_TRUE(got.has_value()) << "only " << order.size() << " images arrived";
    if (got->topic == Topic::kSlice) order.push_back(got->header.slice().slice_id());
  }
  const auto moved = std::find(order.begin(), order.end(), 0u);
  ASSERT_NE(moved, order.end());
  // Only what had left the endpoint before the move arrives before the moved slice.
  EXPECT_EQ(static_cast<std::size_t>(order.end() - moved - 1), waiting)
      << "every image waiting in the endpoint went after the moved slice";
  EXPECT_EQ(endpoint.counters.named("publications_missed_by_slow_subscribers"), 0u);
}

// Once a subscriber has taken nothing for the wait, what waits goes to the subscribers with room,
// and so does what follows until the stalled one has room again: a viewer keeps receiving new
// images. (One that happens to be full at that moment misses that image too; it gets the next.)
TEST(SlowSubscriber, AStalledOneHoldsTheOthersBackOnlyForTheWait) {
  Endpoint endpoint("stalled", 50ms);
  SlicePublisher& publisher = endpoint.publisher;
  SliceSubscriber& viewer = endpoint.viewer;
  SliceSubscriber stalled(publisher.address(), {Topic::kSlice, Topic::kEvent}, 1);
  wait_until_subscribed(publisher, stalled);
  // `stalled` takes nothing from now on; the viewer takes everything, while a new image comes
  // every 5 ms for a second.
  constexpr std::uint64_t kVersions = 200;
  std::uint64_t received = 0;
  std::uint64_t newest = 0;
  std::atomic<bool> publishing{true};
  std::thread viewing([&] {
    while (true) {
      std::optional<Publication> got = viewer.receive(500);
      if (!got) {
        if (!publishing) return;
        continue;
      }
      if (got->topic != Topic::kSlice) continue;
      EXPECT_GT(got->header.slice().sequence(), newest);
      newest = got->header.slice().sequence();
      ++received;
    }
  });
  SliceImage slice = image_of(0, 0);
  for (std::uint64_t version = 1; version <= kVersions; ++version) {
    slice.sequence = version;
    slice.values[0] = static_cast<float>(version);
    publisher.publish_slice(slice);
    std::this_thread::sleep_for(5ms);
  }
  publishing = false;
  viewing.join();
  // Held back once for 50 ms, the viewer then gets images all through the second.
  EXPECT_GE(received, 10u) << "the viewer waits for the stalled subscriber";
  EXPECT_GT(newest, kVersions / 2);
  EXPECT_GT(endpoint.counters.named("publications_missed_by_slow_subscribers"), 0u)
      << "the stalled subscriber's misses are counted";
  EXPECT_EQ(publisher.waiting(), 0u);
}

}  // namespace
}  // namespace slicestream

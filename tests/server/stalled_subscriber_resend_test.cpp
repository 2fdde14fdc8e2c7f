// A subscriber that takes nothing for longer than the slow-subscriber wait misses what goes out
// meanwhile (the others get it); once every subscriber has room again the slices endpoint sends
// the latest publication of every stream that was missed once more. So the stalled viewer ends
// with the newest image of every slice, refined slice and the preview, bit for bit, even after
// the images stopped changing; a fast viewer kept receiving all along, sees a stream's images
// in order and every event once (the repeats it was sent, the client library skips); and
// nothing stays kept (the memory budget is back where it was).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "clients/common/slice_subscriber.hpp"
#include "pipeline/backend/memory_budget.hpp"
#include "server/slice_publisher.hpp"
#include "tests/common/time_scale.hpp"
#include "tests/server/slow_subscriber_support.hpp"
#include "tests/server/wire_builders.hpp"

namespace slicestream {
namespace {

using client::Publication;
using client::SliceSubscriber;
using client::Topic;
using Key = std::pair<Topic, std::uint32_t>;  // a stream: topic and slice id (0: the preview)
using namespace std::chrono_literals;

constexpr int kSide = 512;        // 1 MB slices
constexpr int kPreviewSide = 64;  // a 1 MB preview
constexpr std::uint32_t kSlices = 3;
constexpr std::uint32_t kRefinedSlice = 1;
constexpr std::uint64_t kRounds = 12;
const std::vector<Topic> kAllTopics = {Topic::kSlice, Topic::kPreview, Topic::kEvent,
                                       Topic::kRefined};

std::chrono::milliseconds scaled(int milliseconds) {
  return std::chrono::milliseconds(test::scaled_ms(milliseconds));
}

Key key_of(const Publication& publication) {
  switch (publication.topic) {
    case Topic::kSlice:
      return {Topic::kSlice, publication.header.slice().slice_id()};
    case Topic::kRefined:
      return {Topic::kRefined, publication.header.refined().slice().slice_id()};
    default:
      return {publication.topic, 0};
  }
}

std::uint64_t sequence_of(const Publication& publication) {
  switch (publication.topic) {
    case Topic::kSlice:
      return publication.header.slice().sequence();
    case Topic::kRefined:
      return publication.header.refined().slice().sequence();
    default:
      return publication.header.preview().sequence();
  }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// What a viewer holds: the newest publication of every stream and the round events in order.
struct ViewerState {
  void take(Publication got) {
    if (got.topic == Topic::kEvent) {
      if (got.header.event().reason() == "round") events.push_back(got.header.event().message());
      return;
    }
    ++images;
    const Key key = key_of(got);
    const auto held = newest.find(key);
    if (held != newest.end()) {
      EXPECT_GE(sequence_of(got), sequence_of(held->second)) << "a stream's images go back";
      if (sequence_of(got) == sequence_of(held->second)) {
        ++repeats;
        EXPECT_EQ(got.header.SerializeAsString(), held->second.header.SerializeAsString())
            << "a repeat is not the same publication";
        EXPECT_TRUE(same_bits(got.values, held->second.values));
      }
    }
    newest[key] = std::move(got);
  }
  bool holds(const Key& key, std::uint64_t sequence) const {
    const auto held = newest.find(key);
    return held != newest.end() && sequence_of(held->second) == sequence;
  }

  std::map<Key, Publication> newest;
  std::vector<std::string> events;
  std::uint64_t images = 0;
  std::uint64_t repeats = 0;
};

// Publishes rounds of every stream: fresh random values, each image charged to a budget that
// only the endpoint's messages hold.
class Source {
 public:
  std::shared_ptr<MemoryBudget> budget = std::make_shared<MemoryBudget>(std::size_t{1} << 31);
  std::map<Key, std::vector<float>> latest;  // the values of each stream's newest publication
  std::vector<Key> streams() const {
    std::vector<Key> keys;
    for (const auto& entry : latest)
      keys.push_back(entry.first);
    return keys;
  }

  void publish_round(SlicePublisher& publisher, std::uint64_t round) {
    for (std::uint32_t id = 0; id < kSlices; ++id) {
      SliceImage slice = image(id, round, kSide * kSide);
      latest[{Topic::kSlice, id}] = slice.values.to_vector();
      publisher.publish_shared_slice(std::make_shared<const SliceImage>(std::move(slice)));
    }
    RefinedSliceImage refined;
    refined.slice = image(kRefinedSlice, round, kSide * kSide);
    refined.iterations = static_cast<int>(round);
    latest[{Topic::kRefined, kRefinedSlice}] = refined.slice.values.to_vector();
    publisher.publish_refined(refined);
    PreviewVolume preview;
    preview.scan_id = 5;
    preview.size_x = preview.size_y = preview.size_z = kPreviewSide;
    preview.sequence = round;
    preview.values = values(kPreviewSide * kPreviewSide * kPreviewSide);
    preview.memory = budget->try_charge(preview.values.size() * sizeof(float));
    latest[{Topic::kPreview, 0}] = preview.values;
    publisher.publish_preview(preview);
    publisher.publish_event({EventKind::kWarning, 5, "round", std::to_string(round)});
  }

 private:
  std::vector<float> values(std::size_t count) {
    std::vector<float> result(count);
    // Random per image, cheap per value: a random base shifted by a random offset.
    if (base_.size() < count) {
      base_.resize(count);
      for (float& v : base_)
        v = static_cast<float>(random_.uniform(-1, 1));
    }
    const float offset = static_cast<float>(random_.uniform(-100, 100));
    for (std::size_t i = 0; i < count; ++i)
      result[i] = base_[i] * offset + offset;
    return result;
  }
  SliceImage image(std::uint32_t id, std::uint64_t round, int pixels) {
    SliceImage slice;
    slice.slice_id = id;
    slice.width = kSide;
    slice.height = pixels / kSide;
    slice.scan_id = 5;
    slice.sequence = round;
    slice.orientation.values = {1, 0, 0, 0, 1, 0, 0, 0, static_cast<float>(id)};
    slice.values = values(static_cast<std::size_t>(pixels));
    slice.memory = budget->try_charge(slice.values.size() * sizeof(float));
    return slice;
  }

  test::Random random_;
  std::vector<float> base_;
};

// A viewer read continuously on its own thread.
class FastViewer {
 public:
  explicit FastViewer(SliceSubscriber& subscriber)
      : subscriber_(subscriber), thread_([this] { run(); }) {}
  ~FastViewer() {
    stopping_ = true;
    thread_.join();
  }
  ViewerState state() {
    std::lock_guard<std::mutex> lock(mutex_);
    return state_;
  }

 private:
  void run() {
    while (!stopping_) {
      std::optional<Publication> got = subscriber_.receive(20);
      if (!got) continue;
      std::lock_guard<std::mutex> lock(mutex_);
      state_.take(std::move(*got));
    }
  }

  SliceSubscriber& subscriber_;
  std::mutex mutex_;
  ViewerState state_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// Polls `done` until it holds or `timeout` passes.
template <typename Done>
bool eventually(Done done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

void expect_newest_of_every_stream(const ViewerState& state, const Source& source,
                                   const char* viewer) {
  for (const auto& [key, values] : source.latest) {
    SCOPED_TRACE(std::string(viewer) + ": " + client::topic_name(key.first) + " " +
                 std::to_string(key.second));
    ASSERT_TRUE(state.holds(key, kRounds)) << "not the newest image";
    EXPECT_TRUE(same_bits(state.newest.at(key).values, values)) << "values differ";
  }
}

struct Endpoint {
  explicit Endpoint(const char* name)
      : publisher(context, test::ipc_address(name), 1, ServerSecurity{}, counters, scaled(100)),
        fast(publisher.address(), kAllTopics, 1) {
    stalled.emplace(publisher.address(), kAllTopics, 1);
    test::wait_until_subscribed(publisher, fast);
    test::wait_until_subscribed(publisher, *stalled);
  }

  // Rounds of every stream, then no change, while `stalled` takes nothing for several waits.
  void publish_while_stalled(Source& source) {
    for (std::uint64_t round = 1; round <= kRounds; ++round) {
      source.publish_round(publisher, round);
      std::this_thread::sleep_for(scaled(25));
    }
    std::this_thread::sleep_for(scaled(200));
  }

  zmq::context_t context{1};
  ServerCounters counters;
  SlicePublisher publisher;
  SliceSubscriber fast;
  std::optional<SliceSubscriber> stalled;
};

// Rounds of every stream published while the fast viewer reads and the stalled one does not.
struct StallEpisode {
  explicit StallEpisode(const char* name) : endpoint(name), fast(endpoint.fast) {
    endpoint.publish_while_stalled(source);
  }
  // Nothing is kept to send again, nothing waits, and the budget is back where it was.
  void expect_nothing_kept() {
    EXPECT_TRUE(eventually(
        [&] { return endpoint.publisher.missed() == 0 && endpoint.publisher.waiting() == 0; },
        scaled(5000)))
        << "kept after it was sent again";
    EXPECT_TRUE(
        eventually([&] { return source.budget->used_bytes() == budget_before; }, scaled(5000)))
        << source.budget->used_bytes() - budget_before << " bytes still charged";
  }

  Endpoint endpoint;
  Source source;
  const std::size_t budget_before = source.budget->used_bytes();
  FastViewer fast;
};

TEST(StalledSubscriber, EndsWithTheNewestImageOfEveryStreamOnceItReadsAgain) {
  StallEpisode episode("resend");
  Endpoint& endpoint = episode.endpoint;
  const Source& source = episode.source;
  FastViewer& fast = episode.fast;

  ASSERT_GT(endpoint.counters.named("publications_missed_by_slow_subscribers"), 0u)
      << "the stalled subscriber missed nothing: the test shows nothing";
  EXPECT_GT(endpoint.publisher.missed(), 0u) << "what it missed is not kept";
  EXPECT_LE(endpoint.publisher.missed(), source.latest.size()) << "more than one per stream";
  const ViewerState during = fast.state();
  EXPECT_GT(during.images, 2 * source.latest.size()) << "the fast viewer was held back";
  EXPECT_EQ(endpoint.counters.named("publications_resent_after_stall"), 0u)
      << "sent again while a subscriber had no room";

  // The stalled subscriber reads again.
  ViewerState resumed;
  const auto complete = [&] {
    for (const Key& key : source.streams())
      if (!resumed.holds(key, kRounds)) return false;
    return true;
  };
  const auto deadline = std::chrono::steady_clock::now() + scaled(10000);
  while (!complete() && std::chrono::steady_clock::now() < deadline) {
    if (std::optional<Publication> got = endpoint.stalled->receive(50)) resumed.take(*got);
  }
  expect_newest_of_every_stream(resumed, source, "the resumed subscriber");
  while (std::optional<Publication> got = endpoint.stalled->receive(test::scaled_ms(200)))
    resumed.take(*got);
  for (std::size_t i = 1; i < resumed.events.size(); ++i)
    EXPECT_LT(std::stoull(resumed.events[i - 1]), std::stoull(resumed.events[i]))
        << "events repeated or out of order";

  EXPECT_TRUE(eventually(
      [&] {
        return fast.state().holds({Topic::kPreview, 0}, kRounds);
      },
      scaled(5000)));
  const ViewerState after = fast.state();
  expect_newest_of_every_stream(after, source, "the fast subscriber");
  EXPECT_EQ(after.repeats, 0u) << "the client library passed a repeat on";
  ASSERT_EQ(after.events.size(), kRounds) << "the fast viewer misses or repeats events";
  for (std::uint64_t round = 1; round <= kRounds; ++round)
    EXPECT_EQ(after.events[round - 1], std::to_string(round));

  EXPECT_GT(endpoint.counters.named("publications_resent_after_stall"), 0u);
  episode.expect_nothing_kept();
}

// A stalled subscriber that leaves instead: what was kept for it goes to the others (a repeat,
// harmless) and nothing stays charged.
TEST(StalledSubscriber, WhatWasKeptForOneThatLeavesGoesAndItsChargeWithIt) {
  StallEpisode episode("resend-leaves");
  ASSERT_GT(episode.endpoint.publisher.missed(), 0u) << "nothing kept: the test shows nothing";

  episode.endpoint.stalled.reset();  // closes its socket: the endpoint sees it leave

  episode.expect_nothing_kept();
  const ViewerState after = episode.fast.state();
  expect_newest_of_every_stream(after, episode.source, "the fast subscriber");
  EXPECT_EQ(after.events.size(), kRounds) << "the fast viewer misses or repeats events";
}

}  // namespace
}  // namespace slicestream

// The slices endpoint with the client library's subscriber: slices, previews, events and refined
// slices arrive with their headers and payloads; inconsistent images are refused and counted.
#include <gtest/gtest.h>

#include "clients/common/slice_subscriber.hpp"
#include "server/codec/publish_codec.hpp"
#include "server/slice_publisher.hpp"
#include "tests/server/wire_builders.hpp"

namespace slicestream {
namespace {

using client::Publication;
using client::SliceSubscriber;
using client::Topic;

// PUB/SUB subscriptions take a moment to reach the publisher: publish events until one arrives.
void wait_until_subscribed(SlicePublisher& publisher, SliceSubscriber& subscriber) {
  for (int attempt = 0; attempt < 500; ++attempt) {
    publisher.publish_event({EventKind::kWarning, 0, "hello", "subscription probe"});
    if (subscriber.receive(10)) return;
  }
  FAIL() << "the subscriber never received anything";
}

std::optional<Publication> next_of(SliceSubscriber& subscriber, Topic topic) {
  for (int i = 0; i < 100; ++i) {
    std::optional<Publication> got = subscriber.receive(2000);
    if (!got) return std::nullopt;
    if (got->topic == topic) return got;
  }
  return std::nullopt;
}

TEST(SlicePublisher, SlicesPreviewsAndEventsReachSubscribers) {
  zmq::context_t context(1);
  ServerCounters counters;
  SlicePublisher publisher(context, "tcp://127.0.0.1:*", 100, ServerSecurity{}, counters);
  SliceSubscriber subscriber(publisher.address());
  wait_until_subscribed(publisher, subscriber);

  test::Random random;
  SCOPED_TRACE(random.seed);
  SliceImage slice;
  slice.slice_id = 2;
  slice.width = 13;
  slice.height = 7;
  slice.scan_id = 5;
  slice.sequence = 3;
  slice.orientation.values = {1, 0, 0, 0, 1, 0, 0, 0, 0};
  slice.values.resize(13 * 7);
  for (float& v : slice.values)
    v = static_cast<float>(random.uniform(-1, 1));
  publisher.publish_slice(slice);
  std::optional<Publication> got = next_of(subscriber, Topic::kSlice);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->header.slice().slice_id(), 2u);
  EXPECT_EQ(got->header.slice().scan_id(), 5u);
  EXPECT_GT(got->header.slice().published_ns(), 0u);
  EXPECT_EQ(got->values, slice.values);

  PreviewVolume preview;
  preview.scan_id = 5;
  preview.box = {{-1, -1, -1}, {1, 1, 1}};
  preview.size_x = 3;
  preview.size_y = 4;
  preview.size_z = 5;
  preview.values.resize(60);
  for (float& v : preview.values)
    v = static_cast<float>(random.uniform(-1, 1));
  publisher.publish_preview(preview);
  got = next_of(subscriber, Topic::kPreview);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->header.preview().size_z(), 5u);
  EXPECT_EQ(got->values, preview.values);

  publisher.publish_event({EventKind::kError, 5, "bad_shape", "frame 3: 2 x 2"});
  for (int i = 0; i < 100; ++i) {
    got = next_of(subscriber, Topic::kEvent);
    ASSERT_TRUE(got.has_value());
    if (got->header.event().reason() != "hello") break;
  }
  EXPECT_EQ(got->header.event().kind(), v1::EVENT_KIND_ERROR);
  EXPECT_EQ(got->header.event().reason(), "bad_shape");
  EXPECT_EQ(got->header.event().message(), "frame 3: 2 x 2");
  EXPECT_TRUE(got->values.empty());

  // Inconsistent images are refused and counted, never sent malformed.
  slice.values.resize(slice.values.size() - 1);
  publisher.publish_slice(slice);
  EXPECT_EQ(counters.publications_invalid.load(), 1u);
  publisher.close();
  publisher.publish_event({EventKind::kError, 0, "late", "after close"});  // ignored, no crash
}

TEST(SlicePublisher, RefinedSlicesAreTheirOwnTopic) {
  zmq::context_t context(1);
  ServerCounters counters;
  SlicePublisher publisher(context, "tcp://127.0.0.1:*", 100, ServerSecurity{}, counters);
  SliceSubscriber everything(publisher.address());
  // A viewer that knows only the first three topics (as before refinement existed).
  SliceSubscriber slices_only(publisher.address(), {Topic::kSlice, Topic::kEvent});
  wait_until_subscribed(publisher, everything);
  wait_until_subscribed(publisher, slices_only);
  RefinedSliceImage refined;
  refined.slice.slice_id = 4;
  refined.slice.width = 3;
  refined.slice.height = 2;
  refined.slice.values = {1, 2, 3, 4, 5, 6};
  refined.iterations = 7;
  refined.residual_before = 0.05;
  refined.residual_after = 0.01;
  refined.solver = "cpu csr fp32";
  publisher.publish_refined(refined);
  std::optional<Publication> got = next_of(everything, Topic::kRefined);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->header.refined().slice().slice_id(), 4u);
  EXPECT_EQ(got->header.refined().iterations(), 7u);
  EXPECT_EQ(got->header.refined().residual_after(), 0.01);
  EXPECT_EQ(got->values, refined.slice.values);
  publisher.publish_event({EventKind::kScanEnded, 1, "", "done"});
  for (int i = 0; i < 100; ++i) {
    std::optional<Publication> seen = slices_only.receive(2000);
    ASSERT_TRUE(seen.has_value());
    ASSERT_NE(seen->topic, Topic::kRefined) << "a 'slice' subscriber received a refined slice";
    if (seen->topic == Topic::kEvent && seen->header.event().kind() == v1::EVENT_KIND_SCAN_ENDED) {
      break;
    }
  }
  refined.slice.values.resize(refined.slice.values.size() - 1);
  publisher.publish_refined(refined);
  EXPECT_EQ(counters.publications_invalid.load(), 1u);
}

TEST(SliceSubscriber, TopicFilter) {
  zmq::context_t context(1);
  ServerCounters counters;
  SlicePublisher publisher(context, "tcp://127.0.0.1:*", 100, ServerSecurity{}, counters);
  SliceSubscriber events_only(publisher.address(), {Topic::kEvent});
  wait_until_subscribed(publisher, events_only);
  SliceImage slice;
  slice.width = 1;
  slice.height = 1;
  slice.values = {1.0f};
  publisher.publish_slice(slice);
  publisher.publish_event({EventKind::kScanEnded, 1, "", "done"});
  for (int i = 0; i < 100; ++i) {
    std::optional<Publication> got = events_only.receive(2000);
    ASSERT_TRUE(got.has_value());
    ASSERT_EQ(got->topic, Topic::kEvent);
    if (got->header.event().kind() == v1::EVENT_KIND_SCAN_ENDED) return;
  }
  FAIL() << "the event did not arrive";
}

// The slices endpoint sends a stream's latest publication again after a subscriber stalled: the
// client library passes it on once (a repeat has the stream's last sequence and published_ns),
// a new publication and every event always.
TEST(SliceSubscriber, SkipsAPublicationSentAgain) {
  zmq::context_t context(1);
  zmq::socket_t server(context, zmq::socket_type::pub);
  server.bind("tcp://127.0.0.1:*");
  SliceSubscriber subscriber(server.get(zmq::sockopt::last_endpoint));
  const auto send = [&](const char* topic, const v1::PublishHeader& header, bool payload) {
    server.send(zmq::buffer(std::string(topic)), zmq::send_flags::sndmore);
    server.send(zmq::buffer(header.SerializeAsString()),
                payload ? zmq::send_flags::sndmore : zmq::send_flags::none);
    if (payload)
      server.send(payload_message(std::vector<float>{1, 2, 3, 4}), zmq::send_flags::none);
  };
  const v1::PublishHeader probe = encode_event({EventKind::kWarning, 0, "probe", "probe"}, 1);
  bool subscribed = false;
  for (int attempt = 0; attempt < 500 && !subscribed; ++attempt) {
    send(kEventTopic, probe, false);
    subscribed = subscriber.receive(10).has_value();
  }
  ASSERT_TRUE(subscribed);
  while (subscriber.receive(50)) {
  }

  SliceImage slice;
  slice.slice_id = 4;
  slice.width = 2;
  slice.height = 2;
  slice.sequence = 3;
  const v1::PublishHeader first = encode_slice(slice, 111);
  const v1::PublishHeader later = encode_slice(slice, 222);  // same sequence: a server restart
  const v1::PublishHeader other_slice = [&] {
    slice.slice_id = 5;
    return encode_slice(slice, 111);
  }();
  for (const v1::PublishHeader* header : {&first, &first, &other_slice, &later, &later})
    send(kSliceTopic, *header, true);
  send(kEventTopic, probe, false);
  send(kEventTopic, probe, false);

  std::vector<std::pair<std::uint32_t, std::uint64_t>> slices;
  int events = 0;
  while (std::optional<Publication> got = subscriber.receive(500)) {
    if (got->topic == Topic::kEvent) ++events;
    if (got->topic == Topic::kSlice)
      slices.emplace_back(got->header.slice().slice_id(), got->header.slice().published_ns());
  }
  EXPECT_EQ(slices,
            (std::vector<std::pair<std::uint32_t, std::uint64_t>>{{4, 111}, {5, 111}, {4, 222}}));
  EXPECT_EQ(events, 2) << "events are never skipped";
}

}  // namespace
}  // namespace slicestream

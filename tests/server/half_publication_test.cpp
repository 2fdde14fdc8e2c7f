// The fp16 topics of the slices endpoint: a subscriber of "fp16-slice" / "fp16-refined" /
// "fp16-preview" gets the same images and volumes (the same header, sequence and published_ns) as
// binary16 values scaled by the largest magnitude, decoded by SliceSubscriber to within binary16's
// rounding; the server encodes them only while someone subscribes (and stops when the subscriber
// goes), and an encoding the memory budget has no room for is skipped and counted while the float32
// image still goes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "clients/common/slice_subscriber.hpp"
#include "pipeline/backend/memory_budget.hpp"
#include "server/codec/publish_codec.hpp"
#include "server/slice_publisher.hpp"
#include "tests/server/wire_builders.hpp"

namespace slicestream {
namespace {

using client::Publication;
using client::SliceSubscriber;
using client::SliceValueType;
using client::Topic;

SliceImage random_slice(test::Random& random, std::uint32_t id, int width, int height) {
  SliceImage slice;
  slice.slice_id = id;
  slice.width = width;
  slice.height = height;
  slice.scan_id = 4;
  slice.sequence = random.integer(1, 1000);
  slice.orientation.values = {1, 0, 0, 0, 1, 0, 0, 0, 0};
  std::vector<float> values(static_cast<std::size_t>(width) * height);
  // Attenuation-like values over four decades, both signs (ringing), and a few zeros.
  for (float& v : values) {
    v = static_cast<float>(random.uniform(-1, 1) * std::pow(10.0, random.uniform(-5, -1)));
  }
  values[random.integer(0, static_cast<std::uint32_t>(values.size() - 1))] = 0.0f;
  slice.values = std::move(values);
  return slice;
}

// The next publication of `topic`, or none within the timeout.
std::optional<Publication> next_of(SliceSubscriber& subscriber, Topic topic,
                                   int timeout_ms = 5000) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    std::optional<Publication> got = subscriber.receive(50);
    if (got && got->topic == topic) return got;
  }
  return std::nullopt;
}

void drain(SliceSubscriber& subscriber) {
  while (subscriber.receive(50)) {
  }
}

// Publishes probe slices until `subscriber` receives one (its subscription reached the server and
// the server read it), then lets the rest arrive.
void await_subscription(SlicePublisher& publisher, SliceSubscriber& subscriber) {
  test::Random random;
  for (int attempt = 0; attempt < 200; ++attempt) {
    publisher.publish_slice(random_slice(random, 7, 4, 3));
    if (next_of(subscriber, Topic::kSlice, 25)) {
      drain(subscriber);
      return;
    }
  }
  FAIL() << "the subscriber never received a slice";
}

// binary16 keeps 11 significant bits of h = value / scale; below 2^-14 it keeps an absolute
// 2^-25 (subnormals). The float products around it add a rounding each.
void expect_half_of(const std::vector<float>& expected, const std::vector<float>& got) {
  ASSERT_EQ(got.size(), expected.size());
  float scale = 0;
  for (float v : expected)
    scale = std::max(scale, std::abs(v));
  double error_sq = 0;
  double norm_sq = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double bound = std::abs(expected[i]) * (0x1p-11 + 0x1p-22) + scale * 0x1p-24;
    ASSERT_LE(std::abs(static_cast<double>(got[i]) - expected[i]), bound)
        << i << ": " << expected[i] << " -> " << got[i];
    error_sq += std::pow(static_cast<double>(got[i]) - expected[i], 2);
    norm_sq += std::pow(static_cast<double>(expected[i]), 2);
  }
  EXPECT_LT(std::sqrt(error_sq / norm_sq), 3e-4);
  EXPECT_GT(error_sq, 0) << "binary16 values cannot all be exact";
}

struct Endpoint {
  zmq::context_t context{1};
  ServerCounters counters;
  SlicePublisher publisher{context, "tcp://127.0.0.1:*", 16, ServerSecurity{}, counters};
};

TEST(HalfPublication, AnFp16SubscriberGetsTheSameImagesAndPreviewInHalfTheBytes) {
  Endpoint endpoint;
  SlicePublisher& publisher = endpoint.publisher;
  const std::vector<Topic> topics = {Topic::kSlice, Topic::kRefined, Topic::kPreview};
  SliceSubscriber plain(publisher.address(), topics);
  SliceSubscriber half(publisher.address(), topics, 100, {}, SliceValueType::kHalf);
  ASSERT_NO_FATAL_FAILURE(await_subscription(publisher, plain));
  ASSERT_NO_FATAL_FAILURE(await_subscription(publisher, half));
  drain(plain);

  test::Random random;
  SCOPED_TRACE(random.seed);
  const SliceImage slice = random_slice(random, 2, 301, 157);
  const std::vector<float> expected = slice.values.to_vector();
  const std::uint64_t before = endpoint.counters.publications.load();
  publisher.publish_slice(slice);
  const std::optional<Publication> f32 = next_of(plain, Topic::kSlice);
  const std::optional<Publication> f16 = next_of(half, Topic::kSlice);
  ASSERT_TRUE(f32 && f16);
  EXPECT_EQ(endpoint.counters.publications.load() - before, 2u) << "float32 and fp16";
  EXPECT_EQ(f32->header.payload_encoding(), v1::PAYLOAD_ENCODING_FLOAT32);
  EXPECT_EQ(f16->header.payload_encoding(), v1::PAYLOAD_ENCODING_FLOAT16);
  EXPECT_EQ(f16->header.slice().SerializeAsString(), f32->header.slice().SerializeAsString())
      << "the same header, sequence and published_ns";
  EXPECT_EQ(f32->values, expected);
  ASSERT_NO_FATAL_FAILURE(expect_half_of(expected, f16->values));

  RefinedSliceImage refined;
  refined.slice = random_slice(random, 1, 64, 80);
  refined.iterations = 9;
  publisher.publish_refined(refined);
  const std::optional<Publication> refined16 = next_of(half, Topic::kRefined);
  ASSERT_TRUE(refined16);
  EXPECT_EQ(refined16->header.refined().iterations(), 9u);
  ASSERT_NO_FATAL_FAILURE(expect_half_of(refined.slice.values.to_vector(), refined16->values));

  // A preview volume on "fp16-preview": the same header, the volume within binary16's rounding.
  PreviewVolume preview;
  preview.scan_id = 4;
  preview.size_x = 24;
  preview.size_y = 20;
  preview.size_z = 16;
  preview.sequence = random.integer(1, 1000);
  preview.values = random_slice(random, 0, 24 * 20, 16).values.to_vector();
  publisher.publish_preview(preview);
  const std::optional<Publication> preview32 = next_of(plain, Topic::kPreview);
  const std::optional<Publication> preview16 = next_of(half, Topic::kPreview);
  ASSERT_TRUE(preview32 && preview16);
  EXPECT_EQ(preview16->header.payload_encoding(), v1::PAYLOAD_ENCODING_FLOAT16);
  EXPECT_EQ(preview16->header.preview().SerializeAsString(),
            preview32->header.preview().SerializeAsString());
  EXPECT_EQ(preview32->values, preview.values);
  ASSERT_NO_FATAL_FAILURE(expect_half_of(preview.values, preview16->values));
  EXPECT_EQ(endpoint.counters.publications_invalid.load(), 0u);
}

TEST(HalfPublication, EncodedOnlyWhileSomeoneSubscribes) {
  Endpoint endpoint;
  SlicePublisher& publisher = endpoint.publisher;
  SliceSubscriber plain(publisher.address(), {Topic::kSlice});
  ASSERT_NO_FATAL_FAILURE(await_subscription(publisher, plain));
  test::Random random;
  SCOPED_TRACE(random.seed);
  // Messages one slice makes the endpoint send.
  const auto messages_per_slice = [&] {
    const std::uint64_t before = endpoint.counters.publications.load();
    publisher.publish_slice(random_slice(random, 0, 32, 16));
    EXPECT_TRUE(next_of(plain, Topic::kSlice));
    return endpoint.counters.publications.load() - before;
  };
  EXPECT_EQ(messages_per_slice(), 1u) << "nobody wants fp16: nothing encoded";
  {
    SliceSubscriber half(publisher.address(), {Topic::kSlice}, 100, {}, SliceValueType::kHalf);
    ASSERT_NO_FATAL_FAILURE(await_subscription(publisher, half));
    EXPECT_EQ(messages_per_slice(), 2u);
  }
  // The fp16 subscriber went: its unsubscription reaches the server soon after.
  std::uint64_t messages = 2;
  for (int attempt = 0; attempt < 100 && messages != 1; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    messages = messages_per_slice();
  }
  EXPECT_EQ(messages, 1u) << "still encoding fp16 after its only subscriber left";
}

TEST(HalfPublication, AnEncodingWithoutRoomInTheBudgetIsSkippedAndCounted) {
  Endpoint endpoint;
  SlicePublisher& publisher = endpoint.publisher;
  // Room for the probes' fp16 values (4 x 3), not for a 64 x 64 image's.
  publisher.charge_to(std::make_shared<MemoryBudget>(std::size_t{4096}));
  SliceSubscriber plain(publisher.address(), {Topic::kSlice});
  SliceSubscriber half(publisher.address(), {Topic::kSlice}, 100, {}, SliceValueType::kHalf);
  ASSERT_NO_FATAL_FAILURE(await_subscription(publisher, plain));
  ASSERT_NO_FATAL_FAILURE(await_subscription(publisher, half));
  drain(plain);
  test::Random random;
  const SliceImage slice = random_slice(random, 3, 64, 64);
  publisher.publish_slice(slice);
  const std::optional<Publication> f32 = next_of(plain, Topic::kSlice);
  ASSERT_TRUE(f32);
  EXPECT_EQ(f32->values, slice.values.to_vector());
  EXPECT_EQ(endpoint.counters.named("publications_fp16_over_budget"), 1u);
  EXPECT_FALSE(next_of(half, Topic::kSlice, 300)) << "an fp16 image without a charge";
}

// What the client library refuses on the fp16 topics: a header that names float32, a payload of
// the wrong size, a scale that is not finite. Each is a ProtocolError; the next message is read.
TEST(HalfPublication, TheSubscriberRefusesMalformedFp16Messages) {
  zmq::context_t context(1);
  zmq::socket_t server(context, zmq::socket_type::pub);
  server.bind("tcp://127.0.0.1:*");
  SliceSubscriber subscriber(server.get(zmq::sockopt::last_endpoint), {Topic::kSlice}, 100, {},
                             SliceValueType::kHalf);
  SliceImage slice;
  slice.slice_id = 1;
  slice.width = 4;
  slice.height = 2;
  slice.values = std::vector<float>{1, -2, 3, 4, 0.5f, 6, 7, 8};
  const auto send = [&](v1::PublishHeader header, std::size_t payload_bytes) {
    const std::vector<float> values = slice.values.to_vector();
    InlineExecutor encoder;
    zmq::message_t payload = half_payload_message(values.data(), values.size(), 8.0f, encoder);
    server.send(zmq::buffer(std::string(kHalfSliceTopic)), zmq::send_flags::sndmore);
    server.send(zmq::buffer(header.SerializeAsString()), zmq::send_flags::sndmore);
    server.send(zmq::buffer(payload.data(), payload_bytes), zmq::send_flags::none);
  };
  v1::PublishHeader good = encode_slice(slice, 1);
  mark_half_payload(8.0f, &good);
  bool subscribed = false;
  for (int attempt = 0; attempt < 500 && !subscribed; ++attempt) {
    send(good, 16);
    subscribed = subscriber.receive(10).has_value();
  }
  ASSERT_TRUE(subscribed);
  while (subscriber.receive(50)) {
  }

  v1::PublishHeader float32 = good;
  float32.set_payload_encoding(v1::PAYLOAD_ENCODING_FLOAT32);
  v1::PublishHeader infinite = good;
  infinite.set_payload_scale(std::numeric_limits<float>::infinity());
  v1::PublishHeader next = encode_slice(slice, 2);  // not a repeat of the probes (published_ns 1)
  mark_half_payload(8.0f, &next);
  send(float32, 16);
  send(good, 14);
  send(infinite, 16);
  send(next, 16);
  for (const char* what : {"float32 header", "short payload", "infinite scale"}) {
    EXPECT_THROW(subscriber.receive(2000), client::ProtocolError) << what;
  }
  const std::optional<Publication> got = subscriber.receive(2000);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->values, slice.values.to_vector()) << "values exact in binary16 decode exactly";
}

}  // namespace
}  // namespace slicestream

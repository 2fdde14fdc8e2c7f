// A published slice goes to ZeroMQ without a copy: the outgoing message points at the image's
// own values, holds the image and its memory charge until ZeroMQ frees the message, and the
// values reach a viewer bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "clients/common/slice_subscriber.hpp"
#include "pipeline/backend/memory_budget.hpp"
#include "server/codec/publish_codec.hpp"
#include "server/publish_fanout.hpp"
#include "server/slice_publisher.hpp"
#include "tests/server/wire_builders.hpp"

namespace slicestream {
namespace {

// Random values with the bit patterns a copy through float arithmetic would change: negative
// zero, subnormals, infinities, a NaN with a payload.
std::vector<float> random_values(test::Random& random, std::size_t count) {
  std::vector<float> values(count);
  for (float& v : values)
    v = static_cast<float>(random.uniform(-1e3, 1e3));
  const std::uint32_t nan_bits = 0x7fc01234u;
  float nan = 0;
  std::memcpy(&nan, &nan_bits, sizeof nan);
  const float specials[] = {-0.0f, std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::infinity(), nan};
  for (std::size_t i = 0; i < std::size(specials) && i < count; ++i)
    values[random.integer(0, static_cast<std::uint32_t>(count - 1))] = specials[i];
  return values;
}

SliceImage random_slice(test::Random& random, int width, int height) {
  SliceImage slice;
  slice.slice_id = random.integer(0, 2);
  slice.width = width;
  slice.height = height;
  slice.scan_id = 9;
  slice.orientation.values = {1, 0, 0, 0, 1, 0, 0, 0, 0};
  slice.values = random_values(random, static_cast<std::size_t>(width) * height);
  return slice;
}

TEST(PublishCodec, APayloadOverValuesInPlacePointsAtThemAndHoldsTheirOwner) {
  test::Random random;
  SCOPED_TRACE(random.seed);
  auto owner = std::make_shared<const std::vector<float>>(random_values(random, 4096));
  std::weak_ptr<const std::vector<float>> watch = owner;
  const float* values = owner->data();
  const std::size_t count = owner->size();
  {
    zmq::message_t part = payload_message(values, count, std::move(owner));
    EXPECT_EQ(part.data(), static_cast<const void*>(values)) << "the values were copied";
    EXPECT_EQ(part.size(), 4096 * sizeof(float));
    EXPECT_FALSE(watch.expired()) << "the values went while the message pointed at them";
  }
  EXPECT_TRUE(watch.expired()) << "the message kept its owner after it was freed";

  auto unused = std::make_shared<int>(1);
  EXPECT_EQ(payload_message(nullptr, 0, unused).size(), 0u);
  EXPECT_EQ(unused.use_count(), 1) << "an empty part holds nothing";
}

// Subscribes `viewer` to every topic of an inproc:// publisher and returns once it has received
// something (probe events are sent until then and read away).
void subscribe_inproc_viewer(SlicePublisher& publisher, zmq::socket_t& viewer) {
  viewer.set(zmq::sockopt::subscribe, "");
  viewer.connect(publisher.address());
  zmq::message_t part;
  bool subscribed = false;
  for (int attempt = 0; attempt < 500 && !subscribed; ++attempt) {
    publisher.publish_event({EventKind::kWarning, 0, "probe", "subscription probe"});
    viewer.set(zmq::sockopt::rcvtimeo, 10);
    while (viewer.recv(part)) {
      subscribed = true;
    }
  }
  ASSERT_TRUE(subscribed) << "the viewer never received anything";
}

// A slices endpoint on inproc:// and a viewer subscribed to every topic.
class ZeroCopyInproc : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(subscribe_inproc_viewer(publisher, viewer)); }

  // Receives a publication [topic][header][values] and checks that its values part is the
  // publisher's buffer `values` itself, holding `expected`, and that `charge` lasts as long as
  // the received parts do.
  void receive_in_place(const char* topic, const float* values, const std::vector<float>& expected,
                        const std::weak_ptr<MemoryCharge>& charge) {
    const std::size_t bytes = expected.size() * sizeof(float);
    viewer.set(zmq::sockopt::rcvtimeo, 5000);
    std::vector<zmq::message_t> parts(3);
    for (zmq::message_t& received : parts) {
      ASSERT_TRUE(viewer.recv(received));
    }
    EXPECT_EQ(parts[0].to_string(), topic);
    ASSERT_EQ(parts[2].size(), bytes);
    EXPECT_EQ(parts[2].data(), static_cast<const void*>(values)) << "the values were copied";
    EXPECT_EQ(std::memcmp(parts[2].data(), expected.data(), bytes), 0);
    EXPECT_FALSE(charge.expired()) << "the charge went while the viewer held the message";
    parts.clear();
    EXPECT_TRUE(charge.expired()) << "ZeroMQ freed the message but the charge stayed";
  }

  zmq::context_t context{1};
  ServerCounters counters;
  SlicePublisher publisher{context, "inproc://zero-copy", 4, ServerSecurity{}, counters};
  zmq::socket_t viewer{context, zmq::socket_type::sub};
};

// inproc:// shares the message's buffer with the receiver (no copy anywhere), so the charge must
// last until the viewer's received part is gone, long after the publisher's call returned.
TEST_F(ZeroCopyInproc, TheChargeLastsUntilZeroMQFreesTheMessage) {
  test::Random random;
  SCOPED_TRACE(random.seed);
  SliceImage slice = random_slice(random, 301, 97);
  const std::vector<float> expected = slice.values.to_vector();
  const std::size_t bytes = expected.size() * sizeof(float);
  auto budget = std::make_shared<MemoryBudget>(std::size_t{1} << 30);
  const std::size_t before = budget->used_bytes();
  slice.memory = budget->try_charge(bytes);
  ASSERT_TRUE(slice.memory);
  std::weak_ptr<MemoryCharge> charge = slice.memory;
  auto image = std::make_shared<const SliceImage>(std::move(slice));
  const float* values = image->values.data();
  const std::uint64_t published = counters.publications.load();

  publisher.publish_shared_slice(std::move(image));
  EXPECT_EQ(counters.publications.load(), published + 1);
  EXPECT_FALSE(charge.expired()) << "the charge went while ZeroMQ held the message";
  EXPECT_EQ(budget->used_bytes(), before + bytes);

  ASSERT_NO_FATAL_FAILURE(receive_in_place(kSliceTopic, values, expected, charge));
  EXPECT_EQ(budget->used_bytes(), before);
}

// The publish stage shares a refined image's values before the sinks see it: the slices endpoint
// sends them from where they are, and their charge lasts until ZeroMQ frees the message.
TEST_F(ZeroCopyInproc, ARefinedSliceWithSharedValuesIsNotCopied) {
  test::Random random;
  SCOPED_TRACE(random.seed);
  RefinedSliceImage refined;
  refined.slice = random_slice(random, 257, 131);
  refined.iterations = 12;
  const std::vector<float> expected = refined.slice.values.to_vector();
  const std::size_t bytes = expected.size() * sizeof(float);
  auto budget = std::make_shared<MemoryBudget>(std::size_t{1} << 30);
  refined.slice.memory = budget->try_charge(bytes);
  ASSERT_TRUE(refined.slice.memory);
  std::weak_ptr<MemoryCharge> charge = refined.slice.memory;
  refined.slice.values.share();
  const float* values = std::as_const(refined.slice.values).data();  // a non-const read detaches

  publisher.publish_refined(refined);
  refined = RefinedSliceImage{};  // the pipeline's item is gone once the sinks return
  EXPECT_FALSE(charge.expired()) << "the charge went while ZeroMQ held the message";

  ASSERT_NO_FATAL_FAILURE(receive_in_place(kRefinedTopic, values, expected, charge));
}

TEST(ZeroCopyPublication, ValuesArriveBitIdenticalOverTcp) {
  zmq::context_t context(1);
  ServerCounters counters;
  SlicePublisher publisher(context, "tcp://127.0.0.1:*", 4, ServerSecurity{}, counters);
  client::SliceSubscriber subscriber(publisher.address(),
                                     {client::Topic::kSlice, client::Topic::kEvent});
  bool subscribed = false;
  for (int attempt = 0; attempt < 500 && !subscribed; ++attempt) {
    publisher.publish_event({EventKind::kWarning, 0, "probe", "subscription probe"});
    subscribed = subscriber.receive(10).has_value();
  }
  ASSERT_TRUE(subscribed);

  test::Random random;
  SCOPED_TRACE(random.seed);
  // Shared (the publish stage's form) and copied (publish_slice) images, one of a few values.
  for (const auto& [width, height] : {std::pair{1031, 769}, std::pair{3, 1}}) {
    for (bool shared : {true, false}) {
      SliceImage slice = random_slice(random, width, height);
      const std::vector<float> expected = slice.values.to_vector();
      if (shared) {
        publisher.publish_shared_slice(std::make_shared<const SliceImage>(std::move(slice)));
      } else {
        publisher.publish_slice(slice);
      }
      std::optional<client::Publication> got;
      do {
        got = subscriber.receive(5000);
      } while (got && got->topic != client::Topic::kSlice);
      ASSERT_TRUE(got.has_value()) << width << " x " << height;
      ASSERT_EQ(got->values.size(), expected.size());
      EXPECT_EQ(std::memcmp(got->values.data(), expected.data(), expected.size() * sizeof(float)),
                0)
          << width << " x " << height << (shared ? ", shared" : ", copied");
    }
  }
  EXPECT_EQ(counters.publications_invalid.load(), 0u);
}

// Records how each slice arrived.
class SharedSliceRecorder final : public PublishSink {
 public:
  void publish_slice(const SliceImage&) override { ++copied; }
  void publish_shared_slice(std::shared_ptr<const SliceImage> slice) override {
    shared.push_back(std::move(slice));
  }
  void publish_preview(const PreviewVolume&) override {}
  void publish_refined(const RefinedSliceImage&) override {}
  void publish_event(const ServerEvent&) override {}

  int copied = 0;
  std::vector<std::shared_ptr<const SliceImage>> shared;
};

// A sink that only reads during the call.
class SliceReader final : public PublishSink {
 public:
  void publish_slice(const SliceImage& slice) override {
    values.push_back(slice.values.to_vector());
  }
  void publish_preview(const PreviewVolume&) override {}
  void publish_refined(const RefinedSliceImage&) override {}
  void publish_event(const ServerEvent&) override {}

  std::vector<std::vector<float>> values;
};

TEST(ZeroCopyPublication, TheFanoutSharesOneImageWithEverySink) {
  test::Random random;
  SCOPED_TRACE(random.seed);
  SharedSliceRecorder first, second;
  SliceReader reader;
  PublishFanout fanout;
  fanout.add(first);
  fanout.add(reader);
  fanout.add(second);
  auto image = std::make_shared<const SliceImage>(random_slice(random, 17, 5));
  fanout.publish_shared_slice(image);
  ASSERT_EQ(first.shared.size(), 1u);
  ASSERT_EQ(second.shared.size(), 1u);
  EXPECT_EQ(first.shared[0], image);
  EXPECT_EQ(second.shared[0], image);
  EXPECT_EQ(first.copied + second.copied, 0);
  ASSERT_EQ(reader.values.size(), 1u);
  ASSERT_EQ(reader.values[0].size(), image->values.size());
  EXPECT_EQ(std::memcmp(reader.values[0].data(), image->values.data(),
                        image->values.size() * sizeof(float)),
            0);
}

}  // namespace
}  // namespace slicestream

// The WebSocket endpoint's copies of images against the server's memory budget: the hub's copy of
// each update and its encodings, and a GetSlice reply waiting for a client that does not read,
// are charged while they live; a copy without room is counted and announced (an update) or waits
// until there is room (an encoding), and the budget is never exceeded.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "server/http/http_endpoint.hpp"
#include "tests/server/http/fake_server_port.hpp"
#include "tests/server/http/http_test_client.hpp"

namespace slicestream {
namespace {

using test::TestWebSocket;
constexpr std::size_t kMiB = std::size_t{1} << 20;

std::vector<float> random_values(std::size_t count, unsigned seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values)
    v = value(random);
  return values;
}

SliceImage make_slice(std::uint32_t id, int side, unsigned seed) {
  SliceImage slice;
  slice.slice_id = id;
  slice.orientation.values = {2, 0, 0, 0, 2, 0, -1, -1, 0};
  slice.width = side;
  slice.height = side;
  slice.values = random_values(static_cast<std::size_t>(side) * side, seed);
  return slice;
}

bool wait_until(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

class WebSocketBudgetTest : public ::testing::Test {
 protected:
  void start(std::size_t limit_bytes) {
    budget_ = std::make_shared<MemoryBudget>(limit_bytes);
    config_.listen = "127.0.0.1:0";
    config_.max_update_rate_hz = 0;
    port_.set_responder([this](const v1::Request& request) {
      WireReply reply;
      reply.reply.set_protocol_version(1);
      reply.reply.set_request_id(request.request_id());
      if (request.has_get_slice()) {
        // As the pipeline does: the values are charged before they are made.
        const auto& get = request.get_slice();
        const std::size_t count = std::size_t{get.width()} * get.height();
        reply.memory = budget_->try_charge(count * sizeof(float));
        reply.reply.mutable_slice()->set_width(get.width());
        reply.reply.mutable_slice()->set_height(get.height());
        reply.values = random_values(count, 99);
      }
      return reply;
    });
    endpoint_ = std::make_unique<HttpEndpoint>(config_, port_, counters_, budget_);
    endpoint_->start();
  }
  void TearDown() override {
    if (endpoint_) endpoint_->stop();
  }
  void wait_sessions(std::int64_t count) {
    ASSERT_TRUE(wait_until([&] { return counters_.websocket_sessions.load() == count; }));
  }

  SharedMemoryBudget budget_;
  HttpConfig config_;
  test::FakeServerPort port_;
  HttpCounters counters_;
  std::unique_ptr<HttpEndpoint> endpoint_;
};

TEST_F(WebSocketBudgetTest, TheHubsCopyOfAnImageAndItsEncodingAreCharged) {
  start(64 * kMiB);
  TestWebSocket ws(endpoint_->address(), "/ws?encoding=f32");
  wait_sessions(1);
  const SliceImage slice = make_slice(3, 512, 1);
  endpoint_->publish_sink().publish_slice(slice);
  auto image = ws.receive_type("slice");
  ASSERT_TRUE(image);
  EXPECT_EQ(image->values, slice.values);
  // The hub keeps the latest image for sessions that join later: its values and the float32
  // message it sent. Uncharged, these were memory the budget did not know about.
  const std::size_t values_bytes = slice.values.size() * sizeof(float);
  const std::size_t expected =
      values_bytes + image_message_bytes(slice.values.size(), ImageEncoding::kFloat32);
  EXPECT_TRUE(wait_until([&] { return budget_->used_bytes() == expected; }))
      << budget_->used_bytes() << " bytes charged, expected " << expected;
  // A newer image replaces it: the older copies' charges go with them.
  const SliceImage newer = make_slice(3, 512, 2);
  endpoint_->publish_sink().publish_slice(newer);
  image = ws.receive_type("slice");
  ASSERT_TRUE(image);
  EXPECT_EQ(image->values, newer.values);
  EXPECT_TRUE(wait_until([&] { return budget_->used_bytes() == expected; }));
}

// The publish stage hands its charged image over (publish_shared_slice): the hub keeps the image
// itself, under the image's own charge, instead of a second charged copy of its values.
TEST_F(WebSocketBudgetTest, AHandedOverImageIsKeptUnderItsOwnCharge) {
  start(64 * kMiB);
  TestWebSocket ws(endpoint_->address(), "/ws?encoding=f32");
  wait_sessions(1);
  auto handed_over = [&](unsigned seed) {
    SliceImage slice = make_slice(3, 512, seed);
    slice.memory = budget_->try_charge(slice.values.size() * sizeof(float));  // as the pipeline
    return std::make_shared<const SliceImage>(std::move(slice));
  };
  std::shared_ptr<const SliceImage> slice = handed_over(1);
  const std::vector<float> sent = slice->values.to_vector();
  const std::size_t values_bytes = sent.size() * sizeof(float);
  const std::size_t expected =
      values_bytes + image_message_bytes(sent.size(), ImageEncoding::kFloat32);
  endpoint_->publish_sink().publish_shared_slice(slice);
  auto image = ws.receive_type("slice");
  ASSERT_TRUE(image);
  EXPECT_EQ(image->values, sent);
  EXPECT_TRUE(wait_until([&] { return budget_->used_bytes() == expected; }))
      << budget_->used_bytes() << " bytes charged, expected " << expected;
  // The publisher lets go: the hub's latest image still holds the charge.
  slice.reset();
  EXPECT_EQ(budget_->used_bytes(), expected);
  // A newer image replaces it: the older image and its charge go.
  std::shared_ptr<const SliceImage> newer = handed_over(2);
  const std::vector<float> newer_values = newer->values.to_vector();
  endpoint_->publish_sink().publish_shared_slice(std::move(newer));
  image = ws.receive_type("slice");
  ASSERT_TRUE(image);
  EXPECT_EQ(image->values, newer_values);
  EXPECT_TRUE(wait_until([&] { return budget_->used_bytes() == expected; }))
      << budget_->used_bytes() << " bytes charged, expected " << expected;
}

TEST_F(WebSocketBudgetTest, AnUpdateWithoutRoomIsCountedAndAnnouncedAndTheNextOneGoes) {
  start(4 * kMiB);
  TestWebSocket ws(endpoint_->address(), "/ws?encoding=f16");
  wait_sessions(1);
  auto others = budget_->try_charge(3 * kMiB + kMiB / 2);  // what the rest of the server holds
  ASSERT_TRUE(others);
  endpoint_->publish_sink().publish_slice(make_slice(1, 512, 3));  // 1 MiB of values: no room
  EXPECT_EQ(counters_.websocket_updates_over_budget.load(), 1u);
  EXPECT_LE(budget_->used_bytes(), budget_->limit_bytes());
  auto notice = ws.receive_type("notice");
  ASSERT_TRUE(notice);
  EXPECT_NE(notice->string_at({"message"}).find("memory budget"), std::string::npos)
      << notice->string_at({"message"});
  others.reset();
  const SliceImage next = make_slice(1, 512, 4);
  endpoint_->publish_sink().publish_slice(next);
  auto image = ws.receive_type("slice");
  ASSERT_TRUE(image);
  EXPECT_EQ(image->number_at({"header", "slice", "slice_id"}), 1);
  EXPECT_EQ(counters_.websocket_updates_over_budget.load(), 1u);
}

TEST_F(WebSocketBudgetTest, AnEncodingWithoutRoomWaitsUntilThereIsRoom) {
  start(4 * kMiB);
  TestWebSocket ws(endpoint_->address(), "/ws?encoding=f32");
  wait_sessions(1);
  auto others = budget_->try_charge(2 * kMiB + kMiB / 2);
  ASSERT_TRUE(others);
  // Its values (1 MiB) fit, its float32 message (1 MiB more) does not: it waits, counted.
  const SliceImage slice = make_slice(2, 512, 5);
  endpoint_->publish_sink().publish_slice(slice);
  ASSERT_TRUE(wait_until([&] { return counters_.websocket_updates_over_budget.load() >= 2; }))
      << "the encoding is retried while it does not fit";
  EXPECT_LE(budget_->used_bytes(), budget_->limit_bytes());
  others.reset();
  auto image = ws.receive_type("slice");
  ASSERT_TRUE(image) << "the image goes once there is room";
  EXPECT_EQ(image->values, slice.values);
}

TEST_F(WebSocketBudgetTest, AGetSliceReplyStaysChargedUntilAClientThatDoesNotReadTakesIt) {
  start(256 * kMiB);
  TestWebSocket slow(endpoint_->address(), "/ws?encoding=f32");
  slow.stream().next_layer().set_option(net::socket_base::receive_buffer_size(16 << 10));
  wait_sessions(1);
  slow.send_text(R"({"protocol_version":1,"request_id":"5","get_slice":{"orientation":)"
                 R"({"values":[2,0,0,0,2,0,-1,-1,0]},"width":1024,"height":1024}})");
  // 4 MiB of values, sent as a 4 MiB message the client does not read yet: the message keeps
  // the values' charge (before, it was given back as soon as the message was made).
  const std::size_t values_bytes = std::size_t{1024} * 1024 * sizeof(float);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_GE(budget_->used_bytes(), values_bytes);
  slow.stream().next_layer().set_option(net::socket_base::receive_buffer_size(8 << 20));
  auto reply = slow.receive_type("reply");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->values.size(), std::size_t{1024} * 1024);
  EXPECT_TRUE(wait_until([&] { return budget_->used_bytes() == 0; }))
      << budget_->used_bytes() << " bytes still charged after the reply left";
}

}  // namespace
}  // namespace slicestream

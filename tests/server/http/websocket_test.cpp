// The WebSocket at /ws over real loopback connections, with a fake server behind it: requests in
// JSON take the server's request path and get one reply each; images and events arrive encoded
// as docs/viewer.md says; limits (size, rate, requests in flight, origin) are enforced with a
// reason; a client that does not read never slows the publishing thread and gets the latest
// image per slice, not a backlog.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>

#include "pipeline/backend/cpu/worker_pool.hpp"
#include "server/codec/publish_codec.hpp"
#include "server/http/http_endpoint.hpp"
#include "server/http/websocket_session.hpp"
#include "tests/server/http/fake_server_port.hpp"
#include "tests/server/http/http_test_client.hpp"

namespace slicestream {
namespace {

using test::TestWebSocket;

std::vector<float> random_values(std::size_t count, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> value(0.01f, 0.004f);
  std::vector<float> values(count);
  for (float& v : values)
    v = value(random);
  return values;
}

SliceImage make_slice(std::uint32_t id, int width, int height, std::uint64_t sequence,
                      unsigned seed) {
  SliceImage slice;
  slice.slice_id = id;
  slice.orientation.values = {2, 0, 0, 0, 2, 0, -1, -1, 0};
  slice.width = width;
  slice.height = height;
  slice.sequence = sequence;
  slice.values = random_values(static_cast<std::size_t>(width) * height, seed);
  return slice;
}

double max_relative_error(const std::vector<float>& values, const std::vector<float>& reference) {
  double largest = 0, error = 0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    largest = std::max(largest, std::abs(static_cast<double>(reference[i])));
    error = std::max(error, std::abs(static_cast<double>(values[i]) - reference[i]));
  }
  return error / largest;
}

class WebSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.listen = "127.0.0.1:0";
    port_.set_responder([](const v1::Request& request) {
      WireReply reply;
      reply.reply.set_protocol_version(1);
      reply.reply.set_request_id(request.request_id());
      if (request.has_get_slice()) {
        const auto& get = request.get_slice();
        reply.reply.mutable_slice()->set_width(get.width());
        reply.reply.mutable_slice()->set_height(get.height());
        reply.values = random_values(std::size_t{get.width()} * get.height(), 99);
      } else if (request.has_remove_slice()) {
        reply.reply.set_code(v1::STATUS_CODE_NOT_FOUND);
        reply.reply.set_reason("unknown_slice");
        reply.reply.set_message("no slice 9");
      }
      return reply;
    });
  }
  void TearDown() override {
    if (endpoint_) endpoint_->stop();
  }
  void start(Executor* encoders = nullptr) {
    endpoint_ = std::make_unique<HttpEndpoint>(config_, port_, counters_, nullptr, encoders);
    endpoint_->start();
  }
  // Waits until the hub has `count` sessions (they register after the handshake's answer).
  void wait_sessions(std::int64_t count) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (counters_.websocket_sessions.load() != count &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_EQ(counters_.websocket_sessions.load(), count);
  }

  HttpConfig config_;
  test::FakeServerPort port_;
  HttpCounters counters_;
  std::unique_ptr<HttpEndpoint> endpoint_;
};

TEST_F(WebSocketTest, SaysHelloWithItsLimits) {
  config_.max_update_rate_hz = 20;
  start();
  TestWebSocket ws(endpoint_->address(), "/ws?encoding=f32&rate=10");
  auto hello = ws.receive();
  ASSERT_TRUE(hello);
  EXPECT_EQ(hello->type(), "hello");
  EXPECT_EQ(hello->string_at({"encoding"}), "f32");
  EXPECT_DOUBLE_EQ(hello->number_at({"max_update_rate_hz"}), 10);
  EXPECT_EQ(hello->number_at({"limits", "max_requests_in_flight"}), 16);
}

TEST_F(WebSocketTest, RequestsTakeTheServersPathAndGetOneReplyEach) {
  start();
  TestWebSocket ws(endpoint_->address());
  ws.send_text(R"({"protocol_version":1,"request_id":"7","get_status":{}})");
  auto reply = ws.receive_type("reply");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->string_at({"reply", "request_id"}), "7");
  EXPECT_EQ(reply->string_at({"reply", "code"}), "STATUS_CODE_OK");
  ws.send_text(R"({"protocol_version":1,"request_id":"8","remove_slice":{"slice_id":9}})");
  reply = ws.receive_type("reply");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->string_at({"reply", "code"}), "STATUS_CODE_NOT_FOUND");
  EXPECT_EQ(reply->string_at({"reply", "reason"}), "unknown_slice");
  EXPECT_EQ(reply->string_at({"reply", "message"}), "no slice 9");
  const auto requests = port_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_TRUE(requests[0].has_get_status());
  EXPECT_EQ(requests[1].remove_slice().slice_id(), 9u);
  EXPECT_EQ(port_.endpoints()[0], "websocket");
}

TEST_F(WebSocketTest, GetSliceValuesArriveInFloat32AndInHalfWithScale) {
  start();
  const std::vector<float> expected = random_values(64 * 48, 99);
  for (const char* encoding : {"f32", "f16"}) {
    TestWebSocket ws(endpoint_->address(), std::string("/ws?encoding=") + encoding);
    ws.send_text(R"({"protocol_version":1,"request_id":"3","get_slice":{"orientation":{"values":)"
                 R"([1,0,0,0,1,0,0,0,0]},"width":64,"height":48}})");
    auto reply = ws.receive_type("reply");
    ASSERT_TRUE(reply);
    ASSERT_TRUE(reply->binary) << "an OK GetSlice reply carries its values";
    EXPECT_EQ(reply->string_at({"encoding"}), encoding);
    EXPECT_EQ(reply->number_at({"reply", "slice", "width"}), 64);
    ASSERT_EQ(reply->values.size(), expected.size());
    if (std::string(encoding) == "f32") {
      EXPECT_EQ(reply->values, expected);
    } else {
      // binary16 keeps 11 significant bits of values scaled to [-1, 1].
      EXPECT_LT(max_relative_error(reply->values, expected), 1.0 / 2048);
    }
  }
}

TEST_F(WebSocketTest, MalformedMessagesAreAnsweredWithTheirReasonAndTheSessionGoesOn) {
  start();
  TestWebSocket ws(endpoint_->address());
  ws.send_text("{not json");
  auto reply = ws.receive_type("reply");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->string_at({"reply", "code"}), "STATUS_CODE_INVALID_ARGUMENT");
  EXPECT_EQ(reply->string_at({"reply", "reason"}), "undecodable_request");
  ws.send_text(R"({"protocol_version":1,"bogus_field":3})");
  reply = ws.receive_type("reply");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->string_at({"reply", "reason"}), "undecodable_request");
  EXPECT_NE(reply->string_at({"reply", "message"}).find("bogus_field"), std::string::npos);
  ws.send_binary(std::string("\x01\x02\x03", 3));
  reply = ws.receive_type("reply");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->string_at({"reply", "reason"}), "undecodable_request");
  ws.send_text(R"({"protocol_version":1,"request_id":"5","get_status":{}})");
  reply = ws.receive_type("reply");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->string_at({"reply", "code"}), "STATUS_CODE_OK");
  EXPECT_EQ(port_.refusals().size(), 3u);
  EXPECT_EQ(counters_.websocket_messages_refused.load(), 3u);
}

// Wire text in an error message is escaped once (escape_wire_text) and then JSON-encoded: the
// reply stays valid JSON and shows the control bytes instead of passing them to a terminal.
TEST_F(WebSocketTest, ControlBytesInAMalformedRequestAreEscapedInItsValidJsonReply) {
  start();
  TestWebSocket ws(endpoint_->address());
  ws.send_text("{\"protocol_version\":1,\"bogus\\u001b[2J\\nline\":3}");
  const auto reply = ws.receive_type("reply");
  ASSERT_TRUE(reply);  // parsed as JSON
  EXPECT_EQ(reply->string_at({"reply", "reason"}), "undecodable_request");
  const std::string message = reply->string_at({"reply", "message"});
  EXPECT_NE(message.find("bogus"), std::string::npos) << message;
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(WebSocketOptionsTest, ARefusedOptionIsQuotedEscapedAndCut) {
  WebSocketOptions options;
  const std::string refused =
      parse_websocket_options("/ws?rate=2&bad\x1b[2J\n=" + std::string(200, 'x'), &options);
  EXPECT_NE(refused.find("bad\\x1b[2J\\n="), std::string::npos) << refused;
  EXPECT_EQ(refused.find('\x1b'), std::string::npos) << refused;
  EXPECT_NE(refused.find("more bytes)"), std::string::npos) << refused;
  EXPECT_EQ(options.rate_hz, 2.0);
  EXPECT_TRUE(parse_websocket_options("/ws?encoding=f16&preview=1", &options).empty());
}

TEST_F(WebSocketTest, RequestRateAndRequestsInFlightAreLimited) {
  config_.max_requests_per_s = 5;  // bursts of 10
  start();
  TestWebSocket ws(endpoint_->address());
  for (int i = 0; i < 30; ++i)
    ws.send_text(R"({"protocol_version":1,"get_status":{}})");
  int ok = 0, limited = 0;
  for (int i = 0; i < 30; ++i) {
    auto reply = ws.receive_type("reply");
    ASSERT_TRUE(reply);
    if (reply->string_at({"reply", "reason"}) == "rate_limited") {
      ++limited;
      EXPECT_EQ(reply->string_at({"reply", "code"}), "STATUS_CODE_RESOURCE_EXHAUSTED");
    } else {
      ++ok;
    }
  }
  EXPECT_GE(ok, 10);
  EXPECT_LE(ok, 14);  // the burst, and what refills while the messages arrive
  EXPECT_EQ(ok + limited, 30);

  config_.max_requests_per_s = 0;
  config_.max_requests_in_flight = 3;
  endpoint_->stop();
  start();
  port_.hold();
  TestWebSocket held(endpoint_->address());
  for (int i = 0; i < 5; ++i)
    held.send_text(R"({"protocol_version":1,"get_status":{}})");
  for (int i = 0; i < 2; ++i) {
    auto reply = held.receive_type("reply");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->string_at({"reply", "reason"}), "too_many_in_flight");
  }
  port_.release();
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(held.receive_type("reply"));
}

TEST_F(WebSocketTest, AnOversizedMessageClosesTheConnectionWithTooBig) {
  config_.max_message_bytes = 1024;
  start();
  TestWebSocket ws(endpoint_->address());
  ws.send_text(std::string(4096, ' '));
  while (ws.receive()) {
  }
  // The close frame arrives; answering it may find the socket already closed.
  EXPECT_EQ(ws.close_reason().code, websocket::close_code::too_big) << ws.error().message();
  // Counted when the server's read completes, which may be after the client saw the close.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (counters_.websocket_messages_refused.load() == 0 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_EQ(counters_.websocket_messages_refused.load(), 1u);
}

TEST_F(WebSocketTest, OnlyPagesOfThisServerMayConnectFromABrowser) {
  start();
  const std::string host = endpoint_->address().substr(7);
  EXPECT_NO_THROW(TestWebSocket(endpoint_->address(), "/ws", "http://" + host));
  EXPECT_THROW(TestWebSocket(endpoint_->address(), "/ws", "http://evil.example"),
               boost::system::system_error);
  EXPECT_THROW(TestWebSocket(endpoint_->address(), "/ws?encoding=f8"), boost::system::system_error);
}

TEST_F(WebSocketTest, PublicationsAndEventsReachEveryClient) {
  start();
  TestWebSocket a(endpoint_->address(), "/ws?encoding=f32");
  TestWebSocket b(endpoint_->address(), "/ws?encoding=f16");
  wait_sessions(2);
  const SliceImage slice = make_slice(4, 32, 16, 1, 5);
  endpoint_->publish_sink().publish_slice(slice);
  endpoint_->publish_sink().publish_event({EventKind::kWarning, 12, "frames_missing", "2 missing"});
  for (TestWebSocket* ws : {&a, &b}) {
    auto image = ws->receive_type("slice");
    ASSERT_TRUE(image);
    EXPECT_EQ(image->number_at({"header", "slice", "slice_id"}), 4);
    EXPECT_EQ(image->number_at({"header", "slice", "width"}), 32);
    EXPECT_LT(max_relative_error(image->values, slice.values.to_vector()), 1.0 / 2048);
    auto event = ws->receive_type("event");
    ASSERT_TRUE(event);
    EXPECT_EQ(event->string_at({"event", "kind"}), "EVENT_KIND_WARNING");
    EXPECT_EQ(event->string_at({"event", "reason"}), "frames_missing");
  }
  // A client that connects later gets the latest image of every slice at once.
  TestWebSocket late(endpoint_->address(), "/ws?encoding=f32");
  auto image = late.receive_type("slice");
  ASSERT_TRUE(image);
  EXPECT_EQ(image->values, slice.values);
}

// With helpers for the encoding (the server's publication encoders), an image message is the
// same, byte for byte, as the HTTP thread alone makes it: f16 (scale and conversion) and f32 (the
// copy), over more values than one helper's chunk.
TEST(ImageMessages, EncodedWithHelpersAreTheSameBytes) {
  WorkerPool helpers(3);
  const std::vector<float> values = random_values(std::size_t{3} << 20 | 7, 17);
  for (const ImageEncoding encoding : {ImageEncoding::kHalf, ImageEncoding::kFloat32}) {
    SCOPED_TRACE(to_string(encoding));
    const std::string alone =
        encode_image_message("slice", R"("header":{})", values.data(), values.size(), encoding);
    const std::string helped = encode_image_message("slice", R"("header":{})", values.data(),
                                                    values.size(), encoding, &helpers);
    EXPECT_EQ(helped.size(), alone.size());
    EXPECT_TRUE(helped == alone);
  }
}

// An endpoint with encoding helpers delivers a large slice to f32 and f16 clients as one without.
TEST_F(WebSocketTest, LargeImagesEncodedWithHelpersArriveIntact) {
  WorkerPool helpers(3);
  start(&helpers);
  TestWebSocket a(endpoint_->address(), "/ws?encoding=f32");
  TestWebSocket b(endpoint_->address(), "/ws?encoding=f16");
  wait_sessions(2);
  const SliceImage slice = make_slice(4, 1024, 768, 1, 23);
  endpoint_->publish_sink().publish_slice(slice);
  auto full = a.receive_type("slice");
  ASSERT_TRUE(full);
  EXPECT_EQ(full->values, slice.values);
  auto half = b.receive_type("slice");
  ASSERT_TRUE(half);
  EXPECT_LT(max_relative_error(half->values, slice.values.to_vector()), 1.0 / 2048);
  endpoint_->stop();  // before the helpers go
  endpoint_.reset();
}

TEST_F(WebSocketTest, AClientJoiningLaterIsNeverShownAnImageOlderThanThosePublishedMeanwhile) {
  start();
  const SliceImage first = make_slice(4, 32, 16, 1, 5);
  {
    TestWebSocket a(endpoint_->address(), "/ws?encoding=f32&preview=0");
    wait_sessions(1);
    endpoint_->publish_sink().publish_slice(first);
    ASSERT_TRUE(a.receive_type("slice"));
  }
  wait_sessions(0);
  // Published while nobody watches: not kept, and the image kept from before is now old.
  endpoint_->publish_sink().publish_slice(make_slice(4, 32, 16, 2, 6));
  TestWebSocket late(endpoint_->address(), "/ws?encoding=f32&preview=0");
  wait_sessions(1);
  const SliceImage marker = make_slice(9, 8, 8, 1, 7);
  endpoint_->publish_sink().publish_slice(marker);
  for (;;) {
    auto image = late.receive_type("slice");
    ASSERT_TRUE(image) << "the marker slice must arrive";
    const double id = image->number_at({"header", "slice", "slice_id"});
    if (id == 9) break;
    EXPECT_NE(image->number_at({"header", "slice", "sequence"}), 1)
        << "slice 4's image from before the client joined is older than one published since";
  }
}

TEST_F(WebSocketTest, ASlowClientGetsTheLatestImageAndNeverSlowsThePublisher) {
  config_.max_update_rate_hz = 0;
  start();
  TestWebSocket slow(endpoint_->address(), "/ws?encoding=f32&preview=0");
  slow.stream().next_layer().set_option(net::socket_base::receive_buffer_size(16 << 10));
  wait_sessions(1);
  // 400 updates of two 256 x 256 slices (512 KiB of values in all, each) while the client
  // reads nothing: the publishing thread must not wait for it.
  constexpr int kUpdates = 400;
  std::vector<SliceImage> last(2);
  const auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < kUpdates; ++i) {
    for (std::uint32_t id = 0; id < 2; ++id) {
      last[id] = make_slice(id, 256, 256, static_cast<std::uint64_t>(i), 1000 + i);
      endpoint_->publish_sink().publish_slice(last[id]);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  EXPECT_LT(seconds, 5.0 * test::time_scale())
      << "publishing must not wait for a client that does not read";
  EXPECT_GT(counters_.websocket_updates_superseded.load(), 100u);
  // Now read: each slice's last image arrives, after far fewer than 400 updates.
  std::map<double, std::uint64_t> newest;  // slice id -> sequence
  int received = 0;
  while (newest[0] != kUpdates - 1 || newest[1] != kUpdates - 1) {
    auto image = slow.receive_type("slice");
    ASSERT_TRUE(image) << "the latest images must arrive";
    ++received;
    const double id = image->number_at({"header", "slice", "slice_id"});
    const auto sequence =
        static_cast<std::uint64_t>(image->number_at({"header", "slice", "sequence"}));
    EXPECT_GE(sequence, newest[id]) << "never an older image after a newer one";
    newest[id] = sequence;
    if (sequence == kUpdates - 1) {
      EXPECT_EQ(image->values, last[static_cast<std::size_t>(id)].values);
    }
  }
  EXPECT_LT(received, 2 * kUpdates / 2);
}

TEST_F(WebSocketTest, UpdatesPerSliceAreLimitedToTheRate) {
  config_.max_update_rate_hz = 10;
  start();
  TestWebSocket ws(endpoint_->address(), "/ws?encoding=f16");
  wait_sessions(1);
  const auto begin = std::chrono::steady_clock::now();
  int received = 0;
  std::uint64_t newest = 0;
  for (int i = 0; i < 100; ++i) {  // 100 updates over about one second
    endpoint_->publish_sink().publish_slice(
        make_slice(1, 16, 16, static_cast<std::uint64_t>(i), i));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  while (newest != 99) {
    auto image = ws.receive_type("slice");
    ASSERT_TRUE(image);
    ++received;
    newest = static_cast<std::uint64_t>(image->number_at({"header", "slice", "sequence"}));
  }
  EXPECT_LE(received, 10 * seconds + 3) << "at most 10 per second (+ the first and the last)";
  EXPECT_GE(received, 3);
}

TEST_F(WebSocketTest, AMovedSliceIsSentAtOnceWhateverTheRate) {
  config_.max_update_rate_hz = 0.2;  // one image per 5 s
  start();
  TestWebSocket ws(endpoint_->address(), "/ws?encoding=f32");
  wait_sessions(1);
  SliceImage slice = make_slice(3, 16, 16, 1, 7);
  endpoint_->publish_sink().publish_slice(slice);
  ASSERT_TRUE(ws.receive_type("slice"));
  slice.sequence = 2;  // the same place: held back by the rate
  endpoint_->publish_sink().publish_slice(slice);
  slice.orientation.values[8] = 0.5f;  // moved: at once
  slice.sequence = 3;
  const auto begin = std::chrono::steady_clock::now();
  endpoint_->publish_sink().publish_slice(slice);
  auto moved = ws.receive_type("slice");
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->number_at({"header", "slice", "sequence"}), 3);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(2));
}

TEST_F(WebSocketTest, StoppingTheServerClosesSessionsWithGoingAway) {
  start();
  TestWebSocket ws(endpoint_->address());
  wait_sessions(1);
  endpoint_->stop();
  while (ws.receive()) {
  }
  // The close frame arrived (answering it finds the server's socket gone: this client read it
  // only after stop() returned).
  EXPECT_EQ(ws.close_reason().code, websocket::close_code::going_away) << ws.error().message();
}

}  // namespace
}  // namespace slicestream

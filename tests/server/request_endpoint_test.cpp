// The requests endpoint over real loopback sockets, with a fake pipeline: every request gets
// exactly one reply, garbage included, and the endpoint stays alive.
#include <gtest/gtest.h>

#include <future>

#include <zmq_addon.hpp>

#include "clients/common/request_client.hpp"
#include "server/request_endpoint.hpp"
#include "tests/server/fake_pipeline.hpp"
#include "tests/server/wire_builders.hpp"

namespace slicestream {
namespace {

using client::RequestClient;
using client::Response;

CommandReply answer(const Command& command) {
  CommandReply reply;
  if (std::holds_alternative<GetStatusCommand>(command)) {
    StatusReport report;
    report.backend = "fake";
    report.scan_state = ScanState::kIdle;
    reply.report = report;
  } else if (const auto* get = std::get_if<GetSliceCommand>(&command)) {
    SliceImage slice;
    slice.orientation = get->orientation;
    slice.width = get->width;
    slice.height = get->height;
    slice.values.resize(static_cast<std::size_t>(get->width * get->height));
    for (std::size_t i = 0; i < slice.values.size(); ++i) {
      slice.values[i] = 0.25f * static_cast<float>(i) - 3.0f;
    }
    reply.slice = std::move(slice);
  } else if (const auto* set = std::get_if<SetParametersCommand>(&command)) {
    Parameters parameters;
    if (set->filter_window) parameters.filter.window = *set->filter_window;
    if (set->filter_cutoff) parameters.filter.cutoff = *set->filter_cutoff;
    reply.parameters = parameters;
  } else if (const auto* remove = std::get_if<RemoveSliceCommand>(&command)) {
    reply.status = {StatusCode::kNotFound, "no slice " + std::to_string(remove->slice_id)};
  }
  return reply;
}

class RequestEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.set_responder(answer);
    endpoint_ =
        std::make_unique<RequestEndpoint>(context_, "tcp://127.0.0.1:*", dispatcher_, counters_);
    endpoint_->start();
  }
  void TearDown() override { endpoint_->stop(); }

  // Sends raw parts from a DEALER and returns the reply's parts (empty on timeout).
  std::vector<zmq::message_t> raw_call(std::vector<std::string> parts,
                                       zmq::socket_type type = zmq::socket_type::dealer) {
    zmq::socket_t socket(context_, type);
    socket.set(zmq::sockopt::linger, 0);
    socket.connect(endpoint_->address());
    for (std::size_t i = 0; i < parts.size(); ++i) {
      socket.send(zmq::buffer(parts[i]),
                  i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
    std::vector<zmq::message_t> reply;
    zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(5000));
    if (item.revents & ZMQ_POLLIN) (void)zmq::recv_multipart(socket, std::back_inserter(reply));
    return reply;
  }

  static v1::Reply parse(const zmq::message_t& part) {
    v1::Reply reply;
    EXPECT_TRUE(reply.ParseFromArray(part.data(), static_cast<int>(part.size())));
    return reply;
  }

  zmq::context_t context_{1};
  test::FakePipeline fake_;
  ServerCounters counters_;
  RequestCounters request_counters_;
  RequestDispatcher dispatcher_{WireLimits{}, fake_, counters_, request_counters_};
  std::unique_ptr<RequestEndpoint> endpoint_;
};

TEST_F(RequestEndpointTest, StatusRequestGetsReplyWithServerCounters) {
  RequestClient client(endpoint_->address(), 5000);
  Response response = client.get_status();
  ASSERT_TRUE(response.ok()) << response.reply.message();
  ASSERT_TRUE(response.reply.has_status());
  EXPECT_EQ(response.reply.status().backend(), "fake");
  EXPECT_EQ(response.reply.status().counters().at("requests"), 1u);
  EXPECT_EQ(response.reply.request_id(), 1u);
  EXPECT_EQ(client.get_status().reply.request_id(), 2u);
}

TEST_F(RequestEndpointTest, GetSliceReplyCarriesTheValues) {
  RequestClient client(endpoint_->address(), 5000);
  const client::Orientation orientation{2, 0, 0, 0, 0, 3, -1, 0, -1.5f};
  Response response = client.get_slice(orientation, 7, 5);
  ASSERT_TRUE(response.ok()) << response.reply.message();
  ASSERT_TRUE(response.reply.has_slice());
  EXPECT_EQ(response.reply.slice().width(), 7u);
  EXPECT_EQ(response.reply.slice().height(), 5u);
  EXPECT_EQ(response.reply.slice().orientation().values(8), -1.5f);
  ASSERT_EQ(response.values.size(), 35u);
  for (std::size_t i = 0; i < response.values.size(); ++i) {
    EXPECT_EQ(response.values[i], 0.25f * static_cast<float>(i) - 3.0f);
  }
}

TEST_F(RequestEndpointTest, PipelineErrorsComeBackAsReplies) {
  RequestClient client(endpoint_->address(), 5000);
  Response response = client.remove_slice(9);
  EXPECT_EQ(response.reply.code(), v1::STATUS_CODE_NOT_FOUND);
  EXPECT_EQ(response.reply.message(), "no slice 9");
}

TEST_F(RequestEndpointTest, GarbageGetsErrorRepliesAndTheEndpointStaysAlive) {
  std::vector<zmq::message_t> reply = raw_call({std::string(50, '\xff')});
  ASSERT_EQ(reply.size(), 1u);
  v1::Reply parsed = parse(reply[0]);
  EXPECT_EQ(parsed.code(), v1::STATUS_CODE_INVALID_ARGUMENT);
  EXPECT_EQ(parsed.request_id(), 0u);
  EXPECT_EQ(parsed.reason(), "undecodable_request");
  EXPECT_FALSE(parsed.message().empty());

  v1::Request request;
  request.set_protocol_version(1);
  request.set_request_id(33);
  request.mutable_get_status();
  reply = raw_call({request.SerializeAsString(), "second part"});
  ASSERT_EQ(reply.size(), 1u);
  EXPECT_EQ(parse(reply[0]).reason(), "bad_parts");

  v1::Request empty;
  empty.set_protocol_version(1);
  empty.set_request_id(34);
  reply = raw_call({empty.SerializeAsString()});
  ASSERT_EQ(reply.size(), 1u);
  EXPECT_EQ(parse(reply[0]).reason(), "unknown_kind");
  EXPECT_EQ(parse(reply[0]).request_id(), 34u);

  v1::Request bad_slice;
  bad_slice.set_protocol_version(1);
  bad_slice.set_request_id(35);
  bad_slice.mutable_set_slice()->mutable_orientation()->add_values(std::nanf(""));
  reply = raw_call({bad_slice.SerializeAsString()});
  ASSERT_EQ(reply.size(), 1u);
  EXPECT_EQ(parse(reply[0]).code(), v1::STATUS_CODE_INVALID_ARGUMENT);
  EXPECT_EQ(parse(reply[0]).request_id(), 35u);

  reply = raw_call({""});  // an empty part is an empty (version 0) Request
  ASSERT_EQ(reply.size(), 1u);
  EXPECT_EQ(parse(reply[0]).reason(), "bad_protocol_version");

  EXPECT_EQ(counters_.requests_rejected.load(), 5u);
  EXPECT_TRUE(fake_.commands().empty()) << "refused requests must not reach the pipeline";
  RequestClient client(endpoint_->address(), 5000);
  EXPECT_TRUE(client.get_status().ok());
}

TEST_F(RequestEndpointTest, ReqSocketsAndReqStyleEnvelopesWork) {
  v1::Request request;
  request.set_protocol_version(1);
  request.set_request_id(5);
  request.mutable_get_status();
  std::vector<zmq::message_t> reply =
      raw_call({request.SerializeAsString()}, zmq::socket_type::req);
  ASSERT_EQ(reply.size(), 1u);  // REQ strips the delimiter
  EXPECT_EQ(parse(reply[0]).request_id(), 5u);
  EXPECT_EQ(parse(reply[0]).code(), v1::STATUS_CODE_OK);

  reply = raw_call({"", request.SerializeAsString()});  // a DEALER speaking REQ's envelope
  ASSERT_EQ(reply.size(), 2u);
  EXPECT_EQ(reply[0].size(), 0u);
  EXPECT_EQ(parse(reply[1]).request_id(), 5u);
}

// The endpoint holds no pipeline state: a partial filter update reaches the pipeline as it came
// (the reconstruct stage completes it, tests/pipeline/commands_test.cpp).
TEST_F(RequestEndpointTest, PartialFilterUpdatesPassThrough) {
  RequestClient client(endpoint_->address(), 5000);
  v1::SetParameters cutoff_only;
  cutoff_only.set_filter_cutoff(0.25f);
  ASSERT_TRUE(client.set_parameters(cutoff_only).ok());
  v1::SetParameters window_only;
  window_only.set_filter(v1::FILTER_WINDOW_COSINE);
  ASSERT_TRUE(client.set_parameters(window_only).ok());

  const std::vector<Command> commands = fake_.commands();
  ASSERT_EQ(commands.size(), 2u);
  const auto& first = std::get<SetParametersCommand>(commands[0]);
  const auto& second = std::get<SetParametersCommand>(commands[1]);
  EXPECT_FALSE(first.filter_window.has_value());
  EXPECT_EQ(first.filter_cutoff, std::optional<float>(0.25f));
  EXPECT_EQ(second.filter_window, std::optional<FilterWindow>(FilterWindow::kCosine));
  EXPECT_FALSE(second.filter_cutoff.has_value());
}

TEST(RequestEndpointStop, PendingRequestsAreAnsweredUnavailable) {
  zmq::context_t context(1);
  test::FakePipeline fake;
  fake.hold_replies();
  ServerCounters counters;
  RequestCounters request_counters;
  RequestDispatcher dispatcher({}, fake, counters, request_counters);
  RequestEndpoint endpoint(context, "tcp://127.0.0.1:*", dispatcher, counters);
  endpoint.start();
  RequestClient client(endpoint.address(), 10000);
  auto response = std::async(std::launch::async, [&] { return client.get_status(); });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (fake.commands().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(fake.commands().size(), 1u);
  endpoint.stop();
  Response got = response.get();
  EXPECT_EQ(got.reply.code(), v1::STATUS_CODE_UNAVAILABLE);
  EXPECT_EQ(got.reply.request_id(), 1u);
}

TEST(RequestClientTimeout, ClearErrorWhenNobodyAnswers) {
  zmq::context_t context(1);
  std::string address;
  {
    // Take a free port and release it: nobody listens there afterwards.
    zmq::socket_t probe(context, zmq::socket_type::router);
    probe.bind("tcp://127.0.0.1:*");
    address = probe.get(zmq::sockopt::last_endpoint);
  }
  RequestClient client(address, 200);
  const auto start = std::chrono::steady_clock::now();
  try {
    client.get_status();
    FAIL() << "expected a TimeoutError";
  } catch (const client::TimeoutError& error) {
    EXPECT_NE(std::string(error.what()).find(address), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("no reply"), std::string::npos) << error.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
}

TEST(Binding, ErrorsNameTheEndpointAndAddress) {
  zmq::context_t context(1);
  test::FakePipeline fake;
  ServerCounters counters;
  RequestCounters request_counters;
  RequestDispatcher dispatcher({}, fake, counters, request_counters);
  RequestEndpoint first(context, "tcp://127.0.0.1:*", dispatcher, counters);
  try {
    RequestEndpoint second(context, first.address(), dispatcher, counters);
    FAIL() << "binding an address in use must fail";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("requests"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find(first.address()), std::string::npos) << error.what();
  }
  EXPECT_THROW(RequestEndpoint(context, "http://127.0.0.1:80", dispatcher, counters),
               std::runtime_error);
}

}  // namespace
}  // namespace slicestream

// Blocking HTTP and WebSocket clients for the HTTP endpoint's tests (Boost.Beast), with receive
// timeouts so that a missing answer fails a test instead of hanging it, and a decoder of the
// WebSocket's messages (JSON through protobuf's Struct; images with their values).
#pragma once

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "server/http/beast.hpp"
#include "server/http/half_float.hpp"

namespace slicestream::test {

// "http://127.0.0.1:8080" -> host, port.
inline std::pair<std::string, std::string> host_port(const std::string& address) {
  const std::string rest = address.substr(address.find("//") + 2);
  const std::size_t colon = rest.rfind(':');
  return {rest.substr(0, colon), rest.substr(colon + 1)};
}

inline void set_receive_timeout(tcp::socket& socket, int milliseconds) {
  timeval tv{milliseconds / 1000, (milliseconds % 1000) * 1000};
  setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

inline tcp::socket connect_to(net::io_context& io, const std::string& address, int timeout_ms) {
  const auto [host, port] = host_port(address);
  tcp::socket socket(io);
  socket.connect({net::ip::make_address(host), static_cast<unsigned short>(std::stoi(port))});
  set_receive_timeout(socket, timeout_ms);
  return socket;
}

struct HttpResult {
  unsigned status = 0;
  std::string body;
  std::string content_type;
  std::string error;  // a transport error (timeout, closed)
};

inline HttpResult http_request(const std::string& address, http::verb verb,
                               const std::string& target, int timeout_ms = 10000,
                               std::size_t extra_header_bytes = 0) {
  net::io_context io;
  HttpResult result;
  try {
    tcp::socket socket = connect_to(io, address, timeout_ms);
    http::request<http::string_body> request{verb, target, 11};
    request.set(http::field::host, host_port(address).first);
    if (extra_header_bytes > 0) request.set("X-Padding", std::string(extra_header_bytes, 'x'));
    request.keep_alive(false);
    http::write(socket, request);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    if (verb == http::verb::head) parser.skip(true);
    http::read(socket, buffer, parser);
    result.status = parser.get().result_int();
    result.body = parser.get().body();
    result.content_type = std::string(parser.get()[http::field::content_type]);
  } catch (const std::exception& error) {
    result.error = error.what();
  }
  return result;
}

inline HttpResult http_get(const std::string& address, const std::string& target,
                           int timeout_ms = 10000) {
  return http_request(address, http::verb::get, target, timeout_ms);
}

// A decoded WebSocket message: JSON (text, or the header of an image) and image values.
struct WsMessage {
  bool binary = false;
  google::protobuf::Struct json;
  std::vector<float> values;
  std::string raw;

  std::string type() const { return string_at({"type"}); }
  const google::protobuf::Value* at(const std::vector<std::string>& path) const {
    const google::protobuf::Struct* object = &json;
    const google::protobuf::Value* value = nullptr;
    for (const std::string& key : path) {
      if (!object) return nullptr;
      auto it = object->fields().find(key);
      if (it == object->fields().end()) return nullptr;
      value = &it->second;
      object = value->has_struct_value() ? &value->struct_value() : nullptr;
    }
    return value;
  }
  std::string string_at(const std::vector<std::string>& path) const {
    const auto* value = at(path);
    return value ? value->string_value() : std::string();
  }
  // A JSON list of numbers (empty when absent).
  std::vector<double> numbers_at(const std::vector<std::string>& path) const {
    std::vector<double> numbers;
    const auto* value = at(path);
    if (value == nullptr || !value->has_list_value()) return numbers;
    for (const auto& item : value->list_value().values())
      numbers.push_back(item.number_value());
    return numbers;
  }
  double number_at(const std::vector<std::string>& path) const {
    const auto* value = at(path);
    if (!value) return std::nan("");
    // 64-bit integers travel as strings in protobuf's JSON mapping.
    return value->has_string_value() ? std::stod(value->string_value()) : value->number_value();
  }
};

inline WsMessage decode_ws_message(std::string data, bool binary) {
  WsMessage message;
  message.binary = binary;
  std::string json = data;
  if (binary) {
    EXPECT_GE(data.size(), 4u);
    std::uint32_t length = 0;
    for (int i = 0; i < 4; ++i)
      length |= static_cast<std::uint32_t>(static_cast<unsigned char>(data[i])) << (8 * i);
    EXPECT_EQ((4 + length) % 4, 0u) << "values must start at a multiple of 4 bytes";
    json = data.substr(4, length);
    const std::string values = data.substr(4 + length);
    google::protobuf::Struct header;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &header).ok()) << json;
    const auto& fields = header.fields();
    const std::string encoding = fields.at("encoding").string_value();
    const double scale = fields.at("scale").number_value();
    const auto count = static_cast<std::size_t>(fields.at("count").number_value());
    if (encoding == "f16") {
      EXPECT_EQ(values.size(), 2 * count);
      for (std::size_t i = 0; i < count && 2 * i + 1 < values.size(); ++i) {
        std::uint16_t half = 0;
        std::memcpy(&half, values.data() + 2 * i, 2);
        message.values.push_back(half_to_float(half) * static_cast<float>(scale));
      }
    } else {
      EXPECT_EQ(values.size(), 4 * count);
      message.values.resize(values.size() / 4);
      std::memcpy(message.values.data(), values.data(), 4 * message.values.size());
    }
  }
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &message.json).ok()) << json;
  message.raw = std::move(data);
  return message;
}

class TestWebSocket {
 public:
  // Connects and upgrades; `origin` empty: no Origin header (not a browser).
  TestWebSocket(const std::string& address, const std::string& target = "/ws",
                const std::string& origin = "", int timeout_ms = 10000)
      : ws_(connect_to(io_, address, timeout_ms)), timeout_ms_(timeout_ms) {
    const std::string host = host_port(address).first + ":" + host_port(address).second;
    ws_.set_option(websocket::stream_base::decorator([origin](websocket::request_type& request) {
      if (!origin.empty()) request.set(http::field::origin, origin);
    }));
    ws_.handshake(response_, host, target);
  }
  void send_text(const std::string& text) {
    ws_.text(true);
    ws_.write(net::buffer(text));
  }
  void send_binary(const std::string& bytes) {
    ws_.binary(true);
    ws_.write(net::buffer(bytes));
  }
  // The next message; nullopt on timeout or close (error() says which). The read runs
  // asynchronously against a deadline: a blocking websocket read ignores SO_RCVTIMEO, so a lost
  // message would hang the test instead of failing it.
  std::optional<WsMessage> receive() {
    beast::flat_buffer buffer;
    beast::error_code error;
    bool done = false;
    ws_.async_read(buffer, [&](beast::error_code result, std::size_t) {
      error = result;
      done = true;
    });
    io_.restart();
    io_.run_for(std::chrono::milliseconds(timeout_ms_));
    if (!done) {
      ws_.next_layer().cancel();  // the read completes with operation_aborted
      io_.restart();
      io_.run();
      error_ = net::error::timed_out;
      return std::nullopt;
    }
    if (error) {
      error_ = error;
      return std::nullopt;
    }
    return decode_ws_message(beast::buffers_to_string(buffer.data()), ws_.got_binary());
  }
  // Skips messages until one of `type` arrives (hello, events, images in between).
  std::optional<WsMessage> receive_type(const std::string& type, int max_messages = 1000) {
    for (int i = 0; i < max_messages; ++i) {
      auto message = receive();
      if (!message || message->type() == type) return message;
    }
    return std::nullopt;
  }
  beast::error_code error() const { return error_; }
  websocket::close_reason close_reason() const { return ws_.reason(); }
  websocket::stream<tcp::socket>& stream() { return ws_; }

 private:
  net::io_context io_;
  websocket::stream<tcp::socket> ws_;
  websocket::response_type response_;
  beast::error_code error_;
  int timeout_ms_;
};

}  // namespace slicestream::test

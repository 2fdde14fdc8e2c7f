// Blocking HTTP and WebSocket clients for the HTTP endpoint's tests (Boost.Beast), with receive
// timeouts so that a missing answer fails a test instead of hanging it, and a decoder of the
// WebSocket's messages (JSON through nlohmann/json; images with their values). Not protobuf's
// Struct: reading a google::protobuf::Map that Debian's uninstrumented libprotobuf filled crashes
// in ThreadSanitizer builds.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kernels/half_float.hpp"
#include "server/http/beast.hpp"
#include "tests/common/time_scale.hpp"

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
  nlohmann::json json;
  std::vector<float> values;
  std::string raw;

  std::string type() const { return string_at({"type"}); }
  // The value under `path` through nested objects; nullptr when any key is absent.
  const nlohmann::json* at(const std::vector<std::string>& path) const {
    const nlohmann::json* value = &json;
    for (const std::string& key : path) {
      if (!value->is_object()) return nullptr;
      const auto it = value->find(key);
      if (it == value->end()) return nullptr;
      value = &*it;
    }
    return value;
  }
  // Empty when absent or not a string.
  std::string string_at(const std::vector<std::string>& path) const {
    const auto* value = at(path);
    return value && value->is_string() ? value->get<std::string>() : std::string();
  }
  // A JSON list of numbers (empty when absent; NaN for an item that is not a number).
  std::vector<double> numbers_at(const std::vector<std::string>& path) const {
    std::vector<double> numbers;
    const auto* value = at(path);
    if (value == nullptr || !value->is_array()) return numbers;
    for (const auto& item : *value)
      numbers.push_back(item.is_number() ? item.get<double>() : std::nan(""));
    return numbers;
  }
  // NaN when absent or neither a number nor a number's string.
  double number_at(const std::vector<std::string>& path) const {
    const auto* value = at(path);
    if (value == nullptr) return std::nan("");
    // 64-bit integers travel as strings in protobuf's JSON mapping.
    if (value->is_string()) return std::stod(value->get<std::string>());
    return value->is_number() ? value->get<double>() : std::nan("");
  }
};

// An image's values after its JSON header: f16 (scaled back) or f32, `count` of them.
inline std::vector<float> decode_image_values(const WsMessage& header, const std::string& bytes) {
  const std::string encoding = header.string_at({"encoding"});
  const double scale = header.number_at({"scale"});
  const double count_number = header.number_at({"count"});
  EXPECT_TRUE(encoding == "f16" || encoding == "f32") << encoding;
  EXPECT_TRUE(std::isfinite(scale)) << "scale";
  EXPECT_TRUE(count_number >= 0) << "count";
  if (!(count_number >= 0)) return {};
  const auto count = static_cast<std::size_t>(count_number);
  std::vector<float> values;
  if (encoding == "f16") {
    EXPECT_EQ(bytes.size(), 2 * count);
    for (std::size_t i = 0; i < count && 2 * i + 1 < bytes.size(); ++i) {
      std::uint16_t half = 0;
      std::memcpy(&half, bytes.data() + 2 * i, 2);
      values.push_back(half_to_float(half) * static_cast<float>(scale));
    }
  } else {
    EXPECT_EQ(bytes.size(), 4 * count);
    values.resize(bytes.size() / 4);
    std::memcpy(values.data(), bytes.data(), 4 * values.size());
  }
  return values;
}

inline WsMessage decode_ws_message(std::string data, bool binary) {
  WsMessage message;
  message.binary = binary;
  std::string json = data;
  if (binary) {
    EXPECT_GE(data.size(), 4u);
    std::uint32_t length = 0;
    for (int i = 0; i < 4 && i < static_cast<int>(data.size()); ++i)
      length |= static_cast<std::uint32_t>(static_cast<unsigned char>(data[i])) << (8 * i);
    EXPECT_EQ((4 + length) % 4, 0u) << "values must start at a multiple of 4 bytes";
    EXPECT_LE(4 + std::size_t{length}, data.size()) << "header longer than the message";
    json = data.size() >= 4 ? data.substr(4, length) : std::string();
  }
  message.json = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(message.json.is_discarded()) << json;
  if (binary && data.size() >= 4 + json.size())
    message.values = decode_image_values(message, data.substr(4 + json.size()));
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
    io_.run_for(std::chrono::milliseconds(scaled_ms(timeout_ms_)));
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

#include "viewer_socket.hpp"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <stdexcept>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#pragma GCC diagnostic pop

namespace slicestream::bench {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
using tcp = boost::asio::ip::tcp;

namespace {

// The JSON header of a binary image message ([uint32 n][n bytes JSON][values], docs/viewer.md).
google::protobuf::Struct image_header(const std::string& message) {
  google::protobuf::Struct header;
  if (message.size() < 4) return header;
  std::uint32_t length = 0;
  for (int i = 0; i < 4; ++i)
    length |= static_cast<std::uint32_t>(static_cast<unsigned char>(message[i])) << (8 * i);
  (void)google::protobuf::util::JsonStringToMessage(message.substr(4, length), &header);
  return header;
}

const google::protobuf::Value* field(const google::protobuf::Struct& s, const char* name) {
  auto it = s.fields().find(name);
  return it == s.fields().end() ? nullptr : &it->second;
}

}  // namespace

struct ViewerSocket::Impl {
  net::io_context io;
  websocket::stream<tcp::socket> ws{io};
};

int free_tcp_port() {
  net::io_context io;
  tcp::acceptor acceptor(io, {net::ip::make_address("127.0.0.1"), 0});
  return acceptor.local_endpoint().port();
}

ViewerSocket::ViewerSocket(int port, const std::string& query, int receive_buffer_bytes)
    : impl_(std::make_unique<Impl>()) {
  tcp::socket& socket = impl_->ws.next_layer();
  socket.open(tcp::v4());
  if (receive_buffer_bytes > 0) {
    socket.set_option(net::socket_base::receive_buffer_size(receive_buffer_bytes));
  }
  socket.connect({net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
  impl_->ws.handshake("127.0.0.1:" + std::to_string(port), "/ws" + query);
  beast::flat_buffer hello;
  impl_->ws.read(hello);
}

ViewerSocket::~ViewerSocket() {
  stop();
}

void ViewerSocket::start_reading() {
  reader_ = std::thread([this] {
    beast::flat_buffer buffer;
    beast::error_code error;
    while (!stopping_) {
      impl_->ws.read(buffer, error);
      if (error) return;
      if (impl_->ws.got_binary()) ++images_;
      bytes_ += buffer.size();
      buffer.consume(buffer.size());
    }
  });
}

void ViewerSocket::stop() {
  stopping_ = true;
  beast::error_code ignored;
  impl_->ws.next_layer().shutdown(tcp::socket::shutdown_both, ignored);
  if (reader_.joinable()) reader_.join();
  impl_->ws.next_layer().close(ignored);
}

template <typename Accept>
bool ViewerSocket::read_until(std::uint32_t slice_id, Accept accept,
                              std::chrono::milliseconds timeout) {
  websocket::stream<tcp::socket>& ws = impl_->ws;
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  setsockopt(ws.next_layer().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto begin = std::chrono::steady_clock::now();
  beast::flat_buffer buffer;
  while (std::chrono::steady_clock::now() - begin < timeout) {
    beast::error_code error;
    ws.read(buffer, error);
    if (error) return false;
    const std::string message = beast::buffers_to_string(buffer.data());
    buffer.consume(buffer.size());
    if (!ws.got_binary()) {
      const bool refused = message.find("\"type\":\"reply\"") != std::string::npos &&
                           message.find("STATUS_CODE_OK") == std::string::npos;
      if (refused) return false;
      continue;
    }
    const google::protobuf::Struct header = image_header(message);
    const auto* type = field(header, "type");
    const auto* publication = field(header, "header");
    if (!type || type->string_value() != "slice" || !publication) continue;
    const auto* slice = field(publication->struct_value(), "slice");
    if (!slice) continue;
    const auto* id = field(slice->struct_value(), "slice_id");
    const auto* place = field(slice->struct_value(), "orientation");
    const auto* integrated = field(slice->struct_value(), "projections_integrated");
    if (!id || static_cast<std::uint32_t>(id->number_value()) != slice_id || !place) continue;
    const auto* list = field(place->struct_value(), "values");
    if (!list || list->list_value().values_size() != 9) continue;
    float orientation[9];
    for (int i = 0; i < 9; ++i)
      orientation[i] = static_cast<float>(list->list_value().values(i).number_value());
    // 64-bit integers travel as strings in protobuf's JSON mapping.
    const std::uint64_t projections =
        integrated
            ? std::stoull(integrated->string_value().empty() ? "0" : integrated->string_value())
            : 0;
    if (accept(orientation, projections)) return true;
  }
  return false;
}

bool ViewerSocket::wait_for_slice(std::uint32_t slice_id, std::uint64_t projections,
                                  float (&orientation)[9], std::chrono::milliseconds timeout) {
  return read_until(
      slice_id,
      [&](const float(&seen)[9], std::uint64_t integrated) {
        if (integrated < projections) return false;
        std::copy(std::begin(seen), std::end(seen), std::begin(orientation));
        return true;
      },
      timeout);
}

double ViewerSocket::move_slice(std::uint32_t slice_id, const float (&orientation)[9], int width,
                                int height, std::chrono::milliseconds timeout) {
  std::string values;
  for (float v : orientation)
    values += (values.empty() ? "" : ",") + std::to_string(v);
  const std::string request = R"({"protocol_version":1,"request_id":"1","set_slice":{"slice_id":)" +
                              std::to_string(slice_id) + R"(,"orientation":{"values":[)" + values +
                              R"(]},"width":)" + std::to_string(width) + R"(,"height":)" +
                              std::to_string(height) + "}}";
  const auto begin = std::chrono::steady_clock::now();
  impl_->ws.text(true);
  impl_->ws.write(net::buffer(request));
  const bool arrived = read_until(
      slice_id,
      [&](const float(&seen)[9], std::uint64_t) {
        for (int i = 0; i < 9; ++i) {
          if (std::abs(seen[i] - orientation[i]) > 1e-4f * (1 + std::abs(seen[i]))) return false;
        }
        return true;
      },
      timeout);
  if (!arrived) return -1;
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
      .count();
}

}  // namespace slicestream::bench

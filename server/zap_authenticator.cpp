#include "server/zap_authenticator.hpp"

#include <spdlog/spdlog.h>

#include <chrono>

#include "wire/wire_text.hpp"

namespace slicestream {
namespace {

constexpr const char* kZapEndpoint = "inproc://zeromq.zap.01";
constexpr std::chrono::milliseconds kPollInterval{100};
// version, request id, domain, address, routing id, mechanism, credentials.
constexpr std::size_t kRequestParts = 7;

std::string z85(const zmq::message_t& key) {
  if (key.size() != 32) return "(not a 32-byte key)";
  char text[41];
  zmq_z85_encode(text, static_cast<const std::uint8_t*>(key.data()), 32);
  return text;
}

}  // namespace

ZapAuthenticator::ZapAuthenticator(zmq::context_t& context,
                                   const std::vector<std::string>& allowed_public_keys,
                                   ServerCounters& counters)
    : socket_(context, zmq::socket_type::rep),
      allowed_(allowed_public_keys.begin(), allowed_public_keys.end()),
      counters_(counters) {
  socket_.set(zmq::sockopt::linger, 0);
  socket_.bind(kZapEndpoint);
}

ZapAuthenticator::~ZapAuthenticator() {
  stop();
}

void ZapAuthenticator::start() {
  thread_ = std::thread([this] { run(); });
}

void ZapAuthenticator::stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void ZapAuthenticator::run() {
  while (!stopping_) {
    try {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, kPollInterval);
      if ((item.revents & ZMQ_POLLIN) != 0) answer_one();
    } catch (const zmq::error_t& error) {
      if (error.num() == ETERM) break;
      spdlog::error("ZAP handler: {}", error.what());
    }
  }
}

void ZapAuthenticator::answer_one() {
  std::vector<zmq::message_t> parts;
  while (true) {
    zmq::message_t part;
    if (!socket_.recv(part, zmq::recv_flags::dontwait)) break;
    const bool more = part.more();
    if (parts.size() <= kRequestParts) parts.push_back(std::move(part));
    if (!more) break;
  }
  // A REP socket must answer every request: a malformed one (libzmq never sends one) is refused.
  while (parts.size() < kRequestParts)
    parts.emplace_back();
  const std::string domain = escape_wire_text(parts[2].to_string_view(), 64);
  const std::string address = escape_wire_text(parts[3].to_string_view(), 64);
  const std::string routing_id = escape_wire_text(parts[4].to_string_view(), 64);
  const std::string mechanism = parts[5].to_string();
  const bool curve = mechanism == "CURVE";
  const std::string key = curve ? z85(parts[6]) : std::string();
  const bool admitted = curve && allowed_.count(key) > 0;
  counters_.add(domain + (admitted ? "_clients_admitted" : "_clients_refused"));
  std::uint64_t suppressed = 0;
  if (log_throttle_.allow(&suppressed)) {
    const std::string more =
        suppressed ? " (" + std::to_string(suppressed) + " similar lines suppressed)" : "";
    if (admitted) {
      spdlog::info("{} endpoint: CURVE client {} from {} admitted{}", domain, key, address, more);
    } else {
      spdlog::warn(
          "{} endpoint: refused a client from {} (mechanism {}, public key {}, routing id '{}'): "
          "not among the allowed keys (--curve-clients){}",
          domain, address, escape_wire_text(mechanism, 16), curve ? key : "none", routing_id, more);
    }
  }
  const std::string status = admitted ? "200" : "400";
  const std::string text = admitted ? "OK" : "public key not allowed";
  socket_.send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
  socket_.send(parts[1], zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(status), zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(text), zmq::send_flags::sndmore);
  socket_.send(zmq::buffer(admitted ? key : std::string()), zmq::send_flags::sndmore);
  socket_.send(zmq::message_t(), zmq::send_flags::none);
}

}  // namespace slicestream

#include "clients/common/data_sender.hpp"

#include <cstring>

namespace slicestream::client {

DataSender::DataSender(const std::string& endpoint, int send_hwm, const ClientSecurity& security)
    : context_(1), socket_(context_, zmq::socket_type::push) {
  socket_.set(zmq::sockopt::sndhwm, send_hwm);
  secure_client_socket(socket_, security);
  watch_ = std::make_unique<ConnectionWatch>(socket_);
  socket_.connect(endpoint);
}

bool DataSender::wait_for_server(int timeout_ms) {
  return watch_ ? watch_->wait_connected(timeout_ms) : false;
}

ConnectionState DataSender::connection() {
  return watch_ ? watch_->state() : final_state_;
}

void DataSender::send_header(const v1::DataHeader& header, bool more) {
  const std::string bytes = header.SerializeAsString();
  socket_.send(zmq::buffer(bytes), more ? zmq::send_flags::sndmore : zmq::send_flags::none);
}

void DataSender::send_scan_begin(const v1::ScanBegin& scan_begin) {
  v1::DataHeader header;
  header.set_protocol_version(1);
  *header.mutable_scan_begin() = scan_begin;
  send_header(header, false);
}

void DataSender::send_frame(const v1::Frame& frame, const void* pixels, std::size_t bytes) {
  v1::DataHeader header;
  header.set_protocol_version(1);
  *header.mutable_frame() = frame;
  send_header(header, true);
  zmq::message_t payload(bytes);
  if (bytes > 0) std::memcpy(payload.data(), pixels, bytes);
  socket_.send(payload, zmq::send_flags::none);
}

void DataSender::send_scan_end(const v1::ScanEnd& scan_end) {
  v1::DataHeader header;
  header.set_protocol_version(1);
  *header.mutable_scan_end() = scan_end;
  send_header(header, false);
}

void DataSender::close(int timeout_ms) {
  if (watch_) final_state_ = watch_->state();
  watch_.reset();
  socket_.set(zmq::sockopt::linger, timeout_ms);
  socket_.close();
}

}  // namespace slicestream::client

// Errors of the client library: every failure says what happened and where.
#pragma once

#include <stdexcept>

namespace slicestream::client {

class ClientError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The server did not answer in time (not running, wrong address, overloaded).
class TimeoutError : public ClientError {
 public:
  using ClientError::ClientError;
};

// A message from the server that does not follow slicestream.v1 (framing, sizes, protobuf).
class ProtocolError : public ClientError {
 public:
  using ClientError::ClientError;
};

}  // namespace slicestream::client

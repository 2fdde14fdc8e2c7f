// What the slow- and stalled-subscriber tests share: an ipc address per test process and a wait
// until a subscriber's subscription has reached the slices endpoint.
#pragma once

#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "clients/common/slice_subscriber.hpp"
#include "server/slice_publisher.hpp"

namespace slicestream::test {

// ipc:// (small socket buffers, unlike loopback tcp's tens of MB): a few 1 MB images fill what
// ZeroMQ and the socket hold, the rest waits in the endpoint.
inline std::string ipc_address(const char* name) {
  return "ipc:///tmp/slicestream-" + std::string(name) + "-" + std::to_string(::getpid());
}

// Publishes probe events until `subscriber` gets one, then reads what else arrived.
inline void wait_until_subscribed(SlicePublisher& publisher, client::SliceSubscriber& subscriber) {
  for (int attempt = 0; attempt < 500; ++attempt) {
    publisher.publish_event({EventKind::kWarning, 0, "hello", "subscription probe"});
    if (subscriber.receive(10)) {
      while (subscriber.receive(50)) {
      }
      return;
    }
  }
  FAIL() << "the subscriber never received anything";
}

}  // namespace slicestream::test

// Which addresses reach beyond loopback, and the warning a plain socket bound there logs.
#include <gtest/gtest.h>

#include "server/socket_binding.hpp"
#include "tests/server/log_capture.hpp"

namespace slicestream {
namespace {

TEST(SocketSecurity, LoopbackIpcAndInprocStayLocal) {
  for (const char* address :
       {"tcp://127.0.0.1:5570", "tcp://127.0.0.1:*", "tcp://127.1.2.3:1", "tcp://[::1]:5570",
        "tcp://localhost:5570", "tcp://lo:5570", "ipc:///tmp/slicestream-data", "inproc://data"}) {
    EXPECT_FALSE(reaches_beyond_loopback(address)) << address;
  }
  for (const char* address :
       {"tcp://*:5570", "tcp://0.0.0.0:5570", "tcp://[::]:5570", "tcp://192.168.1.20:5570",
        "tcp://eth0:5570", "tcp://beamline-07:5570"}) {
    EXPECT_TRUE(reaches_beyond_loopback(address)) << address;
  }
}

TEST(SocketSecurity, APlainSocketBeyondLoopbackIsWarnedAbout) {
  test::LogCapture log;
  zmq::context_t context(1);
  zmq::socket_t plain(context, zmq::socket_type::pull);
  bind_endpoint(plain, "tcp://0.0.0.0:*", "data", ServerSecurity{});
  EXPECT_NE(log.text().find("the data endpoint listens on tcp://0.0.0.0:* beyond loopback"),
            std::string::npos)
      << log.text();

  test::LogCapture quiet;
  zmq::socket_t local(context, zmq::socket_type::pull);
  bind_endpoint(local, "tcp://127.0.0.1:*", "data", ServerSecurity{});
  ServerSecurity curve;
  curve.curve = generate_curve_key_pair();
  zmq::socket_t encrypted(context, zmq::socket_type::pull);
  bind_endpoint(encrypted, "tcp://0.0.0.0:*", "data", curve);
  EXPECT_EQ(quiet.text().find("beyond loopback"), std::string::npos) << quiet.text();

  // An endpoint CURVE does not cover (HTTP) names its own remedy.
  EXPECT_TRUE(warn_if_exposed("tcp://0.0.0.0:8080", "HTTP", false,
                              "CURVE does not cover HTTP: put it behind a TLS proxy."));
  EXPECT_NE(quiet.text().find("CURVE does not cover HTTP"), std::string::npos);
}

}  // namespace
}  // namespace slicestream

// Endpoint addresses: every program refuses what no socket could use, with a message that says
// what is wrong; one server address gives all three endpoints.
#include <gtest/gtest.h>

#include <string>

#include "cli/endpoint_address.hpp"

namespace slicestream::cli {
namespace {

const EndpointRules kBind{EndpointRole::kBind, false};
const EndpointRules kConnect{EndpointRole::kConnect, false};

// The problem found in `text` (empty when valid).
std::string problem(const std::string& text, EndpointRules rules) {
  return endpoint_problem(text, rules);
}

TEST(EndpointAddress, ValidAddressesParse) {
  std::string why;
  const std::optional<EndpointAddress> tcp = parse_endpoint("tcp://127.0.0.1:5570", kConnect, &why);
  ASSERT_TRUE(tcp) << why;
  EXPECT_EQ(tcp->scheme, "tcp");
  EXPECT_EQ(tcp->host, "127.0.0.1");
  EXPECT_EQ(tcp->port, 5570);
  const std::optional<EndpointAddress> v6 = parse_endpoint("tcp://[::1]:65535", kConnect, &why);
  ASSERT_TRUE(v6) << why;
  EXPECT_EQ(v6->host, "[::1]");
  EXPECT_EQ(v6->port, 65535);
  const std::optional<EndpointAddress> ipc = parse_endpoint("ipc:///run/ss/data", kBind, &why);
  ASSERT_TRUE(ipc) << why;
  EXPECT_EQ(ipc->path, "/run/ss/data");
  for (const char* good : {"tcp://beamline-07.example.org:1", "tcp://*:5570", "tcp://127.0.0.1:*",
                           "tcp://eth0:5570", "ipc://@abstract", "ipc://relative/sock"}) {
    EXPECT_EQ(problem(good, kBind), "") << good;
  }
}

TEST(EndpointAddress, PortOutsideTheRangeIsRefused) {
  // The address a new user typed: ZeroMQ bound it to another port.
  EXPECT_NE(problem("tcp://127.0.0.1:99999", kBind).find("outside 1..65535"), std::string::npos);
  EXPECT_NE(problem("tcp://127.0.0.1:99999", kConnect).find("'tcp://127.0.0.1:99999'"),
            std::string::npos)
      << "the message quotes the address";
  EXPECT_NE(problem("tcp://127.0.0.1:0", kBind), "");
  EXPECT_NE(problem("tcp://127.0.0.1:123456789012345678901", kBind), "");
  EXPECT_NE(problem("tcp://127.0.0.1:-1", kBind).find("not a number"), std::string::npos);
  EXPECT_NE(problem("tcp://127.0.0.1:55x", kBind).find("not a number"), std::string::npos);
}

TEST(EndpointAddress, MalformedAddressesSayWhatIsWrong) {
  EXPECT_NE(problem("127.0.0.1:5570", kConnect).find("no transport"), std::string::npos);
  EXPECT_NE(problem("tcp://127.0.0.1", kConnect).find("port is missing"), std::string::npos);
  EXPECT_NE(problem("tcp://:5570", kConnect).find("host is missing"), std::string::npos);
  EXPECT_NE(problem("tcp://local host:5570", kConnect).find("characters"), std::string::npos);
  EXPECT_NE(problem("tcp://[::1:5570", kConnect), "");
  EXPECT_NE(problem("udp://127.0.0.1:5570", kConnect).find("'udp://'"), std::string::npos);
  EXPECT_NE(problem("ipc://", kBind).find("path is missing"), std::string::npos);
  EXPECT_NE(problem("ipc:///" + std::string(200, 'a'), kBind).find("at most"), std::string::npos);
  EXPECT_NE(problem("tcp://a;b:5570", kConnect).find("source addresses"), std::string::npos);
}

TEST(EndpointAddress, WildcardsOnlyWhereTheServerBinds) {
  EXPECT_EQ(problem("tcp://*:5570", kBind), "");
  EXPECT_NE(problem("tcp://*:5570", kConnect).find("one host"), std::string::npos);
  EXPECT_EQ(problem("tcp://127.0.0.1:*", kBind), "");
  EXPECT_NE(problem("tcp://127.0.0.1:*", kConnect).find("port number"), std::string::npos);
}

TEST(EndpointAddress, InprocOnlyWhereAllowed) {
  EXPECT_NE(problem("inproc://x", kBind).find("one process"), std::string::npos);
  EXPECT_EQ(problem("inproc://x", EndpointRules{EndpointRole::kBind, true}), "");
  EXPECT_NE(problem("inproc://", EndpointRules{EndpointRole::kBind, true}), "");
}

std::string endpoint_of(const std::string& server, ServerEndpoint which,
                        EndpointRole role = EndpointRole::kConnect) {
  std::string why;
  const std::optional<std::string> address = server_endpoint(server, which, role, &why);
  return address ? *address : "error: " + why;
}

TEST(ServerAddress, OneAddressGivesAllThreeEndpoints) {
  EXPECT_EQ(endpoint_of("beamline-07", ServerEndpoint::kData), "tcp://beamline-07:5570");
  EXPECT_EQ(endpoint_of("beamline-07", ServerEndpoint::kSlices), "tcp://beamline-07:5571");
  EXPECT_EQ(endpoint_of("beamline-07", ServerEndpoint::kRequests), "tcp://beamline-07:5572");
  EXPECT_EQ(endpoint_of("10.0.0.5:6000", ServerEndpoint::kRequests), "tcp://10.0.0.5:6002");
  EXPECT_EQ(endpoint_of("6000", ServerEndpoint::kSlices), "tcp://127.0.0.1:6001");
  EXPECT_EQ(endpoint_of("tcp://host:7000", ServerEndpoint::kData), "tcp://host:7000");
  EXPECT_EQ(endpoint_of("[::1]:7000", ServerEndpoint::kData), "tcp://[::1]:7000");
  EXPECT_EQ(endpoint_of("::1", ServerEndpoint::kData), "tcp://[::1]:5570");
  EXPECT_EQ(endpoint_of("ipc:///run/ss/", ServerEndpoint::kRequests), "ipc:///run/ss/requests");
  EXPECT_EQ(endpoint_of("*:6000", ServerEndpoint::kData, EndpointRole::kBind), "tcp://*:6000");
}

TEST(ServerAddress, BadServerAddressesAreRefused) {
  EXPECT_NE(endpoint_of("host:65534", ServerEndpoint::kData).find("65533"), std::string::npos);
  EXPECT_NE(endpoint_of("host:99999", ServerEndpoint::kData).find("outside"), std::string::npos);
  EXPECT_NE(endpoint_of("", ServerEndpoint::kData).find("empty"), std::string::npos);
  EXPECT_NE(endpoint_of("udp://host", ServerEndpoint::kData).find("error"), std::string::npos);
  EXPECT_NE(endpoint_of("*", ServerEndpoint::kData).find("one host"), std::string::npos)
      << "a client cannot connect to a wildcard";
}

}  // namespace
}  // namespace slicestream::cli

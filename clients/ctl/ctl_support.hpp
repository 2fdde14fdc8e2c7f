// What every slicestream-ctl subcommand shares: parsing of argument values, the reply check,
// and turning client-library failures into an exit status.
#pragma once

#include <cstdint>
#include <iostream>
#include <string>
#include <utility>

#include "clients/common/request_client.hpp"
#include "clients/ctl/ctl_commands.hpp"
#include "slicestream.pb.h"

namespace slicestream::ctl {

// "a,b,c,d,e,f,g,h,i": nine finite numbers (x-axis, y-axis, base point, world mm).
client::Orientation parse_orientation(const std::string& text);
// "W,H": two positive integers.
std::pair<std::uint32_t, std::uint32_t> parse_size(const std::string& text);
// "ram-lak", "shepp-logan", "cosine", "hamming", "hann" (any case).
v1::FilterWindow parse_filter(const std::string& text);
// "sliding" or "rotation".
v1::WindowMode parse_mode(const std::string& text);

// Names as users type them, for printing (filters: client::filter_name).
std::string mode_name(v1::WindowMode mode);

// Prints a non-OK reply (code, message, reason) to stderr and returns whether it was OK.
bool reply_ok(const client::Response& response, const char* what);

// Runs `body` (returning an exit status); a client-library failure (timeout, unreachable,
// malformed answer) is printed and becomes kExitNoAnswer.
template <typename Body>
int guarded(const char* what, Body body) {
  try {
    return body();
  } catch (const client::ClientError& error) {
    std::cerr << "slicestream-ctl " << what << ": " << error.what() << "\n";
    return kExitNoAnswer;
  }
}

}  // namespace slicestream::ctl

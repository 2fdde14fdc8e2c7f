// How the server reaches a running RECAST3D viewer (--recast3d, --recast3d-updates, ...).
#pragma once

#include <chrono>
#include <string>

namespace slicestream::tomop {

struct Recast3dConfig {
  std::string requests;  // the viewer's REP, e.g. tcp://localhost:5555
  std::string updates;   // the viewer's PUB; empty: the same host, port + 1
  double rate_hz = 20;   // SliceData per slice at most (0: every publication)
  int slice_size = 0;    // pixels of a slice's longer side; 0: the server's --slice-size rule
  std::string scene_name = "slicestream";
  std::chrono::milliseconds reply_timeout{1000};
};

// "tcp://host:5555" -> "tcp://host:5556"; empty when the address has no numeric port.
std::string default_updates_address(const std::string& requests);

}  // namespace slicestream::tomop

// The tomop side of the server's configuration (flags: server/tomop_options.cpp).
#pragma once

#include <string>

#include "server/recast3d_bridge_config.hpp"

namespace slicestream::tomop {

enum class DataSocketKind { kPull, kRep };

struct TomopConfig {
  std::string data;  // the adapters' data port (--tomop-data); empty: none
  DataSocketKind data_socket = DataSocketKind::kPull;
  Recast3dConfig recast3d;  // requests empty: no bridge
};

}  // namespace slicestream::tomop

#include "server/tomop_options.hpp"

#include <cmath>

#include "server/recast3d_bridge.hpp"

namespace slicestream::tomop {

void add_tomop_options(CLI::App& app, TomopConfig& config) {
  const char* group = "RECAST3D and its tomop adapters";
  app.add_option(
         "--tomop-data", config.data,
         "bind a tomop data port for the RECAST3D adapters, e.g. tcp://*:5558 (empty: none)")
      ->group(group);
  app.add_option_function<std::string>(
         "--tomop-data-socket",
         [&config](const std::string& kind) {
           config.data_socket = kind == "rep" ? DataSocketKind::kRep : DataSocketKind::kPull;
         },
         "pull (adapters that PUSH, the default) or rep (adapters that use REQ)")
      ->check(CLI::IsMember({"pull", "rep"}))
      ->group(group);
  Recast3dConfig& viewer = config.recast3d;
  app.add_option("--recast3d", viewer.requests,
                 "act as SliceRecon toward the RECAST3D viewer whose REP socket is here, e.g. "
                 "tcp://localhost:5555 (empty: none)")
      ->group(group);
  app.add_option("--recast3d-updates", viewer.updates,
                 "the viewer's PUB socket (default: the --recast3d host, port + 1)")
      ->group(group);
  app.add_option("--recast3d-rate", viewer.rate_hz,
                 "most SliceData per slice per second sent to the viewer, latest wins (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->group(group);
  app.add_option("--recast3d-slice-size", viewer.slice_size,
                 "pixels of the longer side of a viewer's slice (0: as --slice-size)")
      ->check(CLI::NonNegativeNumber)
      ->group(group);
}

std::string finalize_tomop_config(TomopConfig& config) {
  Recast3dConfig& viewer = config.recast3d;
  if (viewer.requests.empty()) return {};
  if (viewer.updates.empty() && default_updates_address(viewer.requests).empty()) {
    return "--recast3d " + viewer.requests +
           " has no numeric port to derive the viewer's PUB address from: give --recast3d-updates";
  }
  if (!std::isfinite(viewer.rate_hz)) return "--recast3d-rate must be a finite number";
  return {};
}

}  // namespace slicestream::tomop

// slicestream-server: the real-time streaming reconstruction server (docs/protocol.md).
//
// SIGINT/SIGTERM drain: stop reading frames, finish everything accepted, answer pending requests,
// close the sockets, exit 0. A second signal during the drain exits at once (status 130).
#include <spdlog/spdlog.h>

// Boost.Asio 1.74's scheduler trips GCC 12's -Wnull-dereference once inlined (a false positive in
// library code); silenced for these headers only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#pragma GCC diagnostic pop
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "cli/heap_retention.hpp"
#include "cli/version.hpp"
#include "server/periodic_timer.hpp"
#include "server/protobuf_log_route.hpp"
#include "server/server.hpp"
#include "server/server_options.hpp"
#include "server/stats_report.hpp"

namespace {

using namespace slicestream;

std::unique_ptr<Backend> choose_backend(const ServerConfig& config) {
  const BackendKind kind = config.backend;
  std::string why;
  if (kind == BackendKind::kAuto) {
    const std::string unavailable = cuda_unavailable_reason(config.backend_options.cuda.device);
    why = unavailable.empty() ? "auto: a usable GPU was found"
                              : "auto: no CUDA backend (" + unavailable + ")";
  } else {
    why = kind == BackendKind::kCpu ? "requested with --backend cpu"
                                    : "requested with --backend cuda";
  }
  std::unique_ptr<Backend> backend = make_backend(kind, config.backend_options);
  const BackendInfo info = backend->info();
  spdlog::info("backend: {} on {} ({} threads) - {}", info.name, info.device, info.threads, why);
  return backend;
}

int run(const ServerConfig& config) {
  std::unique_ptr<Backend> backend;
  try {
    backend = choose_backend(config);
  } catch (const std::exception& error) {
    spdlog::critical("cannot create the backend: {}", error.what());
    return EXIT_FAILURE;
  }
  std::unique_ptr<Server> server;
  try {
    server = std::make_unique<Server>(config, std::move(backend));
  } catch (const std::exception& error) {
    spdlog::critical("{}", error.what());
    return EXIT_FAILURE;
  }
  // The signals are caught before the server says it is ready: a SIGTERM right after the "ready"
  // line drains like any other (asio keeps a signal that arrives before the first async_wait).
  boost::asio::io_context io;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  server->start();

  StatsLog stats_log;
  PeriodicTimer stats(
      io,
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(config.stats_interval_s)),
      [&] {
        for (const std::string& line : stats_log.report(server->metrics(), server->counters()))
          spdlog::info("{}", line);
      });
  stats.start();
  std::thread drainer;
  std::function<void(const boost::system::error_code&, int)> on_signal =
      [&](const boost::system::error_code& error, int signal_number) {
        if (error) return;
        if (drainer.joinable()) {
          spdlog::warn("signal {} during the drain: exiting at once", signal_number);
          std::_Exit(130);
        }
        spdlog::info("signal {}: draining (a second signal exits at once)", signal_number);
        signals.async_wait(on_signal);
        // The drain runs off the io thread so that a second signal is still heard.
        drainer = std::thread([&] {
          server->stop(/*drain=*/true);
          boost::asio::post(io, [&] {
            stats.stop();
            signals.cancel();
          });
        });
      };
  signals.async_wait(on_signal);
  io.run();
  if (drainer.joinable()) drainer.join();
  return EXIT_SUCCESS;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"slicestream-server: real-time streaming tomographic reconstruction"};
  cli::add_version_flag(app, "slicestream-server");
  ServerConfig config;
  add_server_options(app, config);
  CLI11_PARSE(app, argc, argv);
  const std::string problem = finalize_server_config(config);
  if (!problem.empty()) {
    std::fprintf(stderr, "slicestream-server: %s\n", problem.c_str());
    return EXIT_FAILURE;
  }
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  route_protobuf_logs();
  spdlog::info("slicestream-server {} starting", cli::version());
  const std::string heap = cli::apply_heap_retention(config.retain_freed_mb);
  if (!heap.empty()) spdlog::warn("freed memory is not kept for reuse: {}", heap);
  return run(config);
}

// One step of the end-to-end ladder: a fresh slicestream-server (real binary) on its own
// endpoints, the real slicestream-detector streaming one scan into it at an offered rate, the
// server's GetStatus polled throughout (integrated count over time, loss, latency), then a drain
// on SIGTERM. A fresh server per step makes GetStatus's latency histogram that step's alone.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "child_process.hpp"
#include "clients/common/request_client.hpp"
#include "slicestream.pb.h"
#include "thread_cpu.hpp"

namespace slicestream::bench {

enum class Transport { kTcp, kIpc };
const char* to_string(Transport transport);

struct Endpoints {
  std::string data;
  std::string slices;
  std::string requests;
};

// tcp: free loopback ports (probed by binding port 0); ipc: sockets named after `tag` in `dir`.
Endpoints make_endpoints(Transport transport, const std::string& dir, const std::string& tag);
// One endpoint for the bare PUSH/PULL measurement (tcp: an ephemeral port bound by the PULL).
std::string bare_endpoint(Transport transport, const std::string& dir, const std::string& tag);

struct StepConfig {
  // What runs.
  std::string server_path;
  std::string detector_path;
  std::string backend = "auto";
  std::vector<std::string> server_args;    // passed through
  std::vector<std::string> detector_args;  // passed through
  // The scan.
  std::string preset;
  int rows = 0;  // 0: the preset's
  int cols = 0;
  int window = 0;  // projections per rotation; 0: the preset's
  std::uint64_t frames = 0;
  double offered_fps = 0;  // 0: as fast as back-pressure allows
  std::uint64_t scan_id = 1;
  int data_hwm = 0;  // the server's --data-hwm (0: its default)
  int send_hwm = 0;  // the detector's --send-hwm (0: its default for the frame size)
  // Where and how.
  Transport transport = Transport::kTcp;
  std::string work_dir;  // logs and ipc sockets
  std::string tag;       // names this step's logs and sockets
  double poll_interval_s = 0.02;
  double timeout_s = 300;  // the whole step
  // After the detector has exited: how long the integrated count may stand still before the
  // rest of the scan counts as lost (its ScanEnd never arrived).
  double stall_s = 10;
  // The server's HTTP endpoint (--http), and what runs once the server answers, before the
  // detector starts (e.g. WebSocket clients, bench/web).
  std::string http_listen = "127.0.0.1:0";
  std::function<void(const Endpoints&)> on_server_ready;
};

struct StepResult {
  bool ok = false;               // both programs ran and exited cleanly (frames may still be lost)
  bool scan_ended = false;       // the server saw the scan's ScanEnd
  bool server_started = false;   // false: it never answered (the next steps would fail alike)
  std::string failure;           // what went wrong (with the log's tail) when !ok
  std::string backend;           // as the server reports it: name and device
  std::uint64_t sent = 0;        // projections the detector sent (its exit status says all)
  std::uint64_t received = 0;    // projections read by the server
  std::uint64_t integrated = 0;  // projections integrated
  std::map<std::string, std::uint64_t> discards;
  std::uint64_t discarded = 0;
  std::uint64_t payloads_realigned = 0;
  double sustained_fps = 0;   // slope of the integrated count between 20% and 90% of the scan
  double scan_seconds = 0;    // first to last integration seen by the polls
  double server_start_s = 0;  // from starting the server to its first GetStatus reply
  v1::Latency latency;        // frame arrival -> first slice publication containing it
  std::string busiest_stage;  // highest busy fraction at mid-scan
  double busiest_fraction = 0;
  // The publish stage's time over the scan's: waiting for slice readbacks (GPU work queued before
  // them included) and copying them out of page-locked memory.
  double publish_wait_fraction = 0;
  double publish_copy_fraction = 0;
  // The programs' thread load between 20 % and 90 % of the scan (thread_cpu.hpp).
  ThreadLoad server_threads;
  ThreadLoad detector_threads;
};

StepResult run_ingest_step(const StepConfig& config);

// The parts of a step other benchmarks reuse (slice_move_bench): a counter of the server's status
// (0 when absent), the detector's command line (without a requests endpoint: no confirmation), and
// the server started on fresh endpoints of `config`'s transport, answering GetStatus (retried with
// other endpoints when a probed tcp port was taken in between; throws std::runtime_error with the
// log's tail when it cannot start).
std::uint64_t counter(const v1::StatusReport& status, const std::string& name);
std::vector<std::string> detector_command(const StepConfig& config, const Endpoints& endpoints);
std::unique_ptr<ChildProcess> start_server(const StepConfig& config, Endpoints& endpoints,
                                           std::unique_ptr<client::RequestClient>& client,
                                           v1::StatusReport& status);

}  // namespace slicestream::bench

#include "detector_bare_pull.hpp"

#include <unistd.h>

#include <zmq.hpp>

#include <chrono>
#include <optional>
#include <vector>

#include "child_process.hpp"
#include "kernels/steady_clock.hpp"
#include "scan_progress.hpp"
#include "thread_cpu.hpp"

namespace slicestream::bench {

namespace {

// After the detector has exited, what it sent is read until nothing arrived for this long.
constexpr std::chrono::milliseconds kQuiet{500};
constexpr std::chrono::milliseconds kPoll{20};

}  // namespace

DetectorBareResult measure_detector_to_bare_pull(const StepConfig& c) {
  DetectorBareResult r;
  zmq::context_t context(1);
  zmq::socket_t pull(context, zmq::socket_type::pull);
  if (c.data_hwm > 0) pull.set(zmq::sockopt::rcvhwm, c.data_hwm);
  pull.set(zmq::sockopt::linger, 0);
  pull.bind(bare_endpoint(c.transport, c.work_dir, c.tag));
  // No requests endpoint: the detector streams without asking for a confirmation.
  const Endpoints endpoints{pull.get(zmq::sockopt::last_endpoint), "", ""};
  ChildProcess detector(detector_command(c, endpoints), c.work_dir + "/" + c.tag + "-detector.log");

  std::vector<ProgressSample> arrivals;  // every frame message, timed from the first message
  arrivals.reserve(c.frames + 16);
  std::optional<SteadyClock::time_point> first;
  ScanThreadLoad threads({getpid(), detector.pid()});
  std::optional<int> status;
  SteadyClock::time_point last_message = SteadyClock::now();
  const SteadyClock::time_point deadline = SteadyClock::now() + clock_duration(c.timeout_s);
  zmq::message_t part;
  while (SteadyClock::now() < deadline) {
    zmq::pollitem_t item{pull.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, kPoll);
    if ((item.revents & ZMQ_POLLIN) != 0) {
      int parts = 0;
      for (bool more = true; more; more = part.more()) {
        (void)pull.recv(part, zmq::recv_flags::none);
        ++parts;
      }
      const SteadyClock::time_point now = SteadyClock::now();
      last_message = now;
      if (!first) first = now;
      // [header][payload]: a frame; ScanBegin and ScanEnd are one part.
      if (parts == 2) {
        arrivals.push_back(
            {std::chrono::duration<double>(now - *first).count(), arrivals.size() + 1});
        threads.observe(arrivals.back().t_s, arrivals.size(), c.frames);
      }
      continue;
    }
    if (!status) status = detector.poll();
    if (status && SteadyClock::now() - last_message > kQuiet) break;
  }
  if (!status) status = detector.wait_for(std::chrono::seconds(5));
  r.received = arrivals.size();
  if (!status || *status != 0) {
    r.failure = (status ? "the detector exited with status " + std::to_string(*status)
                        : std::string("the detector did not finish in time")) +
                ":\n" + detector.log_tail(12);
    return r;
  }
  r.sustained_fps = sustained_rate(arrivals, static_cast<double>(arrivals.size()));
  r.receiver_threads = threads.load(0);
  r.detector_threads = threads.load(1);
  r.ok = true;
  return r;
}

}  // namespace slicestream::bench

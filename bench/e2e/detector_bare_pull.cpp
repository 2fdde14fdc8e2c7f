#include "detector_bare_pull.hpp"

#include <unistd.h>

#include <zmq.hpp>

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

#include "child_process.hpp"
#include "kernels/steady_clock.hpp"
#include "thread_cpu.hpp"

namespace slicestream::bench {

namespace {

// After the detector has exited, what it sent is read until nothing arrived for this long.
constexpr std::chrono::milliseconds kQuiet{500};
constexpr std::chrono::milliseconds kPoll{20};

// The time at which `count` frames had arrived, interpolated between arrivals.
double crossing_time(const std::vector<double>& arrivals_s, double count) {
  const auto n = static_cast<double>(arrivals_s.size());
  if (arrivals_s.empty() || count < 1) return arrivals_s.empty() ? 0 : arrivals_s.front();
  const double at = std::min(count, n) - 1;
  const auto below = static_cast<std::size_t>(at);
  const std::size_t above = std::min(below + 1, arrivals_s.size() - 1);
  const double fraction = at - static_cast<double>(below);
  return arrivals_s[below] + fraction * (arrivals_s[above] - arrivals_s[below]);
}

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

  std::vector<double> arrivals_s;  // of each frame message, from the first message
  arrivals_s.reserve(c.frames + 16);
  std::optional<SteadyClock::time_point> first;
  // Both processes' threads when 20 % and 90 % of the frames had arrived.
  struct Reading {
    double t_s = 0;
    ThreadTimes receiver;
    ThreadTimes detector;
  };
  std::optional<Reading> low;
  std::optional<Reading> high;
  const auto read = [&](double t_s) {
    return Reading{t_s, read_thread_times(getpid()), read_thread_times(detector.pid())};
  };
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
      if (parts == 2) arrivals_s.push_back(std::chrono::duration<double>(now - *first).count());
      const std::uint64_t count = arrivals_s.size();
      if (!low && 5 * count >= c.frames) low = read(arrivals_s.back());
      if (!high && 10 * count >= 9 * c.frames) high = read(arrivals_s.back());
      continue;
    }
    if (!status) status = detector.poll();
    if (status && SteadyClock::now() - last_message > kQuiet) break;
  }
  if (!status) status = detector.wait_for(std::chrono::seconds(5));
  r.received = arrivals_s.size();
  if (!status || *status != 0) {
    r.failure = (status ? "the detector exited with status " + std::to_string(*status)
                        : std::string("the detector did not finish in time")) +
                ":\n" + detector.log_tail(12);
    return r;
  }
  const double frames = static_cast<double>(arrivals_s.size());
  const double t_low = crossing_time(arrivals_s, 0.2 * frames);
  const double t_high = crossing_time(arrivals_s, 0.9 * frames);
  if (t_high > t_low) r.sustained_fps = 0.7 * frames / (t_high - t_low);
  if (low && high) {
    r.receiver_threads = thread_load(low->receiver, high->receiver, high->t_s - low->t_s);
    r.detector_threads = thread_load(low->detector, high->detector, high->t_s - low->t_s);
  }
  r.ok = true;
  return r;
}

}  // namespace slicestream::bench

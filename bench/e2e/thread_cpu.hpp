// Per-thread CPU time of a running process, from /proc/PID/task/*/stat: which of the server's
// threads (its stages "ss-*", its data endpoint "ss-data", ZeroMQ's I/O thread "ZMQbg/IO/0") or
// the detector's is busy during the measured part of a step (scan_progress.hpp). Linux only;
// elsewhere, or for a process that has gone, the readings are empty.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace slicestream::bench {

struct ThreadTime {
  std::string name;
  double cpu_s = 0;  // user + system
};
using ThreadTimes = std::map<int, ThreadTime>;  // by thread id

// CPU per thread name (threads of one name summed, as a fraction of one core), busiest first.
using ThreadLoad = std::vector<std::pair<std::string, double>>;

ThreadTimes read_thread_times(pid_t pid);

// The load between two readings `seconds` apart.
ThreadLoad thread_load(const ThreadTimes& before, const ThreadTimes& after, double seconds);

// "ZMQbg/IO/0 97%, ss-data 41%, ..." for the `top` busiest; "-" when there is none.
std::string describe_thread_load(const ThreadLoad& load, std::size_t top);

// Some processes' thread load over the measured part of a scan: every process's threads are
// read when the scan first reaches kMeasuredFrom and kMeasuredTo of its frames.
class ScanThreadLoad {
 public:
  explicit ScanThreadLoad(std::vector<pid_t> pids) : pids_(std::move(pids)) {}

  // The scan's progress at `t_s`: `done` of `frames`.
  void observe(double t_s, std::uint64_t done, std::uint64_t frames);
  // The load of the `i`th process between the two readings; empty without both.
  ThreadLoad load(std::size_t i) const;

 private:
  struct Reading {
    double t_s = 0;
    std::vector<ThreadTimes> processes;  // in the order of pids_
  };
  Reading read(double t_s) const;

  std::vector<pid_t> pids_;
  std::optional<Reading> from_;
  std::optional<Reading> to_;
};

}  // namespace slicestream::bench

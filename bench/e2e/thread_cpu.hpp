// Per-thread CPU time of a running process, from /proc/PID/task/*/stat: which of the server's
// threads (its stages "ss-*", its data endpoint "ss-data", ZeroMQ's I/O thread "ZMQbg/IO/0") or
// the detector's is busy during the measured part of a step. Linux only; elsewhere, or for a
// process that has gone, the readings are empty.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace slicestream::bench {

struct ThreadTime {
  std::string name;
  double cpu_s = 0;  // user + system
};
using ThreadTimes = std::map<int, ThreadTime>;  // by thread id

ThreadTimes read_thread_times(pid_t pid);

// CPU per thread name (threads of one name summed, as a fraction of one core) between two
// readings `seconds` apart, busiest first.
std::vector<std::pair<std::string, double>> thread_load(const ThreadTimes& before,
                                                        const ThreadTimes& after, double seconds);

// "ZMQbg/IO/0 97%, ss-data 41%, ..." for the `top` busiest; "-" when there is none.
std::string describe_thread_load(const std::vector<std::pair<std::string, double>>& load,
                                 std::size_t top);

}  // namespace slicestream::bench

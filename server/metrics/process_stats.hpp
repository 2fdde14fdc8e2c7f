// The server process's own resources, read from /proc (Linux), for the Prometheus exposition's
// standard process_* metrics.
#pragma once

#include <cstdint>
#include <optional>

namespace slicestream {

struct ProcessStats {
  std::uint64_t resident_memory_bytes = 0;
  std::uint64_t virtual_memory_bytes = 0;
  double cpu_seconds = 0;         // user + system
  double start_time_seconds = 0;  // since the Unix epoch
  std::uint64_t open_fds = 0;
  std::uint64_t threads = 0;
};

// Absent where /proc cannot be read.
std::optional<ProcessStats> read_process_stats();

}  // namespace slicestream

#include "server/metrics/process_stats.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace slicestream {

namespace {

// Seconds since the epoch at which the machine booted (/proc/stat "btime").
std::optional<double> boot_time_seconds() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double seconds = 0;
      if (in >> seconds) return seconds;
      return std::nullopt;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

}  // namespace

std::optional<ProcessStats> read_process_stats() {
  std::ifstream stat_file("/proc/self/stat");
  std::string stat;
  if (!std::getline(stat_file, stat)) return std::nullopt;
  // Fields after the command name, which is in parentheses and may itself hold spaces.
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 2));
  std::string value;
  ProcessStats stats;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page_bytes = static_cast<double>(sysconf(_SC_PAGESIZE));
  // Field numbers as in proc(5): state is 3; utime 14, stime 15, num_threads 20, starttime 22,
  // vsize 23, rss 24.
  for (int field = 3; fields >> value && field <= 24; ++field) {
    if (field == 14 || field == 15) stats.cpu_seconds += std::stod(value) / ticks;
    if (field == 20) stats.threads = std::stoull(value);
    if (field == 22) {
      const std::optional<double> boot = boot_time_seconds();
      if (boot) stats.start_time_seconds = *boot + std::stod(value) / ticks;
    }
    if (field == 23) stats.virtual_memory_bytes = std::stoull(value);
    if (field == 24) {
      stats.resident_memory_bytes = static_cast<std::uint64_t>(std::stod(value) * page_bytes);
    }
  }
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++stats.open_fds;
  }
  return stats;
}

}  // namespace slicestream

#include "thread_cpu.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "scan_progress.hpp"

namespace slicestream::bench {

namespace {

// "TID (NAME) STATE ..." with utime and stime the 14th and 15th fields; NAME may hold spaces and
// parentheses, so the fields are counted from the last ')'.
bool parse_stat(const std::string& line, ThreadTime& time) {
  const std::size_t open = line.find('(');
  const std::size_t close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  time.name = line.substr(open + 1, close - open - 1);
  std::istringstream fields(line.substr(close + 1));
  std::string field;
  double utime = 0;
  double stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
  }
  time.cpu_s = (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return true;
}

}  // namespace

ThreadTimes read_thread_times(pid_t pid) {
  ThreadTimes times;
  std::error_code error;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& entry : std::filesystem::directory_iterator(tasks, error)) {
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    ThreadTime time;
    if (!std::getline(stat, line) || !parse_stat(line, time)) continue;
    try {
      times[std::stoi(entry.path().filename().string())] = time;
    } catch (const std::exception&) {
    }
  }
  return times;
}

ThreadLoad thread_load(const ThreadTimes& before, const ThreadTimes& after, double seconds) {
  std::map<std::string, double> by_name;
  if (seconds <= 0) return {};
  for (const auto& [tid, time] : after) {
    const auto it = before.find(tid);
    const double start = it == before.end() ? 0 : it->second.cpu_s;
    by_name[time.name] += (time.cpu_s - start) / seconds;
  }
  ThreadLoad load(by_name.begin(), by_name.end());
  std::sort(load.begin(), load.end(), [](const auto& a, const auto& b) {
    return a.second > b.second || (a.second == b.second && a.first < b.first);
  });
  return load;
}

std::string describe_thread_load(const ThreadLoad& load, std::size_t top) {
  std::string text;
  for (std::size_t i = 0; i < std::min(top, load.size()); ++i) {
    text += (i ? ", " : "") + load[i].first + " " +
            std::to_string(std::lround(100 * load[i].second)) + "%";
  }
  return text.empty() ? "-" : text;
}

void ScanThreadLoad::observe(double t_s, std::uint64_t done, std::uint64_t frames) {
  const auto reached = [&](double fraction) {
    return static_cast<double>(done) >= fraction * static_cast<double>(frames);
  };
  if (!from_ && reached(kMeasuredFrom)) from_ = read(t_s);
  if (!to_ && reached(kMeasuredTo)) to_ = read(t_s);
}

ThreadLoad ScanThreadLoad::load(std::size_t i) const {
  if (!from_ || !to_ || i >= pids_.size()) return {};
  return thread_load(from_->processes[i], to_->processes[i], to_->t_s - from_->t_s);
}

ScanThreadLoad::Reading ScanThreadLoad::read(double t_s) const {
  Reading reading{t_s, {}};
  for (pid_t pid : pids_)
    reading.processes.push_back(read_thread_times(pid));
  return reading;
}

}  // namespace slicestream::bench

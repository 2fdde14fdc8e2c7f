// A child process (the real slicestream-server or slicestream-detector) whose stdout and stderr
// go to a log file: started with posix_spawn, polled or waited for with a time limit, stopped by
// signal. The destructor kills and reaps a child that is still running, so none is left behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace slicestream::bench {

class ChildProcess {
 public:
  // argv[0] is the program's path. Throws std::runtime_error when it cannot be started.
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& log_path() const { return log_path_; }
  // The exit status once the child has ended (128 + N after signal N); nothing while it runs.
  std::optional<int> poll();
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  // SIGTERM, up to `grace` for the child to exit, then SIGKILL. Returns the exit status.
  int stop(std::chrono::milliseconds grace);
  // The last `lines` lines of the log (for error messages).
  std::string log_tail(int lines) const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  std::optional<int> status_;
};

// The program `name` next to the running binary (a device bundle), else `built` (this build tree).
std::string default_binary(const std::string& name, const char* built);

// The words of "a b  c" (flags passed through to a program as one option value).
std::vector<std::string> split_words(const std::string& text);

// "a b c" for messages and logs.
std::string join_command(const std::vector<std::string>& argv);

}  // namespace slicestream::bench

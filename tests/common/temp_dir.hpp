// A fresh directory under the system temp dir, removed with everything in it at scope exit, and a
// text file in one.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace slicestream::test {

class TempDir {
 public:
  // `prefix` names the directory in /tmp (with the process id and a counter); `create` false
  // leaves making it to the code under test (its path is free and removed at scope exit).
  explicit TempDir(const std::string& prefix = "slicestream-test", bool create = true) {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            (prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    if (create) std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  // The paths of the files in it (none when it does not exist).
  std::vector<std::string> files() const {
    std::vector<std::string> names;
    if (!std::filesystem::exists(path_)) return names;
    for (const auto& entry : std::filesystem::directory_iterator(path_))
      names.push_back(entry.path().string());
    return names;
  }

 private:
  std::filesystem::path path_;
};

// A file holding `text`, alone in a fresh TempDir (so parallel test processes never share it),
// removed at scope exit.
class TempTextFile {
 public:
  TempTextFile(const std::string& name, const std::string& text)
      : dir_("slicestream-test-file"), path_(dir_.file(name)) {
    std::ofstream(path_) << text;
  }
  const std::string& path() const { return path_; }

 private:
  TempDir dir_;
  std::string path_;
};

}  // namespace slicestream::test

#include "clients/detector/file_list.hpp"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

namespace slicestream::detector {

namespace {

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

bool has_tiff_extension(const std::filesystem::path& path) {
  std::string extension = path.extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension == ".tif" || extension == ".tiff";
}

std::vector<std::string> glob_files(const std::string& pattern) {
  glob_t matches{};
  const int status = ::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &matches);
  std::vector<std::string> files;
  if (status == 0) {
    for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
      if (std::filesystem::is_regular_file(matches.gl_pathv[i]))
        files.emplace_back(matches.gl_pathv[i]);
    }
  }
  globfree(&matches);
  if (status != 0 && status != GLOB_NOMATCH) {
    throw std::runtime_error("cannot expand '" + pattern + "' (read error)");
  }
  return files;
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      // Compare the digit runs as numbers: skip leading zeros, then longer is larger.
      std::size_t i_end = i;
      std::size_t j_end = j;
      while (i_end < a.size() && is_digit(a[i_end]))
        ++i_end;
      while (j_end < b.size() && is_digit(b[j_end]))
        ++j_end;
      std::size_t i_first = i;
      std::size_t j_first = j;
      while (i_first + 1 < i_end && a[i_first] == '0')
        ++i_first;
      while (j_first + 1 < j_end && b[j_first] == '0')
        ++j_first;
      const std::size_t i_len = i_end - i_first;
      const std::size_t j_len = j_end - j_first;
      if (i_len != j_len) return i_len < j_len;
      const int order = a.compare(i_first, i_len, b, j_first, j_len);
      if (order != 0) return order < 0;
      i = i_end;
      j = j_end;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;  // equal in natural order (e.g. "01" vs "1"): fall back to a total order
}

std::vector<std::string> expand_file_pattern(const std::string& pattern) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  if (fs::is_directory(pattern)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(pattern)) {
      if (entry.is_regular_file() && has_tiff_extension(entry.path())) {
        files.push_back(entry.path().string());
      }
    }
    if (files.empty()) throw std::runtime_error(pattern + ": directory has no .tif/.tiff files");
  } else if (fs::is_regular_file(pattern)) {
    files.push_back(pattern);
  } else {
    files = glob_files(pattern);
    if (files.empty()) throw std::runtime_error("no files match '" + pattern + "'");
  }
  std::sort(files.begin(), files.end(), natural_less);
  return files;
}

}  // namespace slicestream::detector

// The viewer's files under one root folder, looked up safely from request targets: only plain
// names ([A-Za-z0-9._-] segments, no "..", no hidden files), only regular files, never outside
// the root (symbolic links included).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace slicestream {

class StaticFiles {
 public:
  explicit StaticFiles(std::string root);  // empty: no files (every lookup misses)

  const std::string& root() const { return root_; }
  // The file for a request target ("/" is "/index.html"; a query string is ignored).
  std::optional<std::string> find(std::string_view target) const;

 private:
  std::string root_;
};

// The first of <program dir>/../clients/web/dist (build tree) and
// <program dir>/../share/slicestream/web (install tree) holding an index.html; empty if none.
std::string default_viewer_root();

const char* content_type_of(const std::string& path);

}  // namespace slicestream

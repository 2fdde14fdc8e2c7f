#include "server/http/static_files.hpp"

#include <algorithm>
#include <filesystem>

namespace slicestream {

namespace fs = std::filesystem;

namespace {

bool plain_segment(std::string_view segment) {
  if (segment.empty() || segment.front() == '.') return false;
  for (char c : segment) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool inside(const fs::path& path, const fs::path& root) {
  const auto [root_end, path_end] =
      std::mismatch(root.begin(), root.end(), path.begin(), path.end());
  (void)path_end;
  return root_end == root.end();
}

}  // namespace

StaticFiles::StaticFiles(std::string root) : root_(std::move(root)) {}

std::optional<std::string> StaticFiles::find(std::string_view target) const {
  if (root_.empty()) return std::nullopt;
  target = target.substr(0, target.find_first_of("?#"));
  if (target.empty() || target.front() != '/') return std::nullopt;
  std::string relative(target.substr(1));
  if (relative.empty() || relative.back() == '/') relative += "index.html";
  std::string_view rest = relative;
  while (!rest.empty()) {
    const std::size_t slash = rest.find('/');
    if (!plain_segment(rest.substr(0, slash))) return std::nullopt;
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  }
  std::error_code error;
  const fs::path root = fs::canonical(root_, error);
  if (error) return std::nullopt;
  const fs::path path = fs::canonical(root / relative, error);
  if (error || !inside(path, root) || !fs::is_regular_file(path, error)) return std::nullopt;
  return path.string();
}

std::string default_viewer_root() {
  std::error_code error;
  const fs::path program = fs::read_symlink("/proc/self/exe", error);
  if (error) return {};
  for (const char* candidate : {"../clients/web/dist", "../share/slicestream/web"}) {
    const fs::path root = program.parent_path() / candidate;
    if (fs::is_regular_file(root / "index.html", error)) return fs::weakly_canonical(root).string();
  }
  return {};
}

const char* content_type_of(const std::string& path) {
  const std::string extension = fs::path(path).extension().string();
  if (extension == ".html") return "text/html; charset=utf-8";
  if (extension == ".js" || extension == ".mjs") return "text/javascript; charset=utf-8";
  if (extension == ".css") return "text/css; charset=utf-8";
  if (extension == ".json" || extension == ".map") return "application/json";
  if (extension == ".svg") return "image/svg+xml";
  if (extension == ".png") return "image/png";
  if (extension == ".ico") return "image/x-icon";
  if (extension == ".txt" || extension == ".md") return "text/plain; charset=utf-8";
  return "application/octet-stream";
}

}  // namespace slicestream

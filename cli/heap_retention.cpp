#include "cli/heap_retention.hpp"

#include <malloc.h>
#include <CLI/CLI.hpp>

#include <limits>

#include "cli/number_checks.hpp"

namespace slicestream::cli {
namespace {
// glibc's largest mmap threshold on 64-bit hosts (DEFAULT_MMAP_THRESHOLD_MAX): larger buffers are
// always mapped afresh.
constexpr int kLargestHeapBuffer = 32 << 20;
constexpr std::size_t kMaxRetainMb = std::numeric_limits<int>::max() >> 20;
}  // namespace

CLI::Option* add_heap_retention_option(CLI::App& app, std::size_t& retain_mb) {
  return app
      .add_option("--retain-freed-mb", retain_mb,
                  "freed memory kept mapped for the next large buffers (slice images, frames), "
                  "MiB; 0: the C library's default, which maps every buffer above 128 KiB-32 MiB "
                  "afresh")
      ->check(in_range(0, static_cast<double>(kMaxRetainMb)));
}

std::string apply_heap_retention(std::size_t retain_mb) {
  if (retain_mb == 0) return {};
  if (retain_mb > kMaxRetainMb) return "--retain-freed-mb: at most " + std::to_string(kMaxRetainMb);
  if (mallopt(M_MMAP_THRESHOLD, kLargestHeapBuffer) != 1) {
    return "the C library refused the mmap threshold (mallopt M_MMAP_THRESHOLD)";
  }
  if (mallopt(M_TRIM_THRESHOLD, static_cast<int>(retain_mb << 20)) != 1) {
    return "the C library refused the trim threshold (mallopt M_TRIM_THRESHOLD)";
  }
  return {};
}

}  // namespace slicestream::cli

// How much freed memory a program keeps mapped for its next large buffers.
//
// Slice images and frames of several MiB come and go at the detector's rate. glibc serves every
// allocation above its mmap threshold with fresh pages from the kernel and unmaps them when they
// are freed, so each new image pays a page fault per 4 KiB page, several times the cost of
// filling it. Serving buffers up to 32 MiB from the heap and keeping up to `retain_mb` MiB of
// freed memory mapped lets the next image reuse the pages of the last one. Resident memory then
// stays near its peak after large images are freed (at most `retain_mb` MiB above what is in use).
#pragma once

#include <cstddef>
#include <string>

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace slicestream::cli {

inline constexpr std::size_t kDefaultHeapRetentionMb = 256;

// --retain-freed-mb N (0: the C library's own policy).
CLI::Option* add_heap_retention_option(CLI::App& app, std::size_t& retain_mb);

// Applies the policy to the whole process; call once, before threads allocate. Returns a problem
// in words (the C library refused a setting), empty when applied.
std::string apply_heap_retention(std::size_t retain_mb);

}  // namespace slicestream::cli

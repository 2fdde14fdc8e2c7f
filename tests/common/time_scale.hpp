// Deadlines in tests stretch under sanitizers, which run the code several times slower:
// scripts/sanitize sets SLICESTREAM_TEST_TIME_SCALE (a factor of at least 1) for the suite.
#pragma once

#include <cstdlib>
#include <string>

namespace slicestream::test {

inline double time_scale() {
  const char* text = std::getenv("SLICESTREAM_TEST_TIME_SCALE");
  if (text == nullptr) return 1.0;
  try {
    const double scale = std::stod(text);
    return scale >= 1.0 ? scale : 1.0;
  } catch (const std::exception&) {
    return 1.0;
  }
}

inline int scaled_ms(int milliseconds) {
  return static_cast<int>(milliseconds * time_scale());
}

}  // namespace slicestream::test

// The three fp16 WMMA fragment shapes (paper Table 1). A BSR block is one A tile: m rays x k = 16
// pixels; the product's right-hand sides come in groups of n columns.
#pragma once

namespace slicestream::tensorcore {

enum class WmmaShape { kM32N8K16, kM16N16K16, kM8N32K16 };

struct WmmaDims {
  int m;
  int n;
  int k;
};

constexpr WmmaDims dims(WmmaShape shape) {
  return shape == WmmaShape::kM32N8K16    ? WmmaDims{32, 8, 16}
         : shape == WmmaShape::kM16N16K16 ? WmmaDims{16, 16, 16}
                                          : WmmaDims{8, 32, 16};
}

inline const char* to_string(WmmaShape shape) {
  return shape == WmmaShape::kM32N8K16    ? "32.8.16"
         : shape == WmmaShape::kM16N16K16 ? "16.16.16"
                                          : "8.32.16";
}

constexpr WmmaShape kAllWmmaShapes[] = {WmmaShape::kM32N8K16, WmmaShape::kM16N16K16,
                                        WmmaShape::kM8N32K16};

}  // namespace slicestream::tensorcore

// A tiny JSON builder for the benchmark's output: objects of numbers, strings and nested values
// in insertion order (non-finite numbers become null).
#pragma once

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace slicestream::tensorcore::bench {

class Json {
 public:
  Json& num(const std::string& key, double v) {
    std::ostringstream o;
    o.precision(9);
    o << v;
    return raw(key, std::isfinite(v) ? o.str() : "null");
  }
  Json& str(const std::string& key, const std::string& v) { return raw(key, "\"" + v + "\""); }
  Json& obj(const std::string& key, const Json& v) { return raw(key, v.text()); }
  Json& raw(const std::string& key, const std::string& v) {
    items_.push_back("\"" + key + "\": " + v);
    return *this;
  }
  std::string text() const {
    std::string s = "{";
    for (std::size_t i = 0; i < items_.size(); ++i)
      s += (i ? ", " : "") + items_[i];
    return s + "}";
  }

 private:
  std::vector<std::string> items_;
};

inline std::string array_of(const std::vector<Json>& items) {
  std::string s = "[";
  for (std::size_t i = 0; i < items.size(); ++i)
    s += (i ? ",\n  " : "\n  ") + items[i].text();
  return s + "\n]";
}

}  // namespace slicestream::tensorcore::bench

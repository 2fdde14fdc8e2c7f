// A strict parser of the Prometheus text exposition format (version 0.0.4) for the tests: it
// fails (throws std::runtime_error with the line) on anything the format does not allow, and on
// what Prometheus' conventions and its own ingestion reject: a sample before its family's TYPE,
// a family's samples not together, a series twice, bad names, bad escapes, histograms whose
// buckets are not cumulative or lack +Inf, counters not ending in _total.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace slicestream::test {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromFamily {
  std::string type;
  std::string help;
  std::vector<PromSample> samples;
};

class PromParser {
 public:
  static std::map<std::string, PromFamily> parse(const std::string& text) {
    PromParser parser;
    std::istringstream in(text);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      try {
        parser.line(line);
      } catch (const std::runtime_error& error) {
        throw std::runtime_error("line " + std::to_string(number) + " '" + line +
                                 "': " + error.what());
      }
    }
    if (!text.empty() && text.back() != '\n') throw std::runtime_error("no final line feed");
    parser.check_histograms();
    return parser.families_;
  }

 private:
  static void fail(const std::string& why) { throw std::runtime_error(why); }

  static bool valid_metric_name(const std::string& name) {
    static const std::regex pattern("[a-zA-Z_:][a-zA-Z0-9_:]*");
    return std::regex_match(name, pattern);
  }
  static bool valid_label_name(const std::string& name) {
    static const std::regex pattern("[a-zA-Z_][a-zA-Z0-9_]*");
    return std::regex_match(name, pattern) && name.rfind("__", 0) != 0;
  }

  static double value_of(const std::string& text) {
    if (text == "NaN") return std::nan("");
    if (text == "+Inf") return INFINITY;
    if (text == "-Inf") return -INFINITY;
    static const std::regex number(R"([-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?)");
    if (!std::regex_match(text, number)) fail("bad value '" + text + "'");
    return std::strtod(text.c_str(), nullptr);
  }

  // The family a sample name belongs to (histograms: without _bucket, _sum, _count).
  std::string family_of(const std::string& name) const {
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s(suffix);
      if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
        const std::string base = name.substr(0, name.size() - s.size());
        auto it = families_.find(base);
        if (it != families_.end() && it->second.type == "histogram") return base;
      }
    }
    return name;
  }

  void line(const std::string& text) {
    if (text.empty()) return;
    if (text.rfind("# HELP ", 0) == 0 || text.rfind("# TYPE ", 0) == 0) {
      const bool help = text[2] == 'H';
      const std::string rest = text.substr(7);
      const std::size_t space = rest.find(' ');
      const std::string name = rest.substr(0, space);
      const std::string value = space == std::string::npos ? "" : rest.substr(space + 1);
      if (!valid_metric_name(name)) fail("bad metric name");
      PromFamily& family = families_[name];
      if (closed_.count(name)) fail("family " + name + " appears twice");
      if (current_ != name) {
        if (!current_.empty()) closed_.insert(current_);
        current_ = name;
      }
      if (help) {
        if (!family.help.empty()) fail("second HELP");
        if (value.empty()) fail("empty HELP");
        family.help = value;
      } else {
        if (!family.type.empty()) fail("second TYPE");
        static const std::set<std::string> types = {"counter", "gauge", "histogram", "summary",
                                                    "untyped"};
        if (!types.count(value)) fail("unknown type " + value);
        if (!family.samples.empty()) fail("TYPE after samples");
        if (value == "counter" && name.size() < 6) fail("counter name too short");
        if (value == "counter" && name.compare(name.size() - 6, 6, "_total") != 0) {
          fail("a counter's name must end in _total");
        }
        family.type = value;
      }
      return;
    }
    if (text[0] == '#') return;  // a comment
    sample(text);
  }

  void sample(const std::string& text) {
    std::size_t i = 0;
    while (i < text.size() && text[i] != '{' && text[i] != ' ')
      ++i;
    PromSample s;
    s.name = text.substr(0, i);
    if (!valid_metric_name(s.name)) fail("bad metric name");
    if (i < text.size() && text[i] == '{') {
      ++i;
      while (true) {
        if (i >= text.size()) fail("unterminated labels");
        if (text[i] == '}') {
          ++i;
          break;
        }
        const std::size_t equals = text.find('=', i);
        if (equals == std::string::npos) fail("label without =");
        const std::string label = text.substr(i, equals - i);
        if (!valid_label_name(label)) fail("bad label name '" + label + "'");
        i = equals + 1;
        if (i >= text.size() || text[i] != '"') fail("label value not quoted");
        ++i;
        std::string value;
        while (true) {
          if (i >= text.size()) fail("unterminated label value");
          const char c = text[i++];
          if (c == '"') break;
          if (c == '\\') {
            if (i >= text.size()) fail("dangling backslash");
            const char e = text[i++];
            if (e == 'n') {
              value += '\n';
            } else if (e == '\\' || e == '"') {
              value += e;
            } else {
              fail("bad escape");
            }
          } else {
            value += c;
          }
        }
        if (!s.labels.emplace(label, value).second) fail("label twice");
        if (i < text.size() && text[i] == ',') ++i;
      }
    }
    if (i >= text.size() || text[i] != ' ') fail("no space before the value");
    const std::string rest = text.substr(i + 1);
    const std::size_t space = rest.find(' ');
    s.value = value_of(rest.substr(0, space));
    if (space != std::string::npos) value_of(rest.substr(space + 1));  // a timestamp
    const std::string family_name = family_of(s.name);
    auto family = families_.find(family_name);
    if (family == families_.end() || family->second.type.empty()) {
      fail("sample of " + family_name + " before its TYPE");
    }
    if (family_name != current_) fail("samples of " + family_name + " are not together");
    std::string series = s.name;
    for (const auto& [k, v] : s.labels)
      series += "\x1f" + k + "=" + v;
    if (!series_.insert(series).second) fail("series twice");
    if (family->second.type == "counter" && s.value < 0) fail("negative counter");
    family->second.samples.push_back(std::move(s));
  }

  void check_histograms() const {
    for (const auto& [name, family] : families_) {
      if (family.type != "histogram") continue;
      // Per label set (without le): buckets in ascending le, cumulative, +Inf = _count.
      std::map<std::map<std::string, std::string>, std::vector<std::pair<double, double>>> buckets;
      std::map<std::map<std::string, std::string>, double> counts;
      for (const PromSample& s : family.samples) {
        auto labels = s.labels;
        if (s.name == name + "_bucket") {
          auto le = labels.find("le");
          if (le == labels.end()) throw std::runtime_error(name + ": bucket without le");
          const double bound = value_of(le->second);
          labels.erase(le);
          buckets[labels].emplace_back(bound, s.value);
        } else if (s.name == name + "_count") {
          counts[labels] = s.value;
        } else if (s.name != name + "_sum") {
          throw std::runtime_error(name + ": unexpected sample " + s.name);
        }
      }
      for (const auto& [labels, list] : buckets) {
        for (std::size_t k = 1; k < list.size(); ++k) {
          if (!(list[k].first > list[k - 1].first)) {
            throw std::runtime_error(name + ": le not ascending");
          }
          if (list[k].second < list[k - 1].second) {
            throw std::runtime_error(name + ": buckets not cumulative");
          }
        }
        if (list.empty() || !std::isinf(list.back().first)) {
          throw std::runtime_error(name + ": no +Inf bucket");
        }
        auto count = counts.find(labels);
        if (count == counts.end() || count->second != list.back().second) {
          throw std::runtime_error(name + ": +Inf bucket differs from _count");
        }
      }
    }
  }

  std::map<std::string, PromFamily> families_;
  std::set<std::string> closed_;
  std::set<std::string> series_;
  std::string current_;
};

// The value of the sample `name` whose labels include `labels`; NaN when there is none.
inline double prom_value(const std::map<std::string, PromFamily>& families,
                         const std::string& family, const std::string& name,
                         const std::map<std::string, std::string>& labels = {}) {
  auto it = families.find(family);
  if (it == families.end()) return std::nan("");
  for (const PromSample& s : it->second.samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto l = s.labels.find(k);
      if (l == s.labels.end() || l->second != v) match = false;
    }
    if (match) return s.value;
  }
  return std::nan("");
}

}  // namespace slicestream::test

// Rows of the benchmark's results: printed as aligned tables and written as JSON.
#pragma once

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace slicestream::bench {

// One result: named text and number fields, kept in insertion order.
struct Row {
  std::string section;
  std::vector<std::pair<std::string, std::string>> text;
  std::vector<std::pair<std::string, double>> numbers;

  Row& set(const std::string& key, const std::string& value) {
    text.emplace_back(key, value);
    return *this;
  }
  Row& set(const std::string& key, double value) {
    numbers.emplace_back(key, value);
    return *this;
  }
};

class Report {
 public:
  Row& add(const std::string& section) {
    rows_.push_back(Row{section, {}, {}});
    return rows_.back();
  }
  void print(const std::string& section) const;
  void write_json(const std::string& path, const std::string& device) const;

 private:
  std::vector<Row> rows_;
};

}  // namespace slicestream::bench

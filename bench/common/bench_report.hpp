// Rows of a benchmark's results: printed as aligned tables and written as JSON.
#pragma once

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace slicestream::bench {

// A number and how many decimals the table shows (-1: four significant places or decimals).
struct Number {
  double value = 0;
  int decimals = -1;
};

// One result: named text and number fields, kept in insertion order.
struct Row {
  std::string section;
  std::vector<std::pair<std::string, std::string>> text;
  std::vector<std::pair<std::string, Number>> numbers;

  Row& set(const std::string& key, const std::string& value) {
    text.emplace_back(key, value);
    return *this;
  }
  Row& set(const std::string& key, double value, int decimals = -1) {
    numbers.emplace_back(key, Number{value, decimals});
    return *this;
  }
};

class Report {
 public:
  Row& add(const std::string& section) {
    rows_.push_back(Row{section, {}, {}});
    return rows_.back();
  }
  // A top-level field of the JSON (the machine, the settings of the run), after "device".
  void note(const std::string& key, const std::string& value) { notes_.emplace_back(key, value); }
  void print(const std::string& section) const;
  void write_json(const std::string& path, const std::string& device) const;

 private:
  std::vector<Row> rows_;
  std::vector<std::pair<std::string, std::string>> notes_;
};

}  // namespace slicestream::bench

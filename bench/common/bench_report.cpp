#include "bench_report.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace slicestream::bench {
namespace {

std::string format_number(double v, int decimals = -1) {
  char buffer[64];
  if (!std::isfinite(v)) return "-";
  if (decimals >= 0) {
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, v);
  } else if (v != 0 && (std::fabs(v) >= 1e6 || std::fabs(v) < 1e-3)) {
    std::snprintf(buffer, sizeof buffer, "%.4g", v);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.4f", v);
  }
  return buffer;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

void Report::print(const std::string& section) const {
  std::vector<const Row*> rows;
  for (const Row& r : rows_) {
    if (r.section == section) rows.push_back(&r);
  }
  if (rows.empty()) return;
  std::vector<std::string> headers;
  for (const auto& [k, v] : rows.front()->text)
    headers.push_back(k);
  for (const auto& [k, v] : rows.front()->numbers)
    headers.push_back(k);
  std::vector<std::vector<std::string>> cells;
  for (const Row* r : rows) {
    std::vector<std::string> line;
    for (const auto& [k, v] : r->text)
      line.push_back(v);
    for (const auto& [k, v] : r->numbers)
      line.push_back(format_number(v.value, v.decimals));
    cells.push_back(line);
  }
  std::vector<std::size_t> width(headers.size());
  for (std::size_t c = 0; c < headers.size(); ++c) {
    width[c] = headers[c].size();
    for (const auto& line : cells) {
      if (c < line.size()) width[c] = std::max(width[c], line[c].size());
    }
  }
  std::printf("\n== %s\n", section.c_str());
  for (std::size_t c = 0; c < headers.size(); ++c) {
    std::printf("%-*s  ", static_cast<int>(width[c]), headers[c].c_str());
  }
  std::printf("\n");
  for (const auto& line : cells) {
    for (std::size_t c = 0; c < line.size(); ++c) {
      std::printf("%-*s  ", static_cast<int>(width[c]), line[c].c_str());
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

void Report::write_json(const std::string& path, const std::string& device) const {
  std::ofstream out(path);
  out << "{\n  \"device\": " << json_string(device) << ",\n";
  for (const auto& [k, v] : notes_)
    out << "  " << json_string(k) << ": " << json_string(v) << ",\n";
  out << "  \"results\": [\n";
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    const Row& r = rows_[i];
    out << "    {\"section\": " << json_string(r.section);
    for (const auto& [k, v] : r.text)
      out << ", " << json_string(k) << ": " << json_string(v);
    for (const auto& [k, v] : r.numbers) {
      out << ", " << json_string(k) << ": "
          << (std::isfinite(v.value) ? format_number(v.value) : "null");
    }
    out << "}" << (i + 1 < rows_.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
}

}  // namespace slicestream::bench

#include "server/metrics/prometheus_writer.hpp"

#include <fmt/format.h>

#include <cmath>

namespace slicestream {

namespace {

// Backslash and line feed escaped, and double quotes with `quotes` (label values; HELP text
// keeps them).
std::string escape(const std::string& text, bool quotes) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || (quotes && c == '"')) {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string format_labels(const PrometheusWriter::Labels& labels) {
  if (labels.empty()) return {};
  std::string out = "{";
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out += ',';
    out += labels[i].first + "=\"" + escape_label_value(labels[i].second) + '"';
  }
  return out + '}';
}

}  // namespace

std::string escape_label_value(const std::string& value) {
  return escape(value, true);
}

std::string format_sample_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

void PrometheusWriter::family(const std::string& name, const char* type, const std::string& help) {
  out_ << "# HELP " << name << ' ' << escape(help, false) << '\n';
  out_ << "# TYPE " << name << ' ' << type << '\n';
}

void PrometheusWriter::sample(const std::string& name, const Labels& labels, double value) {
  out_ << name << format_labels(labels) << ' ' << format_sample_value(value) << '\n';
}

void PrometheusWriter::single(const std::string& name, const char* type, const std::string& help,
                              double value) {
  family(name, type, help);
  sample(name, {}, value);
}

void PrometheusWriter::histogram(const std::string& name, const Labels& labels,
                                 const LatencySummary& latency) {
  constexpr double kSecondsPerUs = 1e-6;
  for (int k = 0; k < kLatencyBounds; ++k) {
    Labels with_bound = labels;
    with_bound.emplace_back("le", format_sample_value(std::exp2(k) * kSecondsPerUs));
    sample(name + "_bucket", with_bound,
           static_cast<double>(latency.count_below_us[static_cast<std::size_t>(k)]));
  }
  Labels with_inf = labels;
  with_inf.emplace_back("le", "+Inf");
  sample(name + "_bucket", with_inf, static_cast<double>(latency.count));
  sample(name + "_sum", labels, latency.sum_us * kSecondsPerUs);
  sample(name + "_count", labels, static_cast<double>(latency.count));
}

}  // namespace slicestream

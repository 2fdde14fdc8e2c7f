// Writes the Prometheus text exposition format (version 0.0.4): metric families with their HELP
// and TYPE lines, samples with escaped label values, and histograms from a LatencySummary.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/messages/metrics_snapshot.hpp"

namespace slicestream {

class PrometheusWriter {
 public:
  using Labels = std::vector<std::pair<std::string, std::string>>;

  // Starts a family: `type` is "counter", "gauge" or "histogram". Its samples follow at once
  // (the format wants a family's samples together).
  void family(const std::string& name, const char* type, const std::string& help);
  // One sample of the current family; `suffix` ("_bucket", "_sum", "_count") for histograms.
  void sample(const std::string& name, const Labels& labels, double value);
  // A family with one unlabelled sample.
  void single(const std::string& name, const char* type, const std::string& help, double value);
  // The samples of one histogram (microseconds in, seconds out): buckets at 2^k us, +Inf, sum
  // and count.
  void histogram(const std::string& name, const Labels& labels, const LatencySummary& latency);

  std::string text() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

// Label values: backslash, double quote and line feed escaped.
std::string escape_label_value(const std::string& value);
// Sample values: "NaN", "+Inf", "-Inf" or the shortest form that reads back exactly.
std::string format_sample_value(double value);

}  // namespace slicestream

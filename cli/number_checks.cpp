#include "cli/number_checks.hpp"

#include <cmath>
#include <functional>
#include <sstream>
#include <string>

namespace slicestream::cli {

namespace {

// 16, 0.25, 1e+06: the shortest form that reads back the same.
std::string number_text(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
}

// A validator that reads the flag's text as a number and asks `accept` whether it is allowed;
// `rule` says what is allowed ("> 0") in errors, `name` in --help ("POSITIVE").
CLI::Validator number_check(const std::string& rule, const std::string& name,
                            std::function<bool(double)> accept) {
  return CLI::Validator(
      [rule, accept](std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !std::isfinite(value)) {
          return "'" + text + "' is not a number";
        }
        if (!accept(value)) return "must be " + rule + " (got " + text + ")";
        return {};
      },
      name);
}

}  // namespace

CLI::Validator positive() {
  return number_check("> 0", "POSITIVE", [](double value) { return value > 0; });
}

CLI::Validator non_negative() {
  return number_check(">= 0", "NON-NEGATIVE", [](double value) { return value >= 0; });
}

CLI::Validator in_range(double min, double max) {
  const std::string range = number_text(min) + ".." + number_text(max);
  return number_check("in " + range, "IN " + range,
                      [min, max](double value) { return value >= min && value <= max; });
}

}  // namespace slicestream::cli

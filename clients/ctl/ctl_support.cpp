#include "clients/ctl/ctl_support.hpp"
#include "wire/wire_text.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <sstream>
#include <vector>

namespace slicestream::ctl {

namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ','))
    parts.push_back(part);
  if (!text.empty() && text.back() == ',') parts.push_back("");
  return parts;
}

double parse_number(const std::string& text, const std::string& what) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  while (used < text.size() && std::isspace(static_cast<unsigned char>(text[used])))
    ++used;
  if (text.empty() || used != text.size() || !std::isfinite(value)) {
    throw CLI::ValidationError(what, "'" + text + "' is not a finite number");
  }
  return value;
}

std::string upper_snake(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) {
    return c == '-' ? '_' : static_cast<char>(std::toupper(c));
  });
  return text;
}

std::string lower_dashed(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) {
    return c == '_' ? '-' : static_cast<char>(std::tolower(c));
  });
  return text;
}

}  // namespace

client::Orientation parse_orientation(const std::string& text) {
  const std::vector<std::string> parts = split(text);
  if (parts.size() != 9) {
    throw CLI::ValidationError("--orientation",
                               "needs 9 comma-separated numbers (x-axis, y-axis, "
                               "base point), got " +
                                   std::to_string(parts.size()));
  }
  client::Orientation orientation{};
  for (std::size_t i = 0; i < 9; ++i) {
    orientation[i] = static_cast<float>(parse_number(parts[i], "--orientation"));
  }
  return orientation;
}

std::pair<std::uint32_t, std::uint32_t> parse_size(const std::string& text) {
  const std::vector<std::string> parts = split(text);
  if (parts.size() != 2) throw CLI::ValidationError("--size", "needs W,H, got '" + text + "'");
  std::uint32_t values[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    const double value = parse_number(parts[static_cast<std::size_t>(i)], "--size");
    if (value < 1 || value > 1e6 || value != std::floor(value)) {
      throw CLI::ValidationError("--size", "'" + parts[static_cast<std::size_t>(i)] +
                                               "' is not a positive whole number of pixels");
    }
    values[i] = static_cast<std::uint32_t>(value);
  }
  return {values[0], values[1]};
}

v1::FilterWindow parse_filter(const std::string& text) {
  v1::FilterWindow window = v1::FILTER_WINDOW_UNSPECIFIED;
  if (!v1::FilterWindow_Parse("FILTER_WINDOW_" + upper_snake(text), &window) ||
      window == v1::FILTER_WINDOW_UNSPECIFIED) {
    throw CLI::ValidationError("--filter", "'" + text +
                                               "' is not one of ram-lak, shepp-logan, cosine, "
                                               "hamming, hann");
  }
  return window;
}

v1::WindowMode parse_mode(const std::string& text) {
  const std::string mode = lower_dashed(text);
  if (mode == "sliding") return v1::WINDOW_MODE_SLIDING;
  if (mode == "rotation" || mode == "per-rotation") return v1::WINDOW_MODE_PER_ROTATION;
  throw CLI::ValidationError("--mode", "'" + text + "' is not one of sliding, rotation");
}

std::string mode_name(v1::WindowMode mode) {
  return mode == v1::WINDOW_MODE_PER_ROTATION ? "rotation" : "sliding";
}

bool reply_ok(const client::Response& response, const char* what) {
  if (response.ok()) return true;
  const v1::Reply& reply = response.reply;
  std::cerr << "slicestream-ctl " << what << ": " << v1::StatusCode_Name(reply.code()) << ": "
            << escape_wire_text(reply.message());
  if (!reply.reason().empty()) std::cerr << " [" << escape_wire_text(reply.reason()) << "]";
  std::cerr << "\n";
  return false;
}

}  // namespace slicestream::ctl

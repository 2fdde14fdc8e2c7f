#include "clients/detector/number_file.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace slicestream::detector {

std::vector<double> read_number_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::vector<double> numbers;
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    line = line.substr(0, line.find('#'));
    for (char& c : line) {
      if (c == ',') c = ' ';
    }
    std::istringstream tokens(line);
    std::string token;
    while (tokens >> token) {
      char* end = nullptr;
      const double value = std::strtod(token.c_str(), &end);
      if (end != token.c_str() + token.size() || !std::isfinite(value)) {
        throw std::runtime_error(path + ":" + std::to_string(line_number) + ": '" + token +
                                 "' is not a finite number");
      }
      numbers.push_back(value);
    }
  }
  if (in.bad()) throw std::runtime_error(path + ": read error");
  return numbers;
}

}  // namespace slicestream::detector

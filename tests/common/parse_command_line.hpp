// A command line given to a CLI11 app in a test, as its program would get it from a shell.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace slicestream::test {

// Parses `args` (without the program's name) into `app`; returns CLI11's error text, the words a
// user would read, or "" on success.
inline std::string parse_command_line(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<const char*> argv{"program"};
  for (const std::string& arg : args)
    argv.push_back(arg.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
  } catch (const CLI::ParseError& error) {
    return error.what();
  }
  return "";
}

}  // namespace slicestream::test

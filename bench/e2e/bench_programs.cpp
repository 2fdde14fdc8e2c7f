#include "bench_programs.hpp"

#include <unistd.h>

#include <cstdio>

#include "child_process.hpp"

namespace slicestream::bench {

BenchPrograms::BenchPrograms()
    : server_path(default_binary("slicestream-server", SLICESTREAM_SERVER_BINARY)),
      detector_path(default_binary("slicestream-detector", SLICESTREAM_DETECTOR_BINARY)) {}

void add_program_options(CLI::App& app, BenchPrograms& programs) {
  app.add_option("--server", programs.server_path, "slicestream-server binary")
      ->capture_default_str();
  app.add_option("--detector", programs.detector_path, "slicestream-detector binary")
      ->capture_default_str();
  app.add_option("--backend", programs.backend, "the server's --backend")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}))
      ->capture_default_str();
  app.add_option("--server-args", programs.server_args,
                 "more server flags, one string: --server-args=\"--threads 2 --publish-rate 30\"");
}

bool programs_runnable(const BenchPrograms& programs) {
  for (const std::string* binary : {&programs.server_path, &programs.detector_path}) {
    if (access(binary->c_str(), X_OK) != 0) {
      std::fprintf(stderr, "cannot run %s (use --server / --detector)\n", binary->c_str());
      return false;
    }
  }
  return true;
}

void use_programs(const BenchPrograms& programs, StepConfig& step) {
  step.server_path = programs.server_path;
  step.detector_path = programs.detector_path;
  step.backend = programs.backend;
  for (const std::string& word : split_words(programs.server_args))
    step.server_args.push_back(word);
}

}  // namespace slicestream::bench

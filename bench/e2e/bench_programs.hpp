// The programs an end-to-end benchmark runs (bench/e2e, bench/web) and the flags that choose
// them, one block for every such benchmark: --server and --detector (default: the programs next
// to the benchmark in a device bundle, else those of this build tree), --backend (the server's)
// and --server-args (more server flags, one string).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "ingest_step.hpp"

namespace slicestream::bench {

struct BenchPrograms {
  BenchPrograms();  // the default programs (see above)
  std::string server_path;
  std::string detector_path;
  std::string backend = "auto";  // cpu, cuda or auto
  std::string server_args;       // split into words for the server's command line
};

void add_program_options(CLI::App& app, BenchPrograms& programs);

// False, after a message on stderr naming the program and the flag that chooses it, when the
// server or the detector cannot be run.
bool programs_runnable(const BenchPrograms& programs);

// What runs in `step`: the programs, the backend, and --server-args after the flags `step` has.
void use_programs(const BenchPrograms& programs, StepConfig& step);

}  // namespace slicestream::bench

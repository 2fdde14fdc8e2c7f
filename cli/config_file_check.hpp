// Config files (--config, TOML or INI) whose every key and section must be known: a typo such as
// `fliter = "hann"` is an error naming the key and the nearest valid one, instead of a setting
// that silently never applies.
#pragma once

#include <CLI/CLI.hpp>

namespace slicestream::cli {

// Makes `app`'s config file reader refuse unknown keys and sections (CLI::ConfigError, which
// CLI11 reports like any bad argument). Keys are the long option names without "--", as CLI11
// reads them; a section names a subcommand. Call after set_config(), before parsing; options
// added to `app` later are known too (they are looked up when the file is read).
void require_known_config_keys(CLI::App& app);

}  // namespace slicestream::cli

// The command-line pieces every program shares: unknown config keys, readable range errors,
// --server with explicit endpoint flags winning, --version.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/config_file_check.hpp"
#include "cli/endpoint_options.hpp"
#include "cli/nearest_name.hpp"
#include "cli/number_checks.hpp"
#include "cli/version.hpp"
#include "tests/common/parse_command_line.hpp"
#include "tests/common/temp_dir.hpp"

namespace slicestream::cli {
namespace {

using test::parse_command_line;

struct Settings {
  std::string filter = "ram-lak";
  double cutoff = 1;
  int rows = 1;
};

void add_settings(CLI::App& app, Settings& s) {
  app.set_config("--config");
  require_known_config_keys(app);
  app.add_option("--filter", s.filter);
  app.add_option("--filter-cutoff", s.cutoff);
  app.add_option("--rows", s.rows)->check(positive());
}

TEST(NearestName, TyposFindTheIntendedName) {
  EXPECT_EQ(edit_distance("fliter", "filter"), 1u) << "a swap of neighbours is one edit";
  EXPECT_EQ(edit_distance("filter_cutoff", "filter-cutoff"), 0u);
  EXPECT_EQ(nearest_name("fliter", {"filter", "filter-cutoff", "mode"}), "filter");
  EXPECT_EQ(nearest_name("preview-sise", {"preview-size", "preview-interval"}), "preview-size");
  EXPECT_EQ(nearest_name("zzzzzz", {"filter", "mode"}), "") << "nothing close: no guess";
}

TEST(ConfigFile, KnownKeysAreRead) {
  const test::TempTextFile toml("config.toml",
                                "filter = \"hann\"\nfilter-cutoff = 0.5\n[default]\nrows = 3\n");
  CLI::App app;
  Settings s;
  add_settings(app, s);
  ASSERT_EQ(parse_command_line(app, {"--config", toml.path()}), "");
  EXPECT_EQ(s.filter, "hann");
  EXPECT_EQ(s.cutoff, 0.5);
  EXPECT_EQ(s.rows, 3);
}

TEST(ConfigFile, UnknownKeyNamesTheKeyAndTheNearestOne) {
  for (const char* text : {"fliter = \"hann\"\n", "fliter=hann\n"}) {  // TOML, INI
    const test::TempTextFile file("config.conf", text);
    CLI::App app;
    Settings s;
    add_settings(app, s);
    const std::string error = parse_command_line(app, {"--config", file.path()});
    EXPECT_NE(error.find("unknown key 'fliter'"), std::string::npos) << error;
    EXPECT_NE(error.find("did you mean 'filter'?"), std::string::npos) << error;
    EXPECT_NE(error.find(file.path()), std::string::npos) << "names the file: " << error;
    EXPECT_EQ(s.filter, "ram-lak");
  }
}

TEST(ConfigFile, UnknownSectionIsAnError) {
  const test::TempTextFile toml("config.toml", "[filtre]\nwindow = \"hann\"\n");
  CLI::App app;
  Settings s;
  add_settings(app, s);
  const std::string error = parse_command_line(app, {"--config", toml.path()});
  EXPECT_NE(error.find("unknown section [filtre]"), std::string::npos) << error;
  EXPECT_NE(error.find("top level"), std::string::npos) << error;
}

TEST(ConfigFile, SectionsNameSubcommands) {
  const test::TempTextFile toml("config.toml", "[simulate]\nrows = 4\n[simulate]\nrosw = 5\n");
  CLI::App app;
  app.set_config("--config");
  require_known_config_keys(app);
  int rows = 0;
  app.add_subcommand("simulate")->add_option("--rows", rows);
  const std::string error = parse_command_line(app, {"--config", toml.path()});
  EXPECT_NE(error.find("unknown key 'rosw' in section [simulate] (did you mean 'rows'?)"),
            std::string::npos)
      << error;
}

TEST(NumberChecks, RangeErrorsAreReadable) {
  CLI::App app;
  Settings s;
  add_settings(app, s);
  const std::string error = parse_command_line(app, {"--rows", "0"});
  EXPECT_NE(error.find("--rows: must be > 0 (got 0)"), std::string::npos) << error;
  EXPECT_EQ(error.find("1797693"), std::string::npos) << "no DBL_MAX in full: " << error;
  CLI::App other;
  double fraction = 0;
  int count = 0;
  other.add_option("--fraction", fraction)->check(in_range(0, 1));
  other.add_option("--count", count)->check(non_negative());
  EXPECT_NE(parse_command_line(other, {"--fraction", "2"}).find("must be in 0..1 (got 2)"),
            std::string::npos);
  EXPECT_NE(parse_command_line(other, {"--count", "-3"}).find("must be >= 0 (got -3)"),
            std::string::npos);
  EXPECT_NE(parse_command_line(other, {"--count", "x"}).find("'x' is not a number"),
            std::string::npos);
  EXPECT_EQ(parse_command_line(other, {"--fraction", "0.5", "--count", "0"}), "");
}

struct ClientEndpoints {
  std::string data = "tcp://127.0.0.1:5570";
  std::string requests = "tcp://127.0.0.1:5572";
};

void add_client_endpoints(CLI::App& app, ClientEndpoints& e) {
  const CLI::Validator check = endpoint_check(EndpointRole::kConnect);
  CLI::Option* data = app.add_option("--data", e.data)->check(check);
  CLI::Option* requests = app.add_option("--requests", e.requests)->check(check);
  add_server_address_option(
      app, "--server", EndpointRole::kConnect,
      {{ServerEndpoint::kData, data, &e.data}, {ServerEndpoint::kRequests, requests, &e.requests}},
      "");
}

TEST(EndpointOptions, InvalidEndpointFlagIsRefused) {
  CLI::App app;
  ClientEndpoints e;
  add_client_endpoints(app, e);
  const std::string error = parse_command_line(app, {"--data", "tcp://127.0.0.1:99999"});
  EXPECT_NE(error.find("--data"), std::string::npos) << error;
  EXPECT_NE(error.find("outside 1..65535"), std::string::npos) << error;
}

TEST(EndpointOptions, ServerSetsTheEndpointsNotGivenExplicitly) {
  CLI::App app;
  ClientEndpoints e;
  add_client_endpoints(app, e);
  ASSERT_EQ(parse_command_line(app, {"--server", "beamline:6000"}), "");
  EXPECT_EQ(e.data, "tcp://beamline:6000");
  EXPECT_EQ(e.requests, "tcp://beamline:6002");

  CLI::App explicit_app;
  ClientEndpoints f;
  add_client_endpoints(explicit_app, f);
  ASSERT_EQ(parse_command_line(explicit_app, {"--data", "ipc:///tmp/d", "--server", "beamline"}),
            "");
  EXPECT_EQ(f.data, "ipc:///tmp/d") << "an explicit endpoint flag wins over --server";
  EXPECT_EQ(f.requests, "tcp://beamline:5572");

  CLI::App bad;
  ClientEndpoints g;
  add_client_endpoints(bad, g);
  EXPECT_NE(parse_command_line(bad, {"--server", "beamline:70000"}).find("--server"),
            std::string::npos);
}

TEST(Version, PrintsProgramAndVersion) {
  CLI::App app;
  add_version_flag(app, "slicestream-test");
  try {
    app.parse(std::vector<std::string>{"--version"});
    FAIL() << "--version did not stop parsing";
  } catch (const CLI::CallForVersion& call) {
    EXPECT_EQ(std::string(call.what()), std::string("slicestream-test ") + version());
    EXPECT_EQ(call.get_exit_code(), 0);
  }
  EXPECT_FALSE(std::string(version()).empty());
}

}  // namespace
}  // namespace slicestream::cli

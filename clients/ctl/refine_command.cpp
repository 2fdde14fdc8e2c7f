// refine: switches refinement of a live slice on or off (SetRefinement), with its settings.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli/number_checks.hpp"
#include "clients/ctl/ctl_commands.hpp"
#include "clients/ctl/ctl_support.hpp"
#include "wire/wire_text.hpp"

namespace slicestream::ctl {

namespace {

struct RefineOptions {
  std::uint32_t slice_id = 0;
  std::uint32_t iterations = 50;
  double interval_s = 1;
  bool off = false;
  // Empty / unset: the server's defaults (docs/refinement.md); the server checks the names.
  std::string method;
  std::string regularizer;
  std::optional<double> weight;
  std::optional<bool> non_negative;
  std::string stop;
  std::optional<double> discrepancy_factor;
};

v1::RefinementSettings wire_settings(const RefineOptions& options) {
  v1::RefinementSettings settings;
  settings.set_method(options.method);
  settings.set_regularizer(options.regularizer);
  if (options.weight) settings.set_weight(*options.weight);
  if (options.non_negative) settings.set_non_negative(*options.non_negative);
  settings.set_stop(options.stop);
  if (options.discrepancy_factor) settings.set_discrepancy_factor(*options.discrepancy_factor);
  return settings;
}

}  // namespace

void add_refine_command(CLI::App& app, const CtlContext& context, int* status) {
  auto options = std::make_shared<RefineOptions>();
  CLI::App* command = app.add_subcommand(
      "refine",
      "refine a live axial slice of a parallel-beam scan (or the central slice of a cone-beam "
      "scan) from its FBP image (SetRefinement): by default FISTA with x >= 0 and total "
      "variation, stopping at the noise level of the detector's counts; refined images arrive "
      "on topic 'refined' (watch saves them)");
  command->add_option("--slice", options->slice_id, "live slice id (set-slice)")->required();
  command
      ->add_option("--iterations", options->iterations,
                   "iterations per refinement, at most (0: measure the residual only)")
      ->capture_default_str();
  command
      ->add_option("--interval", options->interval_s,
                   "seconds between refinements at most (0: whenever new projections arrived)")
      ->check(cli::non_negative())
      ->capture_default_str();
  command->add_flag("--off", options->off, "switch the slice's refinement off");
  command->add_option("--method", options->method,
                      "fista (default: bounds and a regulariser) or cgls (plain least squares)");
  command->add_option("--regularizer", options->regularizer,
                      "tv (fista's default), tikhonov or none (cgls's default)");
  command->add_option("--weight", options->weight,
                      "regularisation weight, dimensionless, 0..10 (default 0.001 for tv, "
                      "0.01 for tikhonov)");
  command->add_option("--non-negative", options->non_negative,
                      "keep the image >= 0 (default true)");
  command->add_option("--stop", options->stop,
                      "discrepancy (default: stop at the noise level of the counts) or "
                      "iterations (always run them all)");
  command->add_option("--discrepancy-factor", options->discrepancy_factor,
                      "stop at this multiple of the noise level, 0.5..10 (default 1)");
  command->callback([&context, options, status] {
    *status = guarded("refine", [&] {
      client::RequestClient client(context.requests, context.timeout_ms(), context.security());
      const v1::RefinementSettings settings = wire_settings(*options);
      const client::Response response = client.set_refinement(
          options->slice_id, !options->off, options->iterations, options->interval_s, &settings);
      if (!reply_ok(response, "refine")) return kExitReplyError;
      std::cout << escape_wire_text(response.reply.message()) << "\n";
      return kExitOk;
    });
  });
}

}  // namespace slicestream::ctl

// refine: switches CGLS refinement of a live slice on or off (SetRefinement).
#include <iostream>
#include <memory>

#include "cli/number_checks.hpp"
#include "clients/ctl/ctl_commands.hpp"
#include "clients/ctl/ctl_support.hpp"
#include "wire/wire_text.hpp"

namespace slicestream::ctl {

namespace {

struct RefineOptions {
  std::uint32_t slice_id = 0;
  std::uint32_t iterations = 10;
  double interval_s = 1;
  bool off = false;
};

}  // namespace

void add_refine_command(CLI::App& app, const CtlContext& context, int* status) {
  auto options = std::make_shared<RefineOptions>();
  CLI::App* command = app.add_subcommand(
      "refine",
      "refine a live axial slice of a parallel-beam scan (or the central slice of a cone-beam "
      "scan) by CGLS from its FBP image "
      "(SetRefinement); refined images arrive on topic 'refined' (watch saves them)");
  command->add_option("--slice", options->slice_id, "live slice id (set-slice)")->required();
  command
      ->add_option("--iterations", options->iterations,
                   "CGLS iterations per refinement (0: measure the residual only)")
      ->capture_default_str();
  command
      ->add_option("--interval", options->interval_s,
                   "seconds between refinements at most (0: whenever new projections arrived)")
      ->check(cli::non_negative())
      ->capture_default_str();
  command->add_flag("--off", options->off, "switch the slice's refinement off");
  command->callback([&context, options, status] {
    *status = guarded("refine", [&] {
      client::RequestClient client(context.requests, context.timeout_ms(), context.security());
      const client::Response response = client.set_refinement(
          options->slice_id, !options->off, options->iterations, options->interval_s);
      if (!reply_ok(response, "refine")) return kExitReplyError;
      std::cout << escape_wire_text(response.reply.message()) << "\n";
      return kExitOk;
    });
  });
}

}  // namespace slicestream::ctl

// status (pretty or --json) and params (SetParameters; with no flags it shows the values in force).
#include <google/protobuf/util/json_util.h>

#include <iostream>
#include <memory>
#include <optional>

#include "clients/ctl/ctl_commands.hpp"
#include "clients/ctl/ctl_support.hpp"
#include "clients/ctl/status_print.hpp"

namespace slicestream::ctl {

namespace {

struct ParamsOptions {
  std::optional<std::string> filter;
  std::optional<float> cutoff;
  std::optional<std::string> mode;
  std::optional<double> cor_offset;
  std::optional<double> publish_rate;
  std::optional<double> preview_interval;
};

v1::SetParameters to_request(const ParamsOptions& options) {
  v1::SetParameters request;
  if (options.filter) request.set_filter(parse_filter(*options.filter));
  if (options.cutoff) request.set_filter_cutoff(*options.cutoff);
  if (options.mode) request.set_window_mode(parse_mode(*options.mode));
  if (options.cor_offset) request.set_rotation_axis_offset_px(*options.cor_offset);
  if (options.publish_rate) request.set_publish_rate_hz(*options.publish_rate);
  if (options.preview_interval) request.set_preview_interval_s(*options.preview_interval);
  return request;
}

}  // namespace

void add_status_command(CLI::App& app, const CtlContext& context, int* status) {
  auto json = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand("status", "show the server's state, rates and counters");
  command->add_flag("--json", *json, "print the StatusReport as JSON");
  command->callback([&context, json, status] {
    *status = guarded("status", [&] {
      client::RequestClient client(context.requests, context.timeout_ms(), context.security());
      const client::Response response = client.get_status();
      if (!reply_ok(response, "status")) return kExitReplyError;
      if (*json) {
        std::string text;
        google::protobuf::util::JsonPrintOptions options;
        options.add_whitespace = true;
        options.always_print_primitive_fields = true;
        (void)google::protobuf::util::MessageToJsonString(response.reply.status(), &text, options);
        std::cout << text;
      } else {
        print_status(std::cout, response.reply.status());
      }
      return kExitOk;
    });
  });
}

void add_params_command(CLI::App& app, const CtlContext& context, int* status) {
  auto options = std::make_shared<ParamsOptions>();
  CLI::App* command = app.add_subcommand(
      "params", "change run-time parameters (SetParameters); without flags, show them");
  command->add_option("--filter", options->filter,
                      "ramp filter window: ram-lak, shepp-logan, cosine, hamming, hann");
  command->add_option("--filter-cutoff", options->cutoff, "fraction of Nyquist, (0, 1]");
  command->add_option("--mode", options->mode, "sliding or rotation");
  command->add_option("--cor-offset", options->cor_offset,
                      "centre-of-rotation offset, detector columns");
  command->add_option("--publish-rate", options->publish_rate,
                      "most publications per second per slice (0: every update)");
  command->add_option("--preview-interval", options->preview_interval,
                      "seconds between preview volumes");
  command->callback([&context, options, status] {
    const v1::SetParameters request = to_request(*options);
    *status = guarded("params", [&] {
      client::RequestClient client(context.requests, context.timeout_ms(), context.security());
      const client::Response response = client.set_parameters(request);
      if (!reply_ok(response, "params")) return kExitReplyError;
      std::cout << "parameters in force\n";
      print_parameters(std::cout, response.reply.parameters());
      return kExitOk;
    });
  });
}

}  // namespace slicestream::ctl

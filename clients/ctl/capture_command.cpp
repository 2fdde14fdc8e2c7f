// capture start|stop|status: records the server's scans to DXchange HDF5 files in its capture
// directory (SetCapture; the server needs --capture-dir or --capture).
#include <iostream>
#include <memory>
#include <string>

#include "clients/ctl/ctl_commands.hpp"
#include "clients/ctl/ctl_support.hpp"

namespace slicestream::ctl {

namespace {

void print_capture(const v1::CaptureStatus& capture) {
  std::cout << "capture: " << capture.state() << ", directory " << capture.directory() << "\n";
  if (!capture.file().empty()) std::cout << "  file: " << capture.file() << "\n";
  std::cout << "  files finished " << capture.files() << ", frames written "
            << capture.frames_written() << " (" << (capture.bytes_written() >> 20)
            << " MiB), dropped " << capture.frames_dropped() << ", skipped "
            << capture.frames_skipped() << "\n"
            << "  queued " << (capture.queued_bytes() >> 20) << " MiB, pre-trigger "
            << (capture.pretrigger_bytes() >> 20) << " MiB (" << capture.pretrigger_evicted()
            << " evicted)\n";
  if (capture.write_errors() > 0) {
    std::cout << "  write errors " << capture.write_errors() << ": " << capture.last_error()
              << "\n";
  }
}

}  // namespace

void add_capture_command(CLI::App& app, const CtlContext& context, int* status) {
  CLI::App* capture = app.add_subcommand(
      "capture", "record the scans' raw frames to DXchange HDF5 files on the server (SetCapture)");
  capture->require_subcommand(1);
  auto label = std::make_shared<std::string>();
  CLI::App* start = capture->add_subcommand(
      "start", "record the current scan (its pre-trigger frames first) and the next ones");
  start->add_option("--label", *label, "put into the file names (letters, digits, - _ .)");
  CLI::App* stop = capture->add_subcommand("stop", "stop recording; the file is finished");
  CLI::App* show = capture->add_subcommand("status", "where capture stands");

  auto send = [&context, status](bool enabled, const std::string& text) {
    *status = guarded("capture", [&] {
      client::RequestClient client(context.requests, context.timeout_ms(), context.security());
      const client::Response response = client.set_capture(enabled, text);
      if (!reply_ok(response, "capture")) return kExitReplyError;
      std::cout << response.reply.message() << "\n";
      print_capture(response.reply.capture());
      return kExitOk;
    });
  };
  start->callback([send, label] { send(true, *label); });
  stop->callback([send] { send(false, {}); });
  show->callback([&context, status] {
    *status = guarded("capture", [&] {
      client::RequestClient client(context.requests, context.timeout_ms(), context.security());
      const client::Response response = client.get_status();
      if (!reply_ok(response, "capture status")) return kExitReplyError;
      if (!response.reply.status().has_capture()) {
        std::cout << "capture: off (the server has no --capture-dir)\n";
        return kExitOk;
      }
      print_capture(response.reply.status().capture());
      return kExitOk;
    });
  });
}

}  // namespace slicestream::ctl

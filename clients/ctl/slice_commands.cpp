// slice (one-shot GetSlice to image files), set-slice, remove-slice, reset-slices.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>

#include "clients/common/image_file.hpp"
#include "clients/common/slice_metadata.hpp"
#include "clients/ctl/ctl_commands.hpp"
#include "clients/ctl/ctl_support.hpp"

namespace slicestream::ctl {

namespace {

struct SliceOptions {
  std::string orientation;
  std::string size;
  std::optional<std::uint32_t> like_id;
  std::vector<std::string> outputs;
};

// The orientation and size of active slice `id`, from the server's status.
bool active_slice(client::RequestClient& client, std::uint32_t id, client::Orientation* orientation,
                  std::uint32_t* width, std::uint32_t* height) {
  const client::Response response = client.get_status();
  if (!reply_ok(response, "slice")) return false;
  for (const v1::SetSlice& slice : response.reply.status().slices()) {
    if (slice.slice_id() != id || slice.orientation().values_size() != 9) continue;
    std::copy(slice.orientation().values().begin(), slice.orientation().values().end(),
              orientation->begin());
    *width = slice.width();
    *height = slice.height();
    return true;
  }
  std::cerr << "slicestream-ctl slice: the server has no slice " << id
            << " (see slicestream-ctl status)\n";
  return false;
}

int run_slice(const CtlContext& context, const SliceOptions& options) {
  client::RequestClient client(context.requests, context.timeout_ms(), context.security());
  client::Orientation orientation{};
  std::uint32_t width = 0, height = 0;
  if (options.like_id) {
    if (!active_slice(client, *options.like_id, &orientation, &width, &height)) {
      return kExitReplyError;
    }
  } else {
    orientation = parse_orientation(options.orientation);
  }
  if (!options.size.empty()) std::tie(width, height) = parse_size(options.size);
  const client::Response response = client.get_slice(orientation, width, height);
  if (!reply_ok(response, "slice")) return kExitReplyError;
  const v1::SliceHeader& header = response.reply.slice();
  const auto [low, high] = std::minmax_element(response.values.begin(), response.values.end());
  for (const std::string& out : options.outputs) {
    try {
      client::write_image(out, static_cast<int>(header.width()), static_cast<int>(header.height()),
                          response.values, client::slice_metadata(header));
    } catch (const client::ClientError& error) {
      std::cerr << "slicestream-ctl slice: " << error.what() << "\n";
      return kExitFileError;
    }
    std::cout << "wrote " << out << " (" << header.width() << " x " << header.height() << ", "
              << header.projections_integrated() << " projections of scan " << header.scan_id()
              << ", values " << *low << " .. " << *high << " per mm)\n";
  }
  return kExitOk;
}

}  // namespace

void add_slice_commands(CLI::App& app, const CtlContext& context, int* status) {
  auto slice_options = std::make_shared<SliceOptions>();
  CLI::App* slice = app.add_subcommand(
      "slice", "reconstruct one slice from the current window (GetSlice) and save it");
  auto* orientation_option =
      slice->add_option("--orientation", slice_options->orientation,
                        "9 numbers a,b,c,d,e,f,g,h,i: x-axis, y-axis, base point (world mm)");
  slice->add_option("--id", slice_options->like_id,
                    "instead of --orientation: the orientation (and size) of active slice N");
  slice->add_option("--size", slice_options->size, "W,H in pixels (default with --id: its size)");
  slice
      ->add_option("--out", slice_options->outputs,
                   "output file(s): .tiff (float32, values kept) or .png (8-bit, auto-contrast)")
      ->required();
  orientation_option->excludes("--id");
  slice->callback([&context, slice_options, status] {
    if (slice_options->orientation.empty() && !slice_options->like_id) {
      throw CLI::RequiredError("--orientation or --id");
    }
    if (!slice_options->orientation.empty() && slice_options->size.empty()) {
      throw CLI::RequiredError("--size (with --orientation)");
    }
    for (const std::string& out : slice_options->outputs) {
      try {
        client::image_format_for(out);
      } catch (const client::ClientError& error) {
        throw CLI::ValidationError("--out", error.what());
      }
    }
    *status = guarded("slice", [&] { return run_slice(context, *slice_options); });
  });

  struct SetOptions {
    std::uint32_t id = 0;
    std::string orientation;
    std::string size;
    bool box = false;
  };
  auto set_options = std::make_shared<SetOptions>();
  CLI::App* set = app.add_subcommand("set-slice", "create or move a live slice (SetSlice)");
  set->add_option("--id", set_options->id, "slice id")->required();
  set->add_option("--orientation", set_options->orientation,
                  "9 numbers: x-axis, y-axis, base point (world mm; with --box in the box's "
                  "coordinates, -1..1 on each axis)")
      ->required();
  set->add_option("--size", set_options->size, "W,H in pixels")->required();
  set->add_flag("--box", set_options->box,
                "the orientation is in box coordinates (RECAST3D's [-1, 1]^3): the slice follows "
                "every scan's box; without it a slice stays where it is in world mm");
  set->callback([&context, set_options, status] {
    const client::Orientation orientation = parse_orientation(set_options->orientation);
    const auto [width, height] = parse_size(set_options->size);
    *status = guarded("set-slice", [&] {
      client::RequestClient client(context.requests, context.timeout_ms(), context.security());
      const client::Response response =
          client.set_slice(set_options->id, orientation, width, height, set_options->box);
      if (!reply_ok(response, "set-slice")) return kExitReplyError;
      std::cout << response.reply.message() << "\n";
      return kExitOk;
    });
  });

  auto remove_id = std::make_shared<std::uint32_t>(0);
  CLI::App* remove = app.add_subcommand("remove-slice", "remove a live slice (RemoveSlice)");
  remove->add_option("--id", *remove_id, "slice id")->required();
  remove->callback([&context, remove_id, status] {
    *status = guarded("remove-slice", [&] {
      client::RequestClient client(context.requests, context.timeout_ms(), context.security());
      const client::Response response = client.remove_slice(*remove_id);
      if (!reply_ok(response, "remove-slice")) return kExitReplyError;
      std::cout << response.reply.message() << "\n";
      return kExitOk;
    });
  });

  CLI::App* reset = app.add_subcommand(
      "reset-slices",
      "remove every client slice and bring back the default slices 0, 1, 2 (ResetSlices)");
  reset->callback([&context, status] {
    *status = guarded("reset-slices", [&] {
      client::RequestClient client(context.requests, context.timeout_ms(), context.security());
      const client::Response response = client.reset_slices();
      if (!reply_ok(response, "reset-slices")) return kExitReplyError;
      std::cout << response.reply.message() << "\n";
      return kExitOk;
    });
  });
}

}  // namespace slicestream::ctl

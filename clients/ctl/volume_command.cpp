// volume: reconstructs the scan's box (or a sub-box) at a chosen resolution from the current
// window and writes it to HDF5 or a TIFF stack (clients/common/volume_file.hpp). The volume is
// asked for chunk of planes by chunk of planes (GetVolume), each at most --chunk-mb, so neither
// the server nor this client holds it whole; a chunk the server refuses for its size is split.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "cli/number_checks.hpp"
#include "clients/common/volume_file.hpp"
#include "clients/ctl/ctl_commands.hpp"
#include "clients/ctl/ctl_support.hpp"

namespace slicestream::ctl {

namespace {

struct VolumeOptions {
  std::string out;
  std::string size;  // "NX,NY,NZ"
  double voxel_mm = 0;
  std::string box;  // "x0,y0,z0,x1,y1,z1"
  double chunk_mb = 64;
};

std::vector<double> numbers(const std::string& text, std::size_t count, const char* flag) {
  std::vector<double> values;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) {
    char* end = nullptr;
    const double value = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0' || !std::isfinite(value)) {
      throw CLI::ValidationError(flag, "'" + part + "' is not a finite number");
    }
    values.push_back(value);
  }
  if (values.size() != count) {
    throw CLI::ValidationError(
        flag, "needs " + std::to_string(count) + " comma-separated numbers, got '" + text + "'");
  }
  return values;
}

// The volume's box: --box, else the scan's (GetStatus); none when the server refused.
std::optional<v1::VolumeBox> volume_box(client::RequestClient& client,
                                        const VolumeOptions& options) {
  v1::VolumeBox box;
  if (!options.box.empty()) {
    const std::vector<double> v = numbers(options.box, 6, "--box");
    box.mutable_min_mm()->set_x(v[0]);
    box.mutable_min_mm()->set_y(v[1]);
    box.mutable_min_mm()->set_z(v[2]);
    box.mutable_max_mm()->set_x(v[3]);
    box.mutable_max_mm()->set_y(v[4]);
    box.mutable_max_mm()->set_z(v[5]);
    return box;
  }
  const client::Response status = client.get_status();
  if (!reply_ok(status, "volume")) return std::nullopt;
  if (!status.reply.status().has_scan()) {
    throw client::ClientError("the server has no scan yet: nothing to reconstruct");
  }
  return status.reply.status().scan().volume();
}

// --size, else the box divided into cubes of --voxel.
std::array<std::uint32_t, 3> volume_size(const v1::VolumeBox& box, const VolumeOptions& options) {
  if (!options.size.empty()) {
    const std::vector<double> v = numbers(options.size, 3, "--size");
    std::array<std::uint32_t, 3> size{};
    for (std::size_t i = 0; i < 3; ++i) {
      if (v[i] < 1 || v[i] != std::floor(v[i]) || v[i] > 1e6) {
        throw CLI::ValidationError("--size", "'" + options.size + "' needs whole numbers >= 1");
      }
      size[i] = static_cast<std::uint32_t>(v[i]);
    }
    return size;
  }
  const double extent[3] = {box.max_mm().x() - box.min_mm().x(),
                            box.max_mm().y() - box.min_mm().y(),
                            box.max_mm().z() - box.min_mm().z()};
  std::array<std::uint32_t, 3> size{};
  for (std::size_t i = 0; i < 3; ++i) {
    size[i] = static_cast<std::uint32_t>(std::max(1.0, std::round(extent[i] / options.voxel_mm)));
  }
  return size;
}

bool chunk_too_large(const client::Response& response) {
  return response.reply.code() == v1::STATUS_CODE_RESOURCE_EXHAUSTED &&
         (response.reply.reason() == "volume_chunk_too_large" ||
          response.reply.reason() == "out_of_memory");
}

int save_volume(const CtlContext& context, const VolumeOptions& options) {
  client::RequestClient client(context.requests, context.timeout_ms(), context.security());
  v1::GetVolume request;
  const std::optional<v1::VolumeBox> box = volume_box(client, options);
  if (!box) return kExitReplyError;
  *request.mutable_box() = *box;
  const std::array<std::uint32_t, 3> size = volume_size(request.box(), options);
  request.set_size_x(size[0]);
  request.set_size_y(size[1]);
  request.set_size_z(size[2]);
  const double plane_mb = size[0] * static_cast<double>(size[1]) * sizeof(float) / (1 << 20);
  std::uint32_t planes = static_cast<std::uint32_t>(
      std::clamp(std::floor(options.chunk_mb / plane_mb), 1.0, static_cast<double>(size[2])));
  std::unique_ptr<client::VolumeWriter> writer;
  std::uint64_t first_projections = 0, last_projections = 0;
  for (std::uint32_t first = 0; first < size[2];) {
    request.set_first_plane(first);
    request.set_plane_count(std::min(planes, size[2] - first));
    const client::Response response = client.get_volume(request);
    if (chunk_too_large(response) && request.plane_count() > 1) {
      planes = std::max(1u, request.plane_count() / 2);  // the server's memory says less
      continue;
    }
    if (!reply_ok(response, "volume")) return kExitReplyError;
    const v1::VolumeChunkHeader& chunk = response.reply.volume_chunk();
    try {
      if (!writer) {
        writer = client::open_volume_writer(options.out, chunk);
        first_projections = chunk.projections_integrated();
      }
      writer->write_planes(static_cast<int>(first), static_cast<int>(chunk.plane_count()),
                           response.values);
    } catch (const client::ClientError& error) {
      std::cerr << "slicestream-ctl volume: " << error.what() << "\n";
      return kExitFileError;
    }
    last_projections = chunk.projections_integrated();
    first += chunk.plane_count();
    std::cerr << fmt::format("volume: {}/{} planes ({:.0f} %)\n", first, size[2],
                             100.0 * first / size[2]);
  }
  try {
    writer->finish();
  } catch (const client::ClientError& error) {
    std::cerr << "slicestream-ctl volume: " << error.what() << "\n";
    return kExitFileError;
  }
  std::cout << fmt::format("wrote {}: {} x {} x {} voxels of {:g} x {:g} x {:g} mm, ",
                           writer->describe(), size[0], size[1], size[2],
                           (request.box().max_mm().x() - request.box().min_mm().x()) / size[0],
                           (request.box().max_mm().y() - request.box().min_mm().y()) / size[1],
                           (request.box().max_mm().z() - request.box().min_mm().z()) / size[2]);
  if (first_projections == last_projections) {
    std::cout << fmt::format("from {} projections\n", last_projections);
  } else {
    std::cout << fmt::format(
        "from {} to {} projections (the scan went on while it was saved: "
        "later planes hold a later window)\n",
        first_projections, last_projections);
  }
  return kExitOk;
}

}  // namespace

void add_volume_command(CLI::App& app, const CtlContext& context, int* status) {
  auto options = std::make_shared<VolumeOptions>();
  CLI::App* command = app.add_subcommand(
      "volume",
      "reconstruct the scan's box (or --box) from the current window and save it as HDF5 "
      "(.h5/.hdf5: dataset /volume [z][y][x]) or a TIFF stack (any other path: a folder), chunk "
      "by chunk (GetVolume)");
  command->add_option("--out", options->out, "the .h5 / .hdf5 file, or the TIFF stack's folder")
      ->required();
  CLI::Option* size = command->add_option("--size", options->size, "NX,NY,NZ voxels");
  CLI::Option* voxel = command
                           ->add_option("--voxel", options->voxel_mm,
                                        "voxel edge in mm (the box divided into cubes)")
                           ->check(cli::positive());
  size->excludes(voxel);
  voxel->excludes(size);
  command->add_option("--box", options->box, "x0,y0,z0,x1,y1,z1 in mm (default: the scan's box)");
  command
      ->add_option("--chunk-mb", options->chunk_mb,
                   "at most this many MiB per GetVolume (the server may ask for less)")
      ->check(cli::positive())
      ->capture_default_str();
  command->callback([&context, options, size, voxel, status] {
    if (size->count() == 0 && voxel->count() == 0) {
      throw CLI::ValidationError("volume", "give --size NX,NY,NZ or --voxel MM");
    }
    *status = guarded("volume", [&] { return save_volume(context, *options); });
  });
}

}  // namespace slicestream::ctl

// Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/): valid messages of every
// kind, built with the same builders as the server tests, in the layout the targets read
// (fuzz_parts.hpp). Run by scripts/fuzz --reseed; the seeds are committed, so this is only needed
// when the protocol grows.
//   fuzz_seed_writer CORPUS_DIR
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "fuzz/fuzz_parts.hpp"
#include "server/tomop/tomop_codec.hpp"
#include "slicestream.pb.h"
#include "tests/server/wire_builders.hpp"

namespace {

using namespace slicestream;
namespace fs = std::filesystem;

void write(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

std::string frame_message(const v1::Frame& frame, std::size_t payload_bytes) {
  return fuzz::join_parts({test::header_bytes(frame), std::string(payload_bytes, '\x01')});
}

void data_seeds(const fs::path& dir) {
  test::Random random;
  random.engine.seed(1);
  const test::GeometryKind kinds[] = {test::GeometryKind::kParallel, test::GeometryKind::kCone,
                                      test::GeometryKind::kVectors};
  const char* names[] = {"scan_begin_parallel", "scan_begin_cone", "scan_begin_vectors"};
  for (int i = 0; i < 3; ++i) {
    write(dir, names[i],
          fuzz::join_parts({test::header_bytes(test::random_scan_begin(random, kinds[i], 4))}));
  }
  write(dir, "frame_uint16", frame_message(test::frame_header(7, 4, 6), 4 * 6 * 2));
  v1::Frame by_angle = test::frame_header(7, 3, 5, v1::PIXEL_TYPE_FLOAT32);
  by_angle.set_angle_rad(0.25);
  write(dir, "frame_float32_angle", frame_message(by_angle, 3 * 5 * 4));
  v1::Frame dark = test::frame_header(7, 2, 2, v1::PIXEL_TYPE_UINT32, v1::FRAME_KIND_DARK, 1);
  dark.set_position(3);
  write(dir, "frame_dark_uint32", frame_message(dark, 2 * 2 * 4));
  v1::DataHeader end;
  end.set_protocol_version(1);
  end.mutable_scan_end()->set_scan_id(7);
  end.mutable_scan_end()->set_frames_sent(12);
  write(dir, "scan_end", fuzz::join_parts({end.SerializeAsString()}));
}

void request_seeds(const fs::path& dir) {
  const float orientation[9] = {10, 0, 0, 0, 10, 0, -5, -5, 0};
  auto request = [](std::uint64_t id) {
    v1::Request r;
    r.set_protocol_version(1);
    r.set_request_id(id);
    return r;
  };
  v1::Request set_slice = request(1);
  set_slice.mutable_set_slice()->set_slice_id(2);
  set_slice.mutable_set_slice()->set_width(64);
  set_slice.mutable_set_slice()->set_height(32);
  for (float v : orientation)
    set_slice.mutable_set_slice()->mutable_orientation()->add_values(v);
  write(dir, "set_slice", set_slice.SerializeAsString());
  v1::Request get_slice = request(2);
  get_slice.mutable_get_slice()->set_width(16);
  get_slice.mutable_get_slice()->set_height(16);
  for (float v : orientation)
    get_slice.mutable_get_slice()->mutable_orientation()->add_values(v);
  write(dir, "get_slice", get_slice.SerializeAsString());
  v1::Request remove = request(3);
  remove.mutable_remove_slice()->set_slice_id(2);
  write(dir, "remove_slice", remove.SerializeAsString());
  v1::Request status = request(4);
  status.mutable_get_status();
  write(dir, "get_status", status.SerializeAsString());
  v1::Request parameters = request(5);
  parameters.mutable_set_parameters()->set_filter(v1::FILTER_WINDOW_HANN);
  parameters.mutable_set_parameters()->set_filter_cutoff(0.5F);
  parameters.mutable_set_parameters()->set_window_mode(v1::WINDOW_MODE_PER_ROTATION);
  parameters.mutable_set_parameters()->set_rotation_axis_offset_px(1.5);
  parameters.mutable_set_parameters()->set_publish_rate_hz(10);
  parameters.mutable_set_parameters()->set_preview_interval_s(0.5);
  write(dir, "set_parameters", parameters.SerializeAsString());
  v1::Request refinement = request(6);
  refinement.mutable_set_refinement()->set_slice_id(2);
  refinement.mutable_set_refinement()->set_enabled(true);
  refinement.mutable_set_refinement()->set_iterations(10);
  refinement.mutable_set_refinement()->set_interval_s(1);
  write(dir, "set_refinement", refinement.SerializeAsString());
  v1::Request capture = request(7);
  capture.mutable_set_capture()->set_enabled(true);
  capture.mutable_set_capture()->set_label("beamtime-3.a_b");
  write(dir, "set_capture", capture.SerializeAsString());
}

std::string packet_bytes(const tomop::Packet& packet) {
  const std::vector<std::byte> bytes = tomop::encode(packet);
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void tomop_seeds(const fs::path& dir) {
  const std::vector<float> angles = {0.0F, 0.8F, 1.6F, 2.4F};
  const std::vector<float> pixels(3 * 4, 0.5F);
  tomop::ScanSettings settings;
  settings.darks = 1;
  settings.flats = 1;
  tomop::GeometrySpecification box;
  box.volume_min_point = {-2, -2, -2};
  box.volume_max_point = {2, 2, 2};
  tomop::ParallelBeamGeometry parallel;
  parallel.rows = 3;
  parallel.cols = 4;
  parallel.proj_count = 4;
  parallel.angles = tomop::FloatView::of(angles);
  tomop::ConeBeamGeometry cone;
  cone.rows = 3;
  cone.cols = 4;
  cone.proj_count = 4;
  cone.source_origin = 50;
  cone.origin_det = 20;
  cone.detector_size = {1, 1};
  cone.angles = tomop::FloatView::of(angles);
  auto projection = [&](std::int32_t type, std::int32_t id) {
    tomop::Projection p;
    p.type = type;
    p.projection_id = id;
    p.shape = {3, 4};
    p.data = tomop::FloatView::of(pixels);
    return packet_bytes(p);
  };
  write(dir, "parallel_scan",
        fuzz::join_parts({packet_bytes(settings), packet_bytes(box), packet_bytes(parallel),
                          projection(tomop::Projection::kDark, 0)}));
  write(dir, "cone_scan",
        fuzz::join_parts({packet_bytes(box), packet_bytes(cone),
                          projection(tomop::Projection::kFlat, 0),
                          projection(tomop::Projection::kStandard, 5)}));
  tomop::ParameterFloat offset;
  offset.parameter_name = "rotation axis offset (px)";
  offset.value = 1.5F;
  tomop::SetSlice slice;
  slice.orientation = {1, 0, 0, 0, 1, 0, -0.5F, -0.5F, 0};
  write(dir, "controls", fuzz::join_parts({packet_bytes(offset), packet_bytes(slice)}));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_seed_writer CORPUS_DIR\n";
    return 2;
  }
  const fs::path root = argv[1];
  data_seeds(root / "data_message");
  request_seeds(root / "request");
  tomop_seeds(root / "tomop");
  std::cout << "seeds written under " << root << "\n";
  return 0;
}

// Capture on demand, without sockets: the pre-trigger buffer's bounds, the DXchange file the
// writer makes read back by the detector's replayer (pixels, angles, placements, the ScanBegin),
// and the recorder's bounded queue: frames it cannot take are counted, in the status and in the
// file, and the recorder never waits for the disk.
#include <gtest/gtest.h>

#include <hdf5.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "capture_test_support.hpp"
#include "clients/detector/capture_replay_source.hpp"
#include "clients/detector/dxchange_file.hpp"
#include "hdf5/hdf5_handle.hpp"
#include "server/capture/capture_recorder.hpp"
#include "server/capture/dxchange_writer.hpp"
#include "server/capture/pretrigger_ring.hpp"

namespace slicestream {
namespace {

using detector::CaptureReplaySource;
using detector::DxchangeFile;
using detector::PixelBuffer;
using test::CaptureDir;
using test::RandomScan;

bool same_pixels(DxchangeFile& file, FrameKind kind, std::size_t index, const RawFrame& frame) {
  PixelBuffer read(PixelType::kUint16, frame.shape);
  file.read(kind, index, read);
  return read.bytes.size() == frame.payload_bytes &&
         std::memcmp(read.bytes.data(), frame.payload.get(), frame.payload_bytes) == 0;
}

std::uint64_t read_attribute(const std::string& path, const char* name) {
  const hdf5::Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  const hdf5::Handle group(H5Gopen2(file.get(), "slicestream", H5P_DEFAULT), H5Gclose);
  const hdf5::Handle attribute(H5Aopen(group.get(), name, H5P_DEFAULT), H5Aclose);
  std::uint64_t value = ~std::uint64_t{0};
  H5Aread(attribute.get(), H5T_NATIVE_UINT64, &value);
  return value;
}

TEST(PretriggerRing, KeepsTheCalibrationAndTheNewestProjectionsWithinItsBytes) {
  RandomScan scan(5, 4, 8, 6, 1, 1);  // 64 bytes per frame
  PretriggerRing ring(64 * 5);
  ring.push(scan.frame(FrameKind::kDark, 0));
  ring.push(scan.frame(FrameKind::kFlat, 0));
  for (std::uint32_t i = 0; i < 10; ++i)
    ring.push(scan.frame(FrameKind::kProjection, i));
  EXPECT_EQ(ring.bytes(), 64u * 5);
  EXPECT_EQ(ring.evicted(), 7u);
  const std::vector<RawFrame> frames = ring.take();
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_EQ(frames[0].kind, FrameKind::kDark);
  EXPECT_EQ(frames[1].kind, FrameKind::kFlat);
  for (std::size_t i = 2; i < 5; ++i)
    EXPECT_EQ(frames[i].index, 7 + (i - 2));
  // The calibration stays for a later capture of the same scan; the projections were handed over.
  EXPECT_EQ(ring.bytes(), 64u * 2);
  // Nothing fits beside calibration that fills the budget: refused, counted, never evicted.
  PretriggerRing small(64);
  small.push(scan.frame(FrameKind::kDark, 0));
  small.push(scan.frame(FrameKind::kFlat, 0));
  EXPECT_EQ(small.refused(), 1u);
  EXPECT_EQ(small.bytes(), 64u);
}

TEST(DxchangeWriter, WritesWhatTheReplayerReadsBack) {
  CaptureDir dir;
  std::filesystem::create_directories(dir.str());
  const std::string path = dir.str() + "/scan.h5";
  RandomScan scan(9, 6, 10, 4, 2, 1);
  std::vector<RawFrame> darks, flats, projections;
  {
    DxchangeWriter writer(path, scan.header_bytes());
    for (std::uint32_t i = 0; i < 2; ++i)
      darks.push_back(scan.frame(FrameKind::kDark, i));
    flats.push_back(scan.frame(FrameKind::kFlat, 0));
    for (std::uint32_t i = 0; i < 6; ++i) {
      RawFrame frame = scan.frame(FrameKind::kProjection, i);
      if (i == 5)
        frame.angle_rad = 0.3;  // placed by angle
      else
        frame.position = (i + 1) % 4;  // placed by slot, not in index order
      projections.push_back(frame);
    }
    for (const auto* frames : {&darks, &flats, &projections}) {
      for (const RawFrame& frame : *frames)
        EXPECT_TRUE(writer.append(frame));
    }
    RandomScan other(10, 6, 10, 4, 0, 0);
    EXPECT_FALSE(writer.append(other.frame(FrameKind::kProjection, 0)));  // another scan
    EXPECT_EQ(writer.frames_skipped(), 1u);
    writer.finish({true, 0, "scan_end"});
  }
  EXPECT_EQ(read_attribute(path, "frames_dropped"), 0u);

  auto file = std::make_unique<DxchangeFile>(path);
  ASSERT_EQ(file->count(FrameKind::kDark), 2u);
  ASSERT_EQ(file->count(FrameKind::kFlat), 1u);
  ASSERT_EQ(file->count(FrameKind::kProjection), 6u);
  EXPECT_EQ(file->pixel_type(), PixelType::kUint16);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_TRUE(same_pixels(*file, FrameKind::kDark, i, darks[i]));
  EXPECT_TRUE(same_pixels(*file, FrameKind::kFlat, 0, flats[0]));
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_TRUE(same_pixels(*file, FrameKind::kProjection, i, projections[i])) << i;
  }
  const std::vector<double> theta = file->angles_deg().value();
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_NEAR(theta[i], scan.begin.parallel().angles_rad((i + 1) % 4) * 180 / M_PI, 1e-9);
  }
  EXPECT_NEAR(theta[5], 0.3 * 180 / M_PI, 1e-9);

  ASSERT_TRUE(CaptureReplaySource::is_capture(*file));
  CaptureReplaySource replay(std::move(file), "");
  v1::ScanBegin expected = scan.begin;
  expected.set_scan_id(0);
  EXPECT_EQ(replay.scan_begin().SerializeAsString(), expected.SerializeAsString());
  EXPECT_EQ(replay.sequence().total(), 9u);
  for (std::uint64_t i = 0; i < 6; ++i) {
    const detector::OutgoingFrame frame = replay.render(3 + i);
    ASSERT_EQ(frame.kind, FrameKind::kProjection);
    if (i == 5) {
      EXPECT_EQ(frame.angle_rad, 0.3);
    } else {
      EXPECT_FALSE(frame.angle_rad);
      EXPECT_EQ(frame.position, (i + 1) % 4);
    }
    EXPECT_EQ(std::memcmp(frame.pixels->bytes.data(), projections[i].payload.get(),
                          projections[i].payload_bytes),
              0);
  }
}

TEST(CaptureRecorder, AStartMidScanWritesThePretriggerFramesFirst) {
  CaptureDir dir;
  RandomScan scan(21, 4, 8, 8, 1, 1);  // 64 bytes per frame
  CaptureConfig config;
  config.directory = dir.str();
  config.pretrigger_bytes = 64 * 6;  // the dark, the flat and 4 projections
  std::vector<RawFrame> projections;
  {
    CaptureRecorder recorder(config);
    EXPECT_EQ(recorder.status().state(), "idle");
    recorder.observe_scan_begin(21, scan.header_bytes());
    const RawFrame dark = scan.frame(FrameKind::kDark, 0);
    const RawFrame flat = scan.frame(FrameKind::kFlat, 0);
    recorder.observe_frame(dark);
    recorder.observe_frame(flat);
    for (std::uint32_t i = 0; i < 13; ++i) {
      if (i == 10) {
        const CaptureReply reply = recorder.start("before-the-crack");
        EXPECT_TRUE(reply.status.ok()) << reply.status.message;
        EXPECT_EQ(reply.capture.state(), "recording");
        EXPECT_NE(reply.capture.file().find("before-the-crack"), std::string::npos);
      }
      projections.push_back(scan.frame(FrameKind::kProjection, i));
      recorder.observe_frame(projections.back());
    }
    recorder.observe_scan_end(21);
    recorder.shutdown();
    const v1::CaptureStatus status = recorder.status();
    EXPECT_EQ(status.files(), 1u);
    EXPECT_EQ(status.frames_written(), 2u + 4u + 3u);
    EXPECT_EQ(status.frames_dropped(), 0u);
    EXPECT_EQ(status.pretrigger_evicted(), 6u);
  }
  const std::vector<std::string> files = dir.files();
  ASSERT_EQ(files.size(), 1u);
  DxchangeFile file(files[0]);
  EXPECT_EQ(file.count(FrameKind::kDark), 1u);
  EXPECT_EQ(file.count(FrameKind::kFlat), 1u);
  ASSERT_EQ(file.count(FrameKind::kProjection), 7u);
  for (std::size_t i = 0; i < 7; ++i) {
    EXPECT_TRUE(same_pixels(file, FrameKind::kProjection, i, projections[6 + i])) << i;
  }
  EXPECT_EQ(file.read_numbers("/slicestream/projection_index").value().front(), 6.0);
  EXPECT_EQ(read_attribute(files[0], "frames_dropped"), 0u);
}

// A queue too small for any frame: everything after the start is dropped from the capture, and
// every drop is counted: in the status and in the file (which is then not complete).
TEST(CaptureRecorder, FramesTheQueueCannotTakeAreCountedNotWaitedFor) {
  CaptureDir dir;
  RandomScan scan(33, 8, 8, 4, 0, 0);  // 128 bytes per frame
  CaptureConfig config;
  config.directory = dir.str();
  config.every_scan = true;
  config.queue_bytes = 127;
  {
    CaptureRecorder recorder(config);
    EXPECT_EQ(recorder.status().state(), "waiting_for_scan");
    recorder.observe_scan_begin(33, scan.header_bytes());
    for (std::uint32_t i = 0; i < 50; ++i) {
      EXPECT_FALSE(recorder.observe_frame(scan.frame(FrameKind::kProjection, i)));
    }
    recorder.observe_scan_end(33);
    recorder.shutdown();
    EXPECT_EQ(recorder.status().frames_dropped(), 50u);
    EXPECT_EQ(recorder.status().frames_written(), 0u);
  }
  const std::vector<std::string> files = dir.files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(read_attribute(files[0], "frames_dropped"), 50u);

  // A queue of one frame: whatever the writer's pace, every frame is written or counted.
  CaptureDir second;
  config.directory = second.str();
  config.queue_bytes = 128;
  CaptureRecorder recorder(config);
  recorder.observe_scan_begin(33, scan.header_bytes());
  for (std::uint32_t i = 0; i < 500; ++i) {
    recorder.observe_frame(scan.frame(FrameKind::kProjection, i));
  }
  recorder.observe_scan_end(33);
  recorder.shutdown();
  const v1::CaptureStatus status = recorder.status();
  EXPECT_EQ(status.frames_written() + status.frames_dropped(), 500u);
  EXPECT_EQ(DxchangeFile(second.files().at(0)).count(FrameKind::kProjection),
            status.frames_written());
}

TEST(CaptureRecorder, EveryScanGetsItsOwnFileAndStopEndsTheRecording) {
  CaptureDir dir;
  CaptureConfig config;
  config.directory = dir.str();
  CaptureRecorder recorder(config);
  EXPECT_EQ(recorder.start("").capture.state(), "waiting_for_scan");
  for (std::uint64_t id : {41, 42}) {
    RandomScan scan(id, 4, 4, 2, 0, 0);
    recorder.observe_scan_begin(id, scan.header_bytes());
    recorder.observe_frame(scan.frame(FrameKind::kProjection, 0));
    recorder.observe_scan_end(id);
  }
  const CaptureReply stopped = recorder.stop();
  EXPECT_EQ(stopped.capture.state(), "idle");
  RandomScan after(43, 4, 4, 2, 0, 0);
  recorder.observe_scan_begin(43, after.header_bytes());
  recorder.observe_frame(after.frame(FrameKind::kProjection, 0));
  recorder.shutdown();
  EXPECT_EQ(recorder.status().files(), 2u);
  EXPECT_EQ(recorder.status().frames_written(), 2u);
  EXPECT_EQ(dir.files().size(), 2u);
}

TEST(CaptureRecorder, ADirectoryThatCannotBeWrittenIsAnErrorAtStart) {
  CaptureConfig config;
  config.directory = "/proc/slicestream-capture";
  EXPECT_THROW(CaptureRecorder recorder(config), std::runtime_error);
}

}  // namespace
}  // namespace slicestream

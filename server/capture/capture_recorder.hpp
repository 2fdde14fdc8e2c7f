// Capture on demand: records the frames of scans as received (ScanBegin, darks, flats,
// projections) into DXchange HDF5 files (DxchangeWriter) on a writer thread of its own, so
// reconstruction never waits for the disk. The data endpoint hands every decoded message over
// (observe_*: a short lock, no I/O, never blocks); the requests endpoint starts and stops it
// (SetCapture) and reads its status; --capture records every scan from its start.
//
// Bounded memory: the pre-trigger buffer (PretriggerRing, --capture-pretrigger-bytes) and the
// writer queue (--capture-queue-bytes, pixel bytes). A frame the queue cannot take is dropped from
// the capture, counted (status, the file's frames_dropped attribute, the data endpoint's log) and
// still reconstructed.
// Frames share their payload with the transport: capturing copies no pixels until the writer
// writes them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "pipeline/messages/command.hpp"
#include "pipeline/messages/data_message.hpp"
#include "server/capture/capture_config.hpp"
#include "server/capture/dxchange_writer.hpp"
#include "server/capture/pretrigger_ring.hpp"
#include "slicestream.pb.h"

namespace slicestream {

struct CaptureReply {
  Status status;
  v1::CaptureStatus capture;
};

class CaptureRecorder {
 public:
  // Creates the directory if needed; throws std::runtime_error when it cannot be written.
  explicit CaptureRecorder(CaptureConfig config);
  ~CaptureRecorder();  // shutdown()
  CaptureRecorder(const CaptureRecorder&) = delete;
  CaptureRecorder& operator=(const CaptureRecorder&) = delete;

  // The data endpoint's thread. `data_header`: the ScanBegin's DataHeader bytes as received.
  void observe_scan_begin(std::uint64_t scan_id, std::string data_header);
  // False when the frame belongs in a capture but the writer queue could not take it: it is not
  // captured (counted here; the caller logs it, throttled).
  bool observe_frame(const RawFrame& frame);
  void observe_scan_end(std::uint64_t scan_id);

  // SetCapture. Start: records the current scan (the pre-trigger frames first) or, without one,
  // from the next ScanBegin, until stopped; every scan gets its own file.
  CaptureReply start(const std::string& label);
  CaptureReply stop();
  v1::CaptureStatus status() const;

  // After the data endpoint stopped: closes the file being written ("shutdown"), writes what is
  // queued and ends the writer thread. Idempotent.
  void shutdown();

 private:
  struct Item {
    enum class Kind { kOpen, kFrame, kClose } kind = Kind::kFrame;
    std::string path;         // kOpen
    std::string data_header;  // kOpen
    RawFrame frame;           // kFrame
    CaptureSummary summary;   // kClose
  };
  struct Scan {
    std::uint64_t id = 0;
    std::string data_header;
  };

  void open_file_locked();
  void close_file_locked(const char* reason, bool scan_ended);
  bool enqueue_frame_locked(RawFrame frame, bool bounded);
  std::string next_path_locked() const;
  v1::CaptureStatus status_locked() const;
  void run_writer();
  void write(Item& item);

  CaptureConfig config_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Item> queue_;
  std::size_t queued_bytes_ = 0;
  PretriggerRing pretrigger_;
  std::optional<Scan> scan_;
  bool recording_ = false;  // requested: records the current and the next scans
  bool file_open_ = false;  // an open is queued for the current scan
  std::string label_;
  std::string file_;  // the file being written, else the last one
  std::uint64_t dropped_in_file_ = 0;
  bool stopping_ = false;

  // Written by the writer thread, read under mutex_.
  std::uint64_t files_ = 0;
  std::uint64_t frames_written_ = 0;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t frames_dropped_ = 0;
  std::uint64_t frames_skipped_ = 0;
  std::uint64_t write_errors_ = 0;
  std::string last_error_;

  std::unique_ptr<DxchangeWriter> writer_;  // writer thread only
  std::thread thread_;
};

}  // namespace slicestream

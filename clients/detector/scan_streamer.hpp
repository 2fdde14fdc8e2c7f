// Sends a FrameSource to the server's data endpoint: ScanBegin, every frame at the scheduled rate
// (rendered ahead on worker threads), ScanEnd with the number of projections sent.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>

#include "clients/common/client_security.hpp"
#include "clients/common/scan_confirmation.hpp"
#include "clients/detector/frame_scheduler.hpp"
#include "clients/detector/frame_source.hpp"
#include "clients/detector/stream_progress.hpp"

namespace slicestream::detector {

struct StreamOptions {
  std::string endpoint = "tcp://127.0.0.1:5570";
  std::uint64_t scan_id = 1;
  double fps = 0;               // 0: as fast as the server accepts
  int send_hwm = 0;             // frames queued in ZeroMQ before a send blocks; 0: by frame size
  std::uint64_t lookahead = 0;  // frames rendered ahead; 0: by frame size and threads
  bool progress = true;
  bool interactive_progress = false;  // '\r' redraws (a terminal) instead of periodic lines
  int linger_ms = 10000;              // at the end, how long queued frames may take to leave
  // After ScanEnd, stay connected until the server confirms through this requests endpoint that
  // it has the whole scan (client::ScanConfirmer); empty: close at once (--no-confirm).
  std::string requests_endpoint;
  double confirm_timeout_s = 30;    // give up when the server makes no progress for this long
  client::ClientSecurity security;  // CURVE keys for both connections (plain by default)
};

// Frames queued in ZeroMQ (the send high-water mark) and rendered ahead, so that both stay
// within a few hundred MB whatever the frame size.
int default_send_hwm(std::size_t frame_bytes);
std::uint64_t default_lookahead(std::size_t frame_bytes, int workers);

// Asks options.requests_endpoint for the server's status (the baseline of the confirmation of
// scan options.scan_id), waiting at most min(confirm_timeout_s, 10 s). Throws std::runtime_error
// saying what to do when the server does not answer: a server that does not answer could not
// confirm the scan either, and this tells the user before anything is sent.
std::unique_ptr<client::ScanConfirmer> connect_confirmation(const StreamOptions& options);

// Streams the whole scan (or until `stop` is set: then ScanEnd reports what was sent). Progress
// goes to `progress_out`. With a confirmer (from connect_confirmation, before the ScanBegin; one
// is connected here when it is null and options.requests_endpoint is set), the data connection
// stays open after the ScanEnd until the server confirms the scan; summary.confirmed says whether
// it did. Throws std::runtime_error when an endpoint is unusable or the source fails (after
// sending ScanEnd for what was sent, so the server closes the scan).
StreamSummary stream_scan(FrameSource& source, const StreamOptions& options, Clock& clock,
                          const std::atomic<bool>& stop, std::ostream& progress_out,
                          client::ScanConfirmer* confirmer = nullptr);

}  // namespace slicestream::detector

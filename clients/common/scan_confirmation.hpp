// Confirms, through the server's requests endpoint, that the server has read a whole scan from the
// data endpoint, so that a sender knows when it may disconnect.
//
// A sender must stay connected until then: over ipc:// libzmq drops what is still in the socket
// when the sender disconnects while the server pushes back (its PULL pipe full;
// zeromq/libzmq#4660), so the end of the scan, its last frames and the ScanEnd, would be lost and
// the scan never end. ZeroMQ's linger does not help: it only waits until the data is in the kernel.
//
// The confirmation reuses GetStatus (no extra protocol): the StatusReport's recent_scans hold a
// record of each recent scan (frames accepted and integrated, messages refused, how it ended).
// begin() takes a baseline before the ScanBegin; the scan's record is the one with its id that
// started after the baseline (so that a reused scan id cannot confirm an older scan). The scan is
// confirmed once its record says it ended by its ScanEnd with at least as many frames accepted as
// were sent; a record that says another scan's ScanBegin ended it is "superseded" at once, with
// the scan's own counts. The server handles a ScanEnd after every frame before it on the same
// connection, so by then it has read everything. A server without recent_scans is judged by its
// current scan and its counters since the baseline.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "clients/common/request_client.hpp"

namespace slicestream::client {

// Where the server stands, from one GetStatus: with `own_record`, the counts are the scan's own
// (its record in recent_scans); without, counted from the baseline.
struct ScanProgress {
  std::uint64_t server_scan_id = 0;   // the server's current (or last) scan
  std::string scan_state;             // "idle", "calibrating", "reconstructing", "ended"
  std::uint64_t frames_accepted = 0;  // darks, flats and projections
  std::uint64_t projections_integrated = 0;
  std::uint64_t scans_started = 0;
  std::map<std::string, std::uint64_t> discards;  // by reason, only those that grew
  bool own_record = false;                        // the server has a record of this scan
  bool ended = false;  // own_record: the scan has ended and its counts are final (reconstructed)
  std::string end_reason;  // own_record: "scan_end" or "superseded"
  std::uint64_t superseded_by = 0;

  bool operator==(const ScanProgress& other) const;
  bool operator!=(const ScanProgress& other) const { return !(*this == other); }
};

enum class ScanOutcome {
  kConfirmed,    // the server ended the scan and accepted every frame sent
  kIncomplete,   // the server ended the scan but accepted fewer frames (see discards)
  kSuperseded,   // the server moved on to another scan before this one's end
  kTimedOut,     // no confirmation, and no progress for the stall timeout (or the maximum wait)
  kInterrupted,  // `stop` was set
};
const char* to_string(ScanOutcome outcome);

struct ScanConfirmation {
  ScanOutcome outcome = ScanOutcome::kTimedOut;
  ScanProgress progress;  // the last status received
  bool answered = false;  // whether any GetStatus was answered while waiting
  double seconds = 0;     // spent waiting
  std::string message;    // one line for people: what the server confirmed, or why not
  bool confirmed() const { return outcome == ScanOutcome::kConfirmed; }
};

struct ConfirmWait {
  int stall_timeout_ms = 30000;  // give up after this long without progress (or without answer)
  int max_wait_ms = 0;           // > 0: give up after this long in any case
  const std::atomic<bool>* stop = nullptr;
  // After every poll: the status (answered or not) and the seconds waited so far.
  std::function<void(const ScanProgress&, bool answered, double seconds)> on_poll;
};

class ScanConfirmer {
 public:
  // Throws ClientError for an endpoint ZeroMQ cannot connect to.
  explicit ScanConfirmer(std::string requests_endpoint, ClientSecurity security = {});

  // Before the ScanBegin of `scan_id`: takes the baseline. Throws TimeoutError when the server
  // does not answer within `timeout_ms`, ClientError when it answers with an error.
  void begin(std::uint64_t scan_id, int timeout_ms);

  // After the ScanEnd, while the data connection is still open: polls GetStatus until the server
  // confirms the scan with `frames_sent` frames (darks, flats and projections) or `wait` says to
  // give up. Never throws for what the server does or does not answer.
  ScanConfirmation wait(std::uint64_t frames_sent, const ConfirmWait& wait);

  const std::string& endpoint() const { return client_.endpoint(); }

 private:
  ScanProgress progress_of(const v1::StatusReport& status) const;

  RequestClient client_;
  std::uint64_t scan_id_ = 0;
  bool begun_ = false;
  v1::StatusReport baseline_;
};

// "invalid_scan 1, scan_rejected 2000" ("none" when empty).
std::string describe_discards(const std::map<std::string, std::uint64_t>& discards);

}  // namespace slicestream::client

// Confirms, through the server's requests endpoint, that the server has read a whole scan from the
// data endpoint, so that a sender knows when it may disconnect.
//
// A sender must stay connected until then: over ipc:// libzmq drops what is still in the socket
// when the sender disconnects while the server pushes back (its PULL pipe full;
// zeromq/libzmq#4660), so the end of the scan, its last frames and the ScanEnd, would be lost and
// the scan never end. ZeroMQ's linger does not help: it only waits until the data is in the kernel.
//
// The confirmation reuses GetStatus (no extra protocol): the StatusReport names the server's
// current scan and its state, and its counters count frames accepted since the server started.
// begin() takes a baseline before the ScanBegin; the scan is confirmed once the server reports it
// as its scan in state "ended" after having started a scan since the baseline (so that a reused
// scan id cannot confirm an older scan), with at least as many frames accepted since the baseline
// as were sent. The server handles a ScanEnd after every frame before it on the same connection,
// so by then it has read everything.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "clients/common/request_client.hpp"

namespace slicestream::client {

// Where the server stands, from one GetStatus, counted from the baseline.
struct ScanProgress {
  std::uint64_t server_scan_id = 0;   // the server's current (or last) scan
  std::string scan_state;             // "idle", "calibrating", "reconstructing", "ended"
  std::uint64_t frames_accepted = 0;  // darks, flats and projections
  std::uint64_t projections_integrated = 0;
  std::uint64_t scans_started = 0;
  std::map<std::string, std::uint64_t> discards;  // by reason, only those that grew

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

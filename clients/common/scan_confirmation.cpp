#include "clients/common/scan_confirmation.hpp"
#include "wire/wire_text.hpp"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>
#include <utility>

namespace slicestream::client {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kFirstPollGapMs = 2;  // grows to kMaxPollGapMs: quick for a short backlog
constexpr int kMaxPollGapMs = 50;

std::uint64_t counter(const v1::StatusReport& status, const std::string& name) {
  const auto it = status.counters().find(name);
  return it == status.counters().end() ? 0 : it->second;
}

// Growth since the baseline; a counter below its baseline means a restarted server, whose
// counters all count from our scan on.
std::uint64_t since(std::uint64_t now, std::uint64_t baseline) {
  return now >= baseline ? now - baseline : now;
}

// "0.8 ms", "35 ms", "1.25 s", "31.2 s".
std::string format_seconds(double seconds) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  if (seconds < 1) {
    const double ms = seconds * 1000;
    out.precision(ms < 10 ? 1 : 0);
    out << ms << " ms";
  } else {
    out.precision(seconds < 10 ? 2 : 1);
    out << seconds << " s";
  }
  return out.str();
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

bool ScanProgress::operator==(const ScanProgress& other) const {
  return server_scan_id == other.server_scan_id && scan_state == other.scan_state &&
         frames_accepted == other.frames_accepted &&
         projections_integrated == other.projections_integrated &&
         scans_started == other.scans_started && discards == other.discards &&
         own_record == other.own_record && ended == other.ended;
}

const char* to_string(ScanOutcome outcome) {
  switch (outcome) {
    case ScanOutcome::kConfirmed:
      return "confirmed";
    case ScanOutcome::kIncomplete:
      return "incomplete";
    case ScanOutcome::kSuperseded:
      return "superseded";
    case ScanOutcome::kTimedOut:
      return "timed out";
    case ScanOutcome::kInterrupted:
      return "interrupted";
  }
  return "unknown";
}

std::string describe_discards(const std::map<std::string, std::uint64_t>& discards) {
  if (discards.empty()) return "none";
  std::ostringstream out;
  bool first = true;
  for (const auto& [reason, count] : discards) {
    out << (first ? "" : ", ") << reason << " " << count;
    first = false;
  }
  return out.str();
}

ScanConfirmer::ScanConfirmer(std::string requests_endpoint, ClientSecurity security)
    : client_(std::move(requests_endpoint), 5000, std::move(security)) {}

void ScanConfirmer::begin(std::uint64_t scan_id, int timeout_ms) {
  client_.set_timeout_ms(std::max(1, timeout_ms));
  const Response response = client_.get_status();
  if (!response.ok() || !response.reply.has_status()) {
    throw ClientError("the server at " + endpoint() +
                      " refused GetStatus: " + v1::StatusCode_Name(response.reply.code()) + ": " +
                      escape_wire_text(response.reply.message()));
  }
  baseline_ = response.reply.status();
  scan_id_ = scan_id;
  begun_ = true;
}

ScanProgress ScanConfirmer::progress_of(const v1::StatusReport& status) const {
  ScanProgress p;
  p.server_scan_id = status.scan_id();
  p.scan_state = status.scan_state();
  p.scans_started = since(counter(status, "scans_started"), counter(baseline_, "scans_started"));
  const std::uint64_t baseline_number = counter(baseline_, "scans_started");
  for (const v1::ScanRecord& record : status.recent_scans()) {
    // The newest record of this id that started after the baseline.
    if (record.scan_id() != scan_id_ || record.number() <= baseline_number) continue;
    p.own_record = true;
    // Ended at the ingest, and through the reconstruct stage: the counts are final.
    p.ended = record.ended() && record.reconstructed();
    p.end_reason = record.end_reason();
    p.superseded_by = record.superseded_by();
    p.frames_accepted =
        record.darks_accepted() + record.flats_accepted() + record.projections_accepted();
    p.projections_integrated = record.projections_integrated();
    p.discards =
        std::map<std::string, std::uint64_t>(record.discards().begin(), record.discards().end());
  }
  if (p.own_record) return p;
  p.frames_accepted =
      since(counter(status, "frames_received"), counter(baseline_, "frames_received"));
  p.projections_integrated = since(counter(status, "projections_integrated"),
                                   counter(baseline_, "projections_integrated"));
  for (const auto& [reason, count] : status.discards()) {
    const auto it = baseline_.discards().find(reason);
    const std::uint64_t grown = since(count, it == baseline_.discards().end() ? 0 : it->second);
    if (grown > 0) p.discards[reason] = grown;
  }
  return p;
}

ScanConfirmation ScanConfirmer::wait(std::uint64_t frames_sent, const ConfirmWait& wait) {
  if (!begun_) throw ClientError("ScanConfirmer::wait without begin()");
  const Clock::time_point start = Clock::now();
  const auto stall = std::chrono::milliseconds(std::max(1, wait.stall_timeout_ms));
  const Clock::time_point hard_deadline = wait.max_wait_ms > 0
                                              ? start + std::chrono::milliseconds(wait.max_wait_ms)
                                              : Clock::time_point::max();
  Clock::time_point stall_deadline = start + stall;
  Clock::time_point last_change = start;
  ScanConfirmation result;
  bool seen_ours = false;
  std::string last_error;
  int gap_ms = kFirstPollGapMs;
  while (true) {
    if (wait.stop != nullptr && wait.stop->load()) {
      result.outcome = ScanOutcome::kInterrupted;
      break;
    }
    const Clock::time_point deadline = std::min(stall_deadline, hard_deadline);
    const Clock::time_point now = Clock::now();
    if (now >= deadline) {
      result.outcome = ScanOutcome::kTimedOut;
      break;
    }
    // One reply may take until the deadline: a busy server answers late rather than never.
    client_.set_timeout_ms(static_cast<int>(std::max<std::int64_t>(
        1, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count())));
    bool answered = false;
    try {
      const Response response = client_.get_status();
      if (response.ok() && response.reply.has_status()) {
        const ScanProgress progress = progress_of(response.reply.status());
        if (!result.answered || progress != result.progress) {
          last_change = Clock::now();
          stall_deadline = last_change + stall;
        }
        result.progress = progress;
        result.answered = answered = true;
      } else {
        last_error = v1::StatusCode_Name(response.reply.code()) + ": " +
                     escape_wire_text(response.reply.message());
      }
    } catch (const ClientError& error) {
      last_error = error.what();
    }
    result.seconds = seconds_between(start, Clock::now());
    if (answered && result.progress.own_record) {
      const ScanProgress& p = result.progress;
      seen_ours = true;
      if (p.ended && p.end_reason == "superseded") {
        result.outcome = ScanOutcome::kSuperseded;
        break;
      }
      if (p.ended) {
        result.outcome =
            p.frames_accepted >= frames_sent ? ScanOutcome::kConfirmed : ScanOutcome::kIncomplete;
        break;
      }
    } else if (answered) {
      const ScanProgress& p = result.progress;
      const bool ours = p.server_scan_id == scan_id_ && p.scans_started > 0;
      seen_ours = seen_ours || ours;
      if (ours && p.scan_state == "ended") {
        result.outcome =
            p.frames_accepted >= frames_sent ? ScanOutcome::kConfirmed : ScanOutcome::kIncomplete;
        break;
      }
      if (seen_ours && !ours) {
        result.outcome = ScanOutcome::kSuperseded;
        break;
      }
    }
    if (wait.on_poll) wait.on_poll(result.progress, answered, result.seconds);
    const Clock::time_point wake = std::min(Clock::now() + std::chrono::milliseconds(gap_ms),
                                            std::min(stall_deadline, hard_deadline));
    std::this_thread::sleep_until(wake);
    gap_ms = std::min(2 * gap_ms, kMaxPollGapMs);
  }
  result.seconds = seconds_between(start, Clock::now());

  const ScanProgress& p = result.progress;
  const std::string scan = "scan " + std::to_string(scan_id_);
  const std::string accepted =
      std::to_string(p.frames_accepted) + " of " + std::to_string(frames_sent) + " frames accepted";
  const std::string discards =
      (p.own_record ? "its messages refused: " : "discards since the scan began: ") +
      describe_discards(p.discards);
  std::ostringstream message;
  switch (result.outcome) {
    case ScanOutcome::kConfirmed:
      message << "the server ended " << scan << " with all " << frames_sent
              << " frames accepted and " << p.projections_integrated
              << " projections integrated (confirmed after " << format_seconds(result.seconds)
              << ")";
      if (!p.discards.empty()) message << "; " << discards;
      break;
    case ScanOutcome::kIncomplete:
      message << "the server ended " << scan << " but accepted only " << accepted << " ("
              << p.projections_integrated << " projections integrated); " << discards;
      break;
    case ScanOutcome::kSuperseded:
      if (p.own_record) {
        message << "the server ended " << scan << " when scan " << p.superseded_by
                << " began (superseded) with " << accepted << " and " << p.projections_integrated
                << " projections integrated; " << discards;
      } else {
        message << "the server moved on to scan " << p.server_scan_id
                << " before it confirmed the end of " << scan << " (" << accepted << "; "
                << discards << ")";
      }
      break;
    case ScanOutcome::kTimedOut:
      message << "no confirmation of the end of " << scan << " from the server at " << endpoint()
              << " after " << format_seconds(result.seconds);
      if (!result.answered) {
        message << ": it did not answer GetStatus";
      } else if (p.own_record) {
        message << " (" << format_seconds(seconds_between(last_change, Clock::now()))
                << " without progress): " << scan << " has not ended there (no ScanEnd read), "
                << accepted << ", " << p.projections_integrated << " projections integrated; "
                << discards;
      } else {
        message << " (" << format_seconds(seconds_between(last_change, Clock::now()))
                << " without progress): its scan is " << p.server_scan_id << " ("
                << (p.scan_state.empty() ? "no state" : p.scan_state) << "), " << accepted << ", "
                << p.projections_integrated << " projections integrated; " << discards;
        if (!seen_ours) message << "; " << scan << " never became the server's scan";
      }
      if (!last_error.empty()) message << "; last error: " << last_error;
      break;
    case ScanOutcome::kInterrupted:
      message << "interrupted before the server confirmed the end of " << scan << " (" << accepted
              << ")";
      break;
  }
  result.message = message.str();
  return result;
}

}  // namespace slicestream::client

// The client library's ScanConfirmer against a scripted requests endpoint: it confirms a scan only
// when the server reports that scan ended (started after the baseline) with every frame sent, and
// otherwise says why not: fewer frames, another scan, no progress, no answer, interrupted.
#include "clients/common/scan_confirmation.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <utility>

#include "tests/clients/common/fake_status_server.hpp"

namespace slicestream::client {
namespace {

using test::FakeStatusServer;
using test::status_of;

std::string endpoint(const std::string& name) {
  static std::atomic<int> counter{0};
  return "ipc:///tmp/slicestream-confirm-test-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++) + "-" + name;
}

ConfirmWait quick(int stall_ms = 300) {
  ConfirmWait wait;
  wait.stall_timeout_ms = stall_ms;
  return wait;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A confirmer of scan 7 against a scripted server; its baseline is the server's answer 0.
struct Scripted {
  explicit Scripted(FakeStatusServer::Answer answer)
      : requests(endpoint("requests")), server(requests, std::move(answer)), confirmer(requests) {
    confirmer.begin(7, 2000);
  }
  std::string requests;
  FakeStatusServer server;
  ScanConfirmer confirmer;
};

TEST(ScanConfirmer, ConfirmsWhenTheServerEndsTheScanWithEveryFrame) {
  // Baseline: an older scan ended; then scan 7 runs and ends with 20 more frames accepted.
  Scripted scripted([](int call) {
    if (call == 0) return status_of(5, "ended", 3, 100, 90);
    if (call < 3) return status_of(7, "reconstructing", 4, 100 + 5 * static_cast<unsigned>(call));
    return status_of(7, "ended", 4, 120, 108);
  });
  const ScanConfirmation result = scripted.confirmer.wait(20, quick());
  EXPECT_EQ(result.outcome, ScanOutcome::kConfirmed) << result.message;
  EXPECT_TRUE(result.confirmed());
  EXPECT_EQ(result.progress.frames_accepted, 20u);
  EXPECT_EQ(result.progress.projections_integrated, 18u);
  EXPECT_TRUE(contains(result.message, "ended scan 7 with all 20 frames accepted"))
      << result.message;
  EXPECT_GE(scripted.server.calls(), 4);
}

TEST(ScanConfirmer, FewerFramesAcceptedIsAnIncompleteScan) {
  Scripted scripted([](int call) {
    if (call == 0) return status_of(0, "idle", 0, 0);
    v1::StatusReport status = status_of(7, "ended", 1, 15);
    (*status.mutable_discards())["shape_mismatch"] = 5;
    return status;
  });
  const ScanConfirmation result = scripted.confirmer.wait(20, quick());
  EXPECT_EQ(result.outcome, ScanOutcome::kIncomplete);
  EXPECT_TRUE(contains(result.message, "accepted only 15 of 20 frames")) << result.message;
  EXPECT_TRUE(contains(result.message, "shape_mismatch 5")) << result.message;
}

TEST(ScanConfirmer, AReusedScanIdDoesNotConfirmAnOlderScan) {
  // The server's last scan had our id and has ended, but no scan started since the baseline: the
  // ScanBegin has not been read (or was rejected), so nothing is confirmed.
  Scripted scripted([](int) { return status_of(7, "ended", 2, 50); });
  const ScanConfirmation result = scripted.confirmer.wait(20, quick(200));
  EXPECT_EQ(result.outcome, ScanOutcome::kTimedOut);
  EXPECT_TRUE(result.answered);
  EXPECT_GE(result.seconds, 0.2);
  EXPECT_TRUE(contains(result.message, "no confirmation of the end of scan 7")) << result.message;
  EXPECT_TRUE(contains(result.message, "scan 7 never became the server's scan")) << result.message;
}

TEST(ScanConfirmer, AnotherScanTakingOverIsReportedAtOnce) {
  Scripted scripted([](int call) {
    if (call == 0) return status_of(0, "idle", 0, 0);
    if (call < 3) return status_of(7, "reconstructing", 1, 10);
    return status_of(8, "reconstructing", 2, 12);
  });
  const ScanConfirmation result = scripted.confirmer.wait(20, quick(5000));
  EXPECT_EQ(result.outcome, ScanOutcome::kSuperseded);
  EXPECT_LT(result.seconds, 4.0);
  EXPECT_TRUE(contains(result.message, "moved on to scan 8")) << result.message;
}

// A record of scan `scan_id` in the status (recent_scans), as the server keeps one per scan.
v1::ScanRecord* add_record(v1::StatusReport& status, std::uint64_t scan_id, std::uint64_t number,
                           std::uint64_t accepted, std::uint64_t integrated) {
  v1::ScanRecord* record = status.add_recent_scans();
  record->set_scan_id(scan_id);
  record->set_number(number);
  record->set_projections_accepted(accepted);
  record->set_projections_integrated(integrated);
  return record;
}

// A detector whose scan another detector's ScanBegin ended: the server integrated 100 of its
// projections, refused the rest, and went on with scan 222 (ended after 60 frames). Its own
// counts, not the other scan's, and at once: not "never became the server's scan" after a wait.
TEST(ScanConfirmer, ASupersededScanIsReportedWithItsOwnCounts) {
  Scripted scripted([](int call) {
    v1::StatusReport status = status_of(0, "idle", 0, 0);
    if (call == 0) return status;
    status = status_of(222, "ended", 2, 160 + 60, 100 + 60);
    (*status.mutable_discards())["scan_ended"] = 76;
    v1::ScanRecord* ours = add_record(status, 7, 1, 100, 100);
    ours->set_ended(true);
    ours->set_reconstructed(true);
    ours->set_end_reason("superseded");
    ours->set_superseded_by(222);
    (*ours->mutable_discards())["scan_ended"] = 76;
    add_record(status, 222, 2, 60, 60)->set_ended(true);  // not final yet: no matter
    return status;
  });
  const ScanConfirmation result = scripted.confirmer.wait(176, quick(5000));
  EXPECT_EQ(result.outcome, ScanOutcome::kSuperseded) << result.message;
  EXPECT_LT(result.seconds, 2.0) << "reported at once, not after the stall timeout";
  EXPECT_EQ(result.progress.frames_accepted, 100u);
  EXPECT_EQ(result.progress.projections_integrated, 100u);
  EXPECT_TRUE(contains(result.message, "ended scan 7 when scan 222 began (superseded)"))
      << result.message;
  EXPECT_TRUE(contains(result.message, "100 of 176 frames accepted and 100 projections integrated"))
      << result.message;
  EXPECT_TRUE(contains(result.message, "scan_ended 76")) << result.message;
  EXPECT_FALSE(contains(result.message, "never became")) << result.message;
}

// The other detector's view: its scan ended normally; frames of the superseded scan refused in
// the meantime are not its discards, and the superseded scan's integrations are not its own.
TEST(ScanConfirmer, ConfirmationCountsOnlyTheScansOwnFrames) {
  Scripted scripted([](int call) {
    v1::StatusReport status = status_of(0, "idle", 0, 0);
    if (call == 0) return status;
    status = status_of(7, "ended", 2, 61 + 80, 61 + 1);
    (*status.mutable_discards())["scan_ended"] = 48;
    add_record(status, 6, 1, 61, 61)->set_ended(true);  // not final yet: no matter
    v1::ScanRecord* ours = add_record(status, 7, 2, 60, 60);
    ours->set_darks_accepted(10);
    ours->set_flats_accepted(10);
    ours->set_ended(true);
    ours->set_reconstructed(true);
    ours->set_end_reason("scan_end");
    return status;
  });
  const ScanConfirmation result = scripted.confirmer.wait(80, quick());
  EXPECT_EQ(result.outcome, ScanOutcome::kConfirmed) << result.message;
  EXPECT_EQ(result.progress.projections_integrated, 60u);
  EXPECT_TRUE(result.progress.discards.empty());
  EXPECT_TRUE(contains(result.message, "all 80 frames accepted and 60 projections integrated"))
      << result.message;
}

// The ingest has seen the ScanEnd while the reconstruct stage still integrates: the detector
// waits for the final counts instead of reporting "8 projections integrated" of 60.
TEST(ScanConfirmer, ConfirmationWaitsUntilTheCountsAreFinal) {
  Scripted scripted([](int call) {
    v1::StatusReport status = status_of(0, "idle", 0, 0);
    if (call == 0) return status;
    const bool done = call >= 4;
    status = status_of(7, done ? "ended" : "reconstructing", 1, 60, done ? 60 : 8 * call);
    v1::ScanRecord* ours = add_record(status, 7, 1, 60, done ? 60 : 8 * call);
    ours->set_ended(true);
    ours->set_end_reason("scan_end");
    ours->set_reconstructed(done);
    return status;
  });
  const ScanConfirmation result = scripted.confirmer.wait(60, quick(5000));
  EXPECT_EQ(result.outcome, ScanOutcome::kConfirmed) << result.message;
  EXPECT_EQ(result.progress.projections_integrated, 60u);
  EXPECT_TRUE(contains(result.message, "all 60 frames accepted and 60 projections integrated"))
      << result.message;
}

TEST(ScanConfirmer, ProgressKeepsTheWaitGoingBeyondTheStallTimeout) {
  // 40 polls of steady progress (several times the stall timeout in all), then the end.
  Scripted scripted([](int call) {
    if (call == 0) return status_of(0, "idle", 0, 0);
    if (call < 40) return status_of(7, "reconstructing", 1, static_cast<unsigned>(call));
    return status_of(7, "ended", 1, 40);
  });
  ConfirmWait wait = quick(150);
  int polls = 0;
  wait.on_poll = [&](const ScanProgress&, bool answered, double) { polls += answered; };
  const ScanConfirmation result = scripted.confirmer.wait(39, wait);
  EXPECT_EQ(result.outcome, ScanOutcome::kConfirmed) << result.message;
  EXPECT_GT(result.seconds, 0.3);
  EXPECT_GE(polls, 38);
}

TEST(ScanConfirmer, AServerThatDoesNotAnswer) {
  ScanConfirmer nobody(endpoint("nobody"));
  EXPECT_THROW(nobody.begin(7, 100), TimeoutError);

  const std::string requests = endpoint("requests");
  ScanConfirmer confirmer(requests);
  {
    FakeStatusServer server(requests, [](int) { return status_of(0, "idle", 0, 0); });
    confirmer.begin(7, 2000);
  }  // the server goes away after the baseline
  const ScanConfirmation result = confirmer.wait(20, quick(200));
  EXPECT_EQ(result.outcome, ScanOutcome::kTimedOut);
  EXPECT_FALSE(result.answered);
  EXPECT_TRUE(contains(result.message, "did not answer GetStatus")) << result.message;
}

TEST(ScanConfirmer, StopEndsTheWait) {
  Scripted scripted([](int) { return status_of(0, "idle", 0, 0); });
  std::atomic<bool> stop{false};
  ConfirmWait wait = quick(10000);
  wait.stop = &stop;
  wait.on_poll = [&](const ScanProgress&, bool, double seconds) {
    if (seconds > 0.05) stop = true;
  };
  const ScanConfirmation result = scripted.confirmer.wait(20, wait);
  EXPECT_EQ(result.outcome, ScanOutcome::kInterrupted);
  EXPECT_LT(result.seconds, 5.0);
  EXPECT_TRUE(contains(result.message, "interrupted before the server confirmed"))
      << result.message;
}

TEST(ScanConfirmer, MaxWaitBoundsEvenAProgressingServer) {
  Scripted scripted([](int call) {
    return status_of(7, "reconstructing", call == 0 ? 0 : 1, static_cast<unsigned>(call));
  });
  ConfirmWait wait = quick(10000);
  wait.max_wait_ms = 200;
  const ScanConfirmation result = scripted.confirmer.wait(1000000, wait);
  EXPECT_EQ(result.outcome, ScanOutcome::kTimedOut);
  EXPECT_LT(result.seconds, 2.0);
}

}  // namespace
}  // namespace slicestream::client

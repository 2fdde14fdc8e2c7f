#include "clients/detector/scan_streamer.hpp"

#include <algorithm>
#include <cerrno>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "clients/common/data_sender.hpp"
#include "clients/common/scan_confirmation.hpp"
#include "clients/detector/ordered_prefetcher.hpp"
#include "kernels/steady_clock.hpp"

namespace slicestream::detector {

namespace {

constexpr std::size_t kQueueBudgetBytes = std::size_t{256} << 20;
constexpr std::size_t kLookaheadBudgetBytes = std::size_t{512} << 20;
constexpr int kInterruptedLingerMs = 2000;
constexpr double kMaxStartCheckSeconds = 10;  // the server's first answer, before streaming

v1::Frame wire_frame(const OutgoingFrame& frame, std::uint64_t scan_id,
                     std::chrono::nanoseconds timestamp) {
  v1::Frame header;
  header.set_scan_id(scan_id);
  header.set_kind(to_wire(frame.kind));
  header.set_index(frame.index);
  if (frame.kind == FrameKind::kProjection) {
    if (frame.angle_rad) {
      header.set_angle_rad(*frame.angle_rad);
    } else {
      header.set_position(frame.position);
    }
  }
  header.set_timestamp_ns(static_cast<std::uint64_t>(timestamp.count()));
  header.set_rows(static_cast<std::uint32_t>(frame.pixels->shape.rows));
  header.set_cols(static_cast<std::uint32_t>(frame.pixels->shape.cols));
  header.set_pixel_type(to_wire(frame.pixels->type));
  return header;
}

// Marks the counters as "in a send" for the progress line's stall hint and the blocked time.
class SendTimer {
 public:
  SendTimer(StreamCounters& counters, Clock& clock, double& blocked_seconds)
      : counters_(counters), clock_(clock), blocked_seconds_(blocked_seconds), start_(clock.now()) {
    counters_.send_started_ns = static_cast<std::int64_t>(steady_now_ns());
  }
  ~SendTimer() {
    counters_.send_started_ns = 0;
    blocked_seconds_ += std::chrono::duration<double>(clock_.now() - start_).count();
  }
  SendTimer(const SendTimer&) = delete;
  SendTimer& operator=(const SendTimer&) = delete;

 private:
  StreamCounters& counters_;
  Clock& clock_;
  double& blocked_seconds_;
  std::chrono::nanoseconds start_;
};

std::size_t frame_bytes_of(const v1::ScanBegin& scan_begin) {
  const std::size_t bytes = scan_begin.pixel_type() == v1::PIXEL_TYPE_UINT16 ? 2 : 4;
  return std::size_t{scan_begin.detector_rows()} * scan_begin.detector_cols() * bytes;
}

int milliseconds(double seconds) {
  return static_cast<int>(std::clamp(seconds * 1000.0, 1.0, 2147483647.0));
}

// After the ScanEnd, with the data connection still open: waits until the server confirms the
// whole scan. After Ctrl-C only briefly (the user wants out), otherwise until the server makes no
// progress for the confirmation timeout; a Ctrl-C while waiting ends the wait.
void confirm_scan(client::ScanConfirmer& confirmer, const StreamOptions& options,
                  const std::atomic<bool>& stop, std::ostream& progress_out,
                  StreamSummary& summary) {
  client::ConfirmWait wait;
  const bool interrupted = stop.load();
  if (interrupted) {
    wait.stall_timeout_ms = std::min(kInterruptedLingerMs, milliseconds(options.confirm_timeout_s));
    wait.max_wait_ms = kInterruptedLingerMs;
  } else {
    wait.stall_timeout_ms = milliseconds(options.confirm_timeout_s);
    wait.stop = &stop;
  }
  const std::uint64_t frames = summary.darks + summary.flats + summary.projections;
  double next_report_s = 1;  // a short wait goes unreported
  bool reported = false;
  std::size_t last_width = 0;
  if (options.progress) {
    wait.on_poll = [&](const client::ScanProgress& p, bool answered, double seconds) {
      if (seconds < next_report_s) return;
      next_report_s = seconds + (options.interactive_progress ? 0.25 : 5);
      std::ostringstream line;
      line << "waiting for the server to confirm scan " << summary.scan_id << ": ";
      if (answered) {
        line << p.frames_accepted << "/" << frames << " frames accepted, "
             << p.projections_integrated << " projections integrated, server scan "
             << p.server_scan_id << " " << p.scan_state;
      } else {
        line << "no answer from " << confirmer.endpoint();
      }
      line << " (" << format_duration(seconds) << ")";
      if (options.interactive_progress) {
        std::string text = line.str();
        const std::size_t width = text.size();
        if (width < last_width) text.append(last_width - width, ' ');  // erase the longer old line
        last_width = width;
        progress_out << '\r' << text << std::flush;
      } else {
        progress_out << line.str() << std::endl;
      }
      reported = true;
    };
  }
  const client::ScanConfirmation result = confirmer.wait(frames, wait);
  if (reported && options.interactive_progress) progress_out << std::endl;
  summary.confirmed = result.confirmed();
  summary.confirmation = result.message;
  summary.confirm_seconds = result.seconds;
  if (result.outcome == client::ScanOutcome::kInterrupted) summary.interrupted = true;
}

// ZeroMQ would queue the whole scan for an address nobody listens on and report nothing: the
// data endpoint must have a server before anything is sent.
void require_server(client::DataSender& sender, const StreamOptions& options) {
  const double wait_s = std::min(options.confirm_timeout_s, kMaxStartCheckSeconds);
  if (sender.wait_for_server(milliseconds(wait_s))) return;
  const client::ConnectionState state = sender.connection();
  sender.close(0);
  if (state.failed_handshakes > 0) {
    throw std::runtime_error(
        "the data endpoint " + options.endpoint +
        " answers, but not as slicestream-server's data endpoint (the ZeroMQ handshake "
        "failed: another program, or the server's slices or requests endpoint); nothing was "
        "sent. Give the server's data endpoint with --data, or its address with --server");
  }
  throw std::runtime_error("no server is connected on the data endpoint " + options.endpoint +
                           " (waited " + format_duration(wait_s) +
                           "); nothing was sent. Start slicestream-server first, or give its "
                           "data endpoint with --data (or its address with --server)");
}

}  // namespace

int default_send_hwm(std::size_t frame_bytes) {
  const std::size_t frames = kQueueBudgetBytes / std::max<std::size_t>(frame_bytes, 1);
  // Two ZeroMQ messages (header, payload) per frame count against the high-water mark.
  return static_cast<int>(2 * std::clamp<std::size_t>(frames, 2, 128));
}

std::uint64_t default_lookahead(std::size_t frame_bytes, int workers) {
  const std::size_t frames = kLookaheadBudgetBytes / std::max<std::size_t>(frame_bytes, 1);
  // At least one frame per worker, or workers would idle.
  return std::max(std::clamp<std::size_t>(frames, 2, 64),
                  static_cast<std::size_t>(std::max(workers, 1)));
}

std::unique_ptr<client::ScanConfirmer> connect_confirmation(const StreamOptions& options) {
  const std::string& endpoint = options.requests_endpoint;
  const std::string hint =
      "; nothing was sent. Start the server first, give its requests endpoint with --requests, "
      "or stream without confirmation with --no-confirm (over ipc:// the end of a scan the "
      "server pushes back on may then be lost)";
  const double wait_s = std::min(options.confirm_timeout_s, kMaxStartCheckSeconds);
  try {
    auto confirmer = std::make_unique<client::ScanConfirmer>(endpoint, options.security);
    confirmer->begin(options.scan_id, milliseconds(wait_s));
    return confirmer;
  } catch (const client::TimeoutError&) {
    throw std::runtime_error("the server's requests endpoint " + endpoint +
                             " does not answer (waited " + format_duration(wait_s) +
                             "), so it could not confirm the end of the scan" + hint);
  } catch (const client::ClientError& error) {
    throw std::runtime_error(
        std::string("cannot confirm the scan through the requests endpoint: ") + error.what() +
        hint);
  }
}

StreamSummary stream_scan(FrameSource& source, const StreamOptions& options, Clock& clock,
                          const std::atomic<bool>& stop, std::ostream& progress_out,
                          client::ScanConfirmer* confirmer) {
  v1::ScanBegin scan_begin = source.scan_begin();
  scan_begin.set_scan_id(options.scan_id);
  const FrameSequence sequence = source.sequence();
  const std::size_t frame_bytes = frame_bytes_of(scan_begin);

  std::unique_ptr<client::ScanConfirmer> own_confirmer;
  if (confirmer == nullptr && !options.requests_endpoint.empty()) {
    own_confirmer = connect_confirmation(options);
    confirmer = own_confirmer.get();
  }
  std::unique_ptr<client::DataSender> sender;
  try {
    sender = std::make_unique<client::DataSender>(
        options.endpoint, options.send_hwm > 0 ? options.send_hwm : default_send_hwm(frame_bytes),
        options.security);
  } catch (const zmq::error_t& error) {
    throw std::runtime_error("cannot use data endpoint '" + options.endpoint +
                             "': " + error.what());
  }
  require_server(*sender, options);

  StreamSummary summary;
  summary.endpoint = options.endpoint;
  summary.scan_id = options.scan_id;
  summary.projections_planned = sequence.projections;
  summary.target_fps = options.fps;
  StreamCounters counters;
  FrameScheduler scheduler(options.fps, clock, &stop);
  const int workers = std::max(1, source.max_parallel_renders());
  OrderedPrefetcher<OutgoingFrame> frames(
      sequence.total(), workers,
      options.lookahead > 0 ? options.lookahead : default_lookahead(frame_bytes, workers),
      [&source](std::uint64_t frame) { return source.render(frame); });
  std::unique_ptr<ProgressReporter> reporter;
  if (options.progress) {
    reporter = std::make_unique<ProgressReporter>(counters, sequence.total(), options.endpoint,
                                                  progress_out, options.interactive_progress);
  }

  std::string failure;
  const std::chrono::nanoseconds start = clock.now();
  std::chrono::nanoseconds first_sent = start;
  try {
    {
      SendTimer timer(counters, clock, summary.blocked_seconds);
      sender->send_scan_begin(scan_begin);
    }
    scheduler.start();
    for (std::uint64_t k = 0; k < sequence.total() && !stop.load(); ++k) {
      std::optional<OutgoingFrame> frame = frames.next();
      if (!frame) break;
      const std::chrono::nanoseconds timestamp = scheduler.wait_for(k);
      if (stop.load()) break;
      const std::size_t bytes = frame->pixels->bytes.size();
      {
        SendTimer timer(counters, clock, summary.blocked_seconds);
        sender->send_frame(wire_frame(*frame, options.scan_id, timestamp),
                           frame->pixels->bytes.data(), bytes);
      }
      switch (frame->kind) {
        case FrameKind::kDark:
          ++summary.darks;
          break;
        case FrameKind::kFlat:
          ++summary.flats;
          break;
        case FrameKind::kProjection:
          ++summary.projections;
          break;
      }
      summary.bytes += bytes;
      counters.bytes_sent += bytes;
      ++counters.frames_sent;
      const std::chrono::nanoseconds sent_at = clock.now();
      if (k == 0) first_sent = sent_at;
      summary.sending_seconds = std::chrono::duration<double>(sent_at - first_sent).count();
    }
  } catch (const zmq::error_t& error) {
    // A signal interrupts a blocked send (EINTR): that is the user stopping us, not a failure.
    if (!(error.num() == EINTR && stop.load()))
      failure = std::string("send failed: ") + error.what();
  } catch (const std::exception& error) {
    failure = error.what();
  }
  frames.cancel();
  summary.interrupted = stop.load() || !failure.empty();
  summary.schedule = scheduler.stats();
  summary.seconds = std::chrono::duration<double>(clock.now() - start).count();
  if (reporter) reporter->stop();

  v1::ScanEnd scan_end;
  scan_end.set_scan_id(options.scan_id);
  scan_end.set_frames_sent(summary.projections);
  if (summary.interrupted) {
    // The send blocks while the server does not read (DataSender has no send timeout).
    progress_out << "stopping: sending ScanEnd (frames_sent=" << summary.projections
                 << "); Ctrl-C again to quit without it" << std::endl;
  }
  int linger_ms = options.linger_ms;
  bool second_interrupt = false;
  try {
    sender->send_scan_end(scan_end);
    summary.scan_end_sent = true;
  } catch (const zmq::error_t& error) {
    linger_ms = 0;  // a second Ctrl-C while blocked: leave now
    second_interrupt = error.num() == EINTR && stop.load();
    if (failure.empty() && !second_interrupt) {
      failure = std::string("sending ScanEnd failed: ") + error.what();
    }
  }
  summary.connections_lost = sender->connection().disconnects;
  // The data connection stays open until the server has read everything: over ipc:// closing it
  // while the server pushes back would lose the end of the scan (client::ScanConfirmer).
  summary.confirmation_requested = confirmer != nullptr;
  if (confirmer && summary.scan_end_sent) {
    confirm_scan(*confirmer, options, stop, progress_out, summary);
  } else if (confirmer) {
    summary.confirmation = "ScanEnd was not sent, so the server cannot end the scan";
  }
  // Always close with a finite linger: ZeroMQ's default would wait forever for a dead server.
  // After Ctrl-C the user wants out, and without a confirmation the server is stuck or gone:
  // wait less for queued frames.
  if (stop.load() || (confirmer && !summary.confirmed)) {
    linger_ms = std::min(linger_ms, kInterruptedLingerMs);
  }
  const std::chrono::nanoseconds flush_start = clock.now();
  sender->close(linger_ms);
  sender.reset();  // the ZeroMQ context's termination is where the linger is spent
  summary.flush_seconds = std::chrono::duration<double>(clock.now() - flush_start).count();
  if (!failure.empty()) {
    throw std::runtime_error(
        failure + " (after " + std::to_string(counters.frames_sent.load()) + " frames; " +
        (summary.scan_end_sent
             ? "ScanEnd sent with frames_sent=" + std::to_string(summary.projections)
             : std::string("ScanEnd not sent")) +
        ")");
  }
  return summary;
}

}  // namespace slicestream::detector

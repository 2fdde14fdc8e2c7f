#include "server/metrics/metrics_exposition.hpp"

#include "server/metrics/prometheus_writer.hpp"

namespace slicestream {

namespace {

using Labels = PrometheusWriter::Labels;

constexpr const char* kCounter = "counter";
constexpr const char* kGauge = "gauge";
constexpr const char* kHistogram = "histogram";

double as_double(std::uint64_t value) {
  return static_cast<double>(value);
}

// The ZeroMQ endpoints' counters (ServerCounters) with what they count; a name missing here is
// still exposed, with a generic description.
const std::map<std::string, std::string>& endpoint_counter_help() {
  static const std::map<std::string, std::string> help = {
      {"data_messages", "Messages read from the data socket."},
      {"data_rejected", "Data messages the codec refused (also counted as discards)."},
      {"payloads_realigned", "Frame payloads copied for alignment."},
      {"requests", "Messages read from the requests socket."},
      {"requests_rejected", "Requests refused before reaching the pipeline (any endpoint)."},
      {"replies", "Replies sent on the requests socket."},
      {"replies_undeliverable", "Replies whose requester had gone."},
      {"publications", "Messages published on the slices socket (slices, previews, events)."},
      {"publications_invalid", "Publications refused because their values did not fit."},
      {"publications_superseded",
       "Publications the slices socket never sent: a newer one of the same stream replaced it "
       "while a subscriber had no room."},
      {"publications_missed_by_slow_subscribers",
       "Publications a subscriber missed: it took nothing for the slow-subscriber wait."},
      {"publications_resent_after_stall",
       "Publications sent again once every subscriber had room: the latest of each stream that a "
       "stalled subscriber missed (the others receive a repeat)."},
      {"protobuf_log_lines",
       "Lines libprotobuf produced (e.g. for a parsed string field that was not valid UTF-8); "
       "the log shows a few a second and counts the rest."},
      {"publications_not_resent",
       "Publications a stalled subscriber missed that were not kept to send again (more streams "
       "than the slices endpoint keeps)."},
  };
  return help;
}

void write_scan(PrometheusWriter& out, const StatusReport& status) {
  out.single("slicestream_uptime_seconds", kGauge, "Seconds since the pipeline started.",
             status.metrics.uptime_s);
  out.family("slicestream_scan_state", kGauge,
             "1 for the scan state the server is in (idle, calibrating, reconstructing, ended).");
  for (const char* state : {"idle", "calibrating", "reconstructing", "ended"})
    out.sample("slicestream_scan_state", {{"state", state}},
               std::string(to_string(status.scan_state)) == state ? 1 : 0);
  out.single("slicestream_scan_active", kGauge, "1 while a scan is running.",
             status.scan_active ? 1 : 0);
  out.single("slicestream_scan_id", kGauge, "Id of the newest scan (0 before the first).",
             as_double(status.scan_id));
  out.single("slicestream_slices", kGauge, "Live slices.", as_double(status.slices.size()));
}

void write_pipeline_counters(PrometheusWriter& out, const MetricsSnapshot& m) {
  const std::pair<const char*, std::pair<std::uint64_t, const char*>> counters[] = {
      {"slicestream_frames_received_total",
       {m.frames_received, "Frames (darks, flats, projections) accepted into the pipeline."}},
      {"slicestream_darks_received_total", {m.darks_received, "Dark frames accepted."}},
      {"slicestream_flats_received_total", {m.flats_received, "Flat frames accepted."}},
      {"slicestream_received_bytes_total",
       {m.bytes_received, "Pixel payload bytes accepted into the pipeline."}},
      {"slicestream_projections_integrated_total",
       {m.projections_integrated, "Projections integrated into the reconstruction."}},
      {"slicestream_scans_started_total", {m.scans_started, "Scans started."}},
      {"slicestream_scans_ended_total", {m.scans_ended, "Scans ended."}},
      {"slicestream_errors_total", {m.errors, "Backend and stage failures."}},
      {"slicestream_preprocess_clamped_pixels_total",
       {m.pixels_clamped, "Pixels whose transmission was clamped before -log."}},
      {"slicestream_preprocess_non_finite_pixels_total",
       {m.pixels_non_finite, "Non-finite pixels set to 0."}},
      {"slicestream_store_clamped_values_total",
       {m.store_values_clamped,
        "Filtered projection values clamped to the range of the store's fp16 texels."}},
      {"slicestream_refinements_total", {m.refinements_run, "Slice refinements completed."}},
      {"slicestream_refinement_matrix_builds_total",
       {m.refinement_matrix_builds, "System matrices built for refinement."}},
      {"slicestream_residual_checks_total",
       {m.residual_checks_run, "Automatic data-consistency checks completed."}},
      {"slicestream_publications_coalesced_total",
       {m.publications_coalesced,
        "Slice updates replaced by a newer one while the publish stage was behind."}},
      {"slicestream_publish_readback_wait_microseconds_total",
       {m.publish_readback_wait_us,
        "Time the publish stage waited for slice readbacks (GPU work queued before them)."}},
      {"slicestream_publish_copy_microseconds_total",
       {m.publish_copy_us,
        "Time the publish stage copied read-back slices out of page-locked memory."}},
      {"slicestream_publications_copied_out_total",
       {m.publications_copied_out,
        "Slice publications copied out of their readback buffer (the pool had lent its maximum)."}},
  };
  for (const auto& [name, value] : counters)
    out.single(name, kCounter, value.second, as_double(value.first));

  out.family("slicestream_published_total", kCounter,
             "Images published, by kind (slice, preview, refined).");
  out.sample("slicestream_published_total", {{"kind", "slice"}}, as_double(m.slices_published));
  out.sample("slicestream_published_total", {{"kind", "preview"}}, as_double(m.previews_published));
  out.sample("slicestream_published_total", {{"kind", "refined"}},
             as_double(m.refined_slices_published));
  out.family("slicestream_discards_total", kCounter,
             "Messages discarded, by reason (nothing is dropped silently).");
  for (const auto& [reason, count] : m.discards)
    out.sample("slicestream_discards_total", {{"reason", reason}}, as_double(count));
  out.family("slicestream_requests_refused_total", kCounter,
             "Requests the pipeline refused, by reason.");
  for (const auto& [reason, count] : m.requests_refused)
    out.sample("slicestream_requests_refused_total", {{"reason", reason}}, as_double(count));
  out.family("slicestream_slice_residual", kGauge,
             "Newest data-consistency residual ||A x_fbp - b|| / ||b|| of a live slice.");
  for (const auto& [slice_id, residual] : m.slice_residuals)
    out.sample("slicestream_slice_residual", {{"slice", std::to_string(slice_id)}}, residual);
}

void write_stages(PrometheusWriter& out, const MetricsSnapshot& m) {
  auto per_stage = [&](const char* name, const char* type, const char* help, auto value) {
    out.family(name, type, help);
    for (const StageMetrics& stage : m.stages)
      out.sample(name, {{"stage", stage.name}}, value(stage));
  };
  per_stage("slicestream_stage_items_total", kCounter, "Items a pipeline stage processed.",
            [](const StageMetrics& s) { return as_double(s.items); });
  per_stage("slicestream_stage_items_per_second", kGauge,
            "Items per second over the last two seconds.",
            [](const StageMetrics& s) { return s.rate_per_s; });
  per_stage("slicestream_stage_busy_ratio", kGauge,
            "Fraction of the last two seconds a stage spent working.",
            [](const StageMetrics& s) { return s.busy_fraction; });
  per_stage("slicestream_stage_queue_depth", kGauge, "Items waiting in front of a stage.",
            [](const StageMetrics& s) { return as_double(s.queue_depth); });
  per_stage("slicestream_stage_queue_capacity", kGauge, "Capacity of a stage's queue.",
            [](const StageMetrics& s) { return as_double(s.queue_capacity); });
  out.family("slicestream_stage_service_seconds", kHistogram,
             "Time a stage spends per item (waits on a full queue downstream excluded).");
  for (const StageMetrics& stage : m.stages)
    out.histogram("slicestream_stage_service_seconds", {{"stage", stage.name}}, stage.service_us);
  out.family("slicestream_frame_to_slice_latency_seconds", kHistogram,
             "Frame arrival at the data endpoint to the first publication of a slice holding it.");
  out.histogram("slicestream_frame_to_slice_latency_seconds", {}, m.frame_to_slice_us);
  out.family("slicestream_refinement_duration_seconds", kHistogram,
             "Wall time per slice refinement (matrix builds included).");
  out.histogram("slicestream_refinement_duration_seconds", {}, m.refinement_us);
  out.family("slicestream_residual_check_duration_seconds", kHistogram,
             "Wall time per automatic data-consistency check (matrix builds included).");
  out.histogram("slicestream_residual_check_duration_seconds", {}, m.residual_check_us);
}

void write_backend(PrometheusWriter& out, const StatusReport& status) {
  out.family("slicestream_backend_info", kGauge, "The compute backend and its device (value 1).");
  out.sample("slicestream_backend_info",
             {{"backend", status.backend}, {"device", status.backend_device}}, 1);
  // The CUDA backend manages device memory, the CPU backend host memory.
  const Labels memory = {{"backend", status.backend},
                         {"memory", status.backend == "cuda" ? "device" : "host"}};
  out.family("slicestream_backend_memory_total_bytes", kGauge,
             "Memory the backend may use (GPU memory for the cuda backend).");
  out.sample("slicestream_backend_memory_total_bytes", memory,
             as_double(status.memory.total_bytes));
  out.family("slicestream_backend_memory_used_bytes", kGauge,
             "Memory the backend holds, by use (scan: store, buffers and targets; refiners).");
  Labels scan = memory;
  scan.emplace_back("use", "scan");
  Labels refiners = memory;
  refiners.emplace_back("use", "refiners");
  out.sample("slicestream_backend_memory_used_bytes", scan,
             as_double(status.memory.used_by_scan_bytes));
  out.sample("slicestream_backend_memory_used_bytes", refiners,
             as_double(status.memory.used_by_refiners_bytes));
}

void write_endpoints(PrometheusWriter& out, const MetricsInputs& inputs) {
  for (const auto& [name, count] : inputs.server_counters) {
    const auto help = endpoint_counter_help().find(name);
    out.single("slicestream_zmq_" + name + "_total", kCounter,
               help != endpoint_counter_help().end() ? help->second
                                                     : "ZeroMQ endpoint counter " + name + ".",
               as_double(count));
  }
  out.family("slicestream_requests_total", kCounter,
             "Requests answered, by endpoint (requests, websocket, http), type and status.");
  for (const auto& [key, count] : inputs.requests) {
    out.sample("slicestream_requests_total",
               {{"endpoint", key.endpoint}, {"type", key.kind}, {"status", key.status}},
               as_double(count));
  }
}

void write_http(PrometheusWriter& out, const HttpCounterValues& http) {
  out.single("slicestream_http_connections_accepted_total", kCounter, "HTTP connections accepted.",
             as_double(http.connections_accepted));
  out.single("slicestream_http_connections_refused_total", kCounter,
             "HTTP connections refused over the connection limit.",
             as_double(http.connections_refused));
  out.single("slicestream_http_connections", kGauge, "Open HTTP and WebSocket connections.",
             static_cast<double>(http.connections_open));
  out.family("slicestream_http_responses_total", kCounter, "HTTP responses by route and code.");
  for (const auto& [key, count] : http.responses) {
    out.sample("slicestream_http_responses_total",
               {{"route", key.first}, {"code", std::to_string(key.second)}}, as_double(count));
  }
  out.single("slicestream_websocket_sessions", kGauge, "Open WebSocket sessions.",
             static_cast<double>(http.websocket_sessions));
  out.single("slicestream_websocket_frames_sent_total", kCounter,
             "WebSocket messages sent (images, replies, events).",
             as_double(http.websocket_frames_sent));
  out.single("slicestream_websocket_sent_bytes_total", kCounter, "WebSocket payload bytes sent.",
             as_double(http.websocket_bytes_sent));
  out.single("slicestream_websocket_updates_superseded_total", kCounter,
             "Image updates replaced by a newer one before a slow connection could take them.",
             as_double(http.websocket_updates_superseded));
  out.single("slicestream_websocket_events_dropped_total", kCounter,
             "Events a slow connection could not take (it is told how many).",
             as_double(http.websocket_events_dropped));
  out.single("slicestream_websocket_updates_over_budget_total", kCounter,
             "Image copies for WebSocket sessions the memory budget had no room for (updates not "
             "taken, encodings that waited).",
             as_double(http.websocket_updates_over_budget));
  out.single("slicestream_websocket_messages_refused_total", kCounter,
             "WebSocket messages refused (not JSON, too many in flight, too fast).",
             as_double(http.websocket_messages_refused));
}

void write_process(PrometheusWriter& out, const ProcessStats& p) {
  // The standard process collector's names, so that generic dashboards work.
  out.single("process_resident_memory_bytes", kGauge, "Resident memory size in bytes.",
             as_double(p.resident_memory_bytes));
  out.single("process_virtual_memory_bytes", kGauge, "Virtual memory size in bytes.",
             as_double(p.virtual_memory_bytes));
  out.single("process_cpu_seconds_total", kCounter, "Total user and system CPU time in seconds.",
             p.cpu_seconds);
  out.single("process_start_time_seconds", kGauge,
             "Start time of the process since the Unix epoch in seconds.", p.start_time_seconds);
  out.single("process_open_fds", kGauge, "Number of open file descriptors.", as_double(p.open_fds));
  out.single("process_threads", kGauge, "Number of threads.", as_double(p.threads));
}

}  // namespace

HttpCounterValues snapshot(const HttpCounters& c) {
  HttpCounterValues v;
  v.connections_accepted = c.connections_accepted.load();
  v.connections_refused = c.connections_refused.load();
  v.connections_open = c.connections_open.load();
  v.websocket_sessions = c.websocket_sessions.load();
  v.websocket_frames_sent = c.websocket_frames_sent.load();
  v.websocket_bytes_sent = c.websocket_bytes_sent.load();
  v.websocket_updates_superseded = c.websocket_updates_superseded.load();
  v.websocket_events_dropped = c.websocket_events_dropped.load();
  v.websocket_updates_over_budget = c.websocket_updates_over_budget.load();
  v.websocket_messages_refused = c.websocket_messages_refused.load();
  v.responses = c.responses();
  return v;
}

std::string format_metrics(const MetricsInputs& inputs) {
  PrometheusWriter out;
  out.single("slicestream_status_available", kGauge,
             "1 when the pipeline answered the status request behind this page in time.",
             inputs.status ? 1 : 0);
  if (inputs.status) {
    write_scan(out, *inputs.status);
    write_pipeline_counters(out, inputs.status->metrics);
    write_stages(out, inputs.status->metrics);
    write_backend(out, *inputs.status);
  }
  write_endpoints(out, inputs);
  write_http(out, inputs.http);
  if (inputs.process) write_process(out, *inputs.process);
  return out.text();
}

}  // namespace slicestream

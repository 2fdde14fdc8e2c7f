#include "server/codec/reply_codec.hpp"

#include "server/codec/common_codec.hpp"
#include "server/codec/enum_codec.hpp"
#include "server/codec/publish_codec.hpp"
#include "server/codec/refinement_codec.hpp"
#include "server/codec/scan_status_codec.hpp"

namespace slicestream {

namespace {

constexpr std::uint32_t kProtocolVersion = 1;

void encode_latency(const LatencySummary& latency, v1::Latency* wire) {
  wire->set_count(latency.count);
  wire->set_p50_us(latency.p50_us);
  wire->set_p99_us(latency.p99_us);
  wire->set_max_us(latency.max_us);
}

void encode_counters(const MetricsSnapshot& m,
                     google::protobuf::Map<std::string, std::uint64_t>& out) {
  out["bytes_received"] = m.bytes_received;
  out["frames_received"] = m.frames_received;
  out["darks_received"] = m.darks_received;
  out["flats_received"] = m.flats_received;
  out["projections_integrated"] = m.projections_integrated;
  out["slices_published"] = m.slices_published;
  out["publications_coalesced"] = m.publications_coalesced;
  out["publish_readback_wait_us"] = m.publish_readback_wait_us;
  out["publish_copy_us"] = m.publish_copy_us;
  out["publications_copied_out"] = m.publications_copied_out;
  out["previews_published"] = m.previews_published;
  out["publications_held_back"] = m.publications_held_back;
  out["memory_budget_bytes"] = m.memory_budget_bytes;
  out["memory_used_bytes"] = m.memory_used_bytes;
  out["pixels_clamped"] = m.pixels_clamped;
  out["pixels_non_finite"] = m.pixels_non_finite;
  out["store_values_clamped"] = m.store_values_clamped;
  out["scans_started"] = m.scans_started;
  out["scans_ended"] = m.scans_ended;
  out["errors"] = m.errors;
  out["refinements_run"] = m.refinements_run;
  out["refinement_matrix_builds"] = m.refinement_matrix_builds;
  out["refined_slices_published"] = m.refined_slices_published;
  out["residual_checks_run"] = m.residual_checks_run;
}

void encode_refinement(const RefinementStatus& r, v1::RefinementStatus* wire) {
  wire->set_slice_id(r.slice_id);
  wire->set_iterations(static_cast<std::uint32_t>(r.iterations));
  wire->set_interval_s(r.interval_s);
  wire->set_state(r.state);
  wire->set_detail(r.detail);
  wire->set_detector_row(r.detector_row);
  wire->set_window_filled(static_cast<std::uint32_t>(r.window_filled));
  wire->set_window_size(static_cast<std::uint32_t>(r.window_size));
  wire->set_refinements(r.refinements);
  if (r.has_result) {
    wire->set_fbp_residual(r.fbp_residual);
    wire->set_refined_residual(r.refined_residual);
  }
  wire->set_iterations_run(static_cast<std::uint32_t>(r.iterations_run));
  wire->set_projections_integrated(r.projections_integrated);
  wire->set_duration_ms(r.duration_ms);
  wire->set_solver(r.solver);
  encode_refinement_settings(r.settings, wire->mutable_settings());
  if (r.has_result) encode_refinement_summary(r.summary, wire->mutable_summary());
}

void encode_scan_summary(const ScanSummary& scan, v1::ScanSummary* wire) {
  encode_volume_box(scan.volume, wire->mutable_volume());
  wire->set_beam(to_string(scan.beam));
  wire->set_detector_rows(static_cast<std::uint32_t>(scan.detector_rows));
  wire->set_detector_cols(static_cast<std::uint32_t>(scan.detector_cols));
  wire->set_projections_per_rotation(static_cast<std::uint32_t>(scan.projections_per_rotation));
  wire->set_description(scan.description);
}

void encode_residual(const SliceResidual& r, v1::SliceResidual* wire) {
  wire->set_slice_id(r.slice_id);
  wire->set_source(r.source);
  wire->set_interval_s(r.interval_s);
  wire->set_state(r.state);
  wire->set_reason(r.reason);
  wire->set_detail(r.detail);
  if (r.has_residual) wire->set_residual(r.residual);
  wire->set_scan_id(r.scan_id);
  wire->set_projections_integrated(r.projections_integrated);
  wire->set_window_size(static_cast<std::uint32_t>(r.window_size));
  wire->set_age_s(r.age_s);
}

// The header of a GetVolume chunk; its values travel as the payload part.
void encode_volume_chunk(const VolumeChunk& chunk, v1::VolumeChunkHeader* wire) {
  wire->set_scan_id(chunk.scan_id);
  encode_volume_box(chunk.box, wire->mutable_box());
  wire->set_size_x(static_cast<std::uint32_t>(chunk.size_x));
  wire->set_size_y(static_cast<std::uint32_t>(chunk.size_y));
  wire->set_size_z(static_cast<std::uint32_t>(chunk.size_z));
  wire->set_first_plane(static_cast<std::uint32_t>(chunk.first_plane));
  wire->set_plane_count(static_cast<std::uint32_t>(chunk.plane_count));
  wire->set_projections_integrated(chunk.projections_integrated);
  wire->set_filter(to_wire(chunk.filter.window));
  wire->set_filter_cutoff(chunk.filter.cutoff);
}

}  // namespace

void encode_parameters(const Parameters& parameters, v1::Parameters* wire) {
  wire->set_filter(to_wire(parameters.filter.window));
  wire->set_filter_cutoff(parameters.filter.cutoff);
  wire->set_window_mode(to_wire(parameters.window_mode));
  wire->set_rotation_axis_offset_px(parameters.rotation_axis_offset_px);
  wire->set_publish_rate_hz(parameters.publish_rate_hz);
  wire->set_preview_interval_s(parameters.preview_interval_s);
}

void encode_status_report(const StatusReport& report, const CounterMap& server_counters,
                          v1::StatusReport* wire) {
  wire->set_backend(report.backend);
  wire->set_backend_device(report.backend_device);
  wire->set_scan_active(report.scan_active);
  wire->set_scan_id(report.scan_id);
  wire->set_scan_state(to_string(report.scan_state));
  wire->set_scan_end_reason(report.scan_end_reason);
  if (report.scan_description) encode_scan_geometry(*report.scan_description, wire->mutable_scan());
  for (const ScanRecord& record : report.metrics.recent_scans)
    encode_scan_record(record, wire->add_recent_scans());
  for (const SetSliceCommand& slice : report.slices) {
    v1::SetSlice* out = wire->add_slices();
    out->set_slice_id(slice.slice_id);
    encode_orientation(slice.orientation, out->mutable_orientation());
    out->set_width(static_cast<std::uint32_t>(slice.width));
    out->set_height(static_cast<std::uint32_t>(slice.height));
  }
  for (const SliceInfo& info : report.slice_info) {
    v1::SliceInfo* out = wire->add_slice_info();
    out->set_slice_id(info.slice_id);
    out->set_placement(to_string(info.placement));
    if (info.placement == SlicePlacement::kBox) {
      encode_orientation(info.box_orientation, out->mutable_box_orientation());
    }
    out->set_outside_box(info.outside_box);
  }
  for (const RefinementStatus& refinement : report.refinements)
    encode_refinement(refinement, wire->add_refinements());
  for (const SliceResidual& residual : report.residuals)
    encode_residual(residual, wire->add_residuals());
  encode_parameters(report.parameters, wire->mutable_parameters());
  const MetricsSnapshot& m = report.metrics;
  wire->set_uptime_s(m.uptime_s);
  for (const StageMetrics& stage : m.stages) {
    v1::StageStatus* out = wire->add_stages();
    out->set_name(stage.name);
    out->set_items(stage.items);
    out->set_rate_per_s(stage.rate_per_s);
    out->set_busy_fraction(stage.busy_fraction);
    encode_latency(stage.service_us, out->mutable_service());
    out->set_queue_depth(stage.queue_depth);
    out->set_queue_capacity(stage.queue_capacity);
  }
  for (const auto& [reason, count] : m.discards)
    (*wire->mutable_discards())[reason] = count;
  encode_counters(m, *wire->mutable_counters());
  for (const auto& [name, count] : server_counters)
    (*wire->mutable_counters())[name] = count;
  encode_latency(m.frame_to_slice_us, wire->mutable_frame_to_slice());
  encode_latency(m.refinement_us, wire->mutable_refinement());
  encode_latency(m.residual_check_us, wire->mutable_residual_check());
  for (const auto& [reason, count] : m.requests_refused)
    (*wire->mutable_requests_refused())[reason] = count;
  if (report.scan) encode_scan_summary(*report.scan, wire->mutable_scan());
  v1::BackendMemory* memory = wire->mutable_memory();
  memory->set_total_bytes(report.memory.total_bytes);
  memory->set_used_by_scan_bytes(report.memory.used_by_scan_bytes);
  memory->set_used_by_refiners_bytes(report.memory.used_by_refiners_bytes);
}

v1::Reply encode_reply(std::uint64_t request_id, const CommandReply& reply,
                       std::uint64_t published_ns, const CounterMap& server_counters) {
  v1::Reply wire;
  wire.set_protocol_version(kProtocolVersion);
  wire.set_request_id(request_id);
  wire.set_code(to_wire(reply.status.code));
  wire.set_message(reply.status.message);
  wire.set_reason(reply.status.reason);
  if (reply.slice) encode_slice_header(*reply.slice, published_ns, wire.mutable_slice());
  if (reply.report) encode_status_report(*reply.report, server_counters, wire.mutable_status());
  if (reply.parameters) encode_parameters(*reply.parameters, wire.mutable_parameters());
  if (reply.volume) encode_volume_chunk(*reply.volume, wire.mutable_volume_chunk());
  return wire;
}

v1::Reply encode_error_reply(std::uint64_t request_id, const WireError& error) {
  v1::Reply wire;
  wire.set_protocol_version(kProtocolVersion);
  wire.set_request_id(request_id);
  wire.set_code(to_wire(error.code));
  wire.set_message(error.message);
  wire.set_reason(error.reason);
  return wire;
}

}  // namespace slicestream

#include "server/codec/scan_status_codec.hpp"

#include "server/codec/common_codec.hpp"

namespace slicestream {

void encode_scan_geometry(const ScanDescription& scan, v1::ScanSummary* wire) {
  wire->set_vector_geometry(!scan.circular_parallel && !scan.circular_cone);
  if (scan.circular_parallel) {
    wire->set_pixel_width_mm(scan.circular_parallel->pixel_width_mm);
    wire->set_pixel_height_mm(scan.circular_parallel->pixel_height_mm);
  }
  if (scan.circular_cone) {
    const CircularConeParams& cone = *scan.circular_cone;
    wire->set_pixel_width_mm(cone.pixel_width_mm);
    wire->set_pixel_height_mm(cone.pixel_height_mm);
    wire->set_source_origin_mm(cone.source_origin_mm);
    wire->set_origin_detector_mm(cone.origin_detector_mm);
  }
  wire->set_pixel_type(to_string(scan.pixel_type));
  wire->set_already_linear(scan.already_linear);
  wire->set_dark_count(static_cast<std::uint32_t>(scan.dark_count));
  wire->set_flat_count(static_cast<std::uint32_t>(scan.flat_count));
  // Line integrals are taken over millimetres (the geometry's unit), so slices hold 1/mm.
  wire->set_value_units("1/mm");
}

void encode_scan_record(const ScanRecord& record, v1::ScanRecord* wire) {
  wire->set_scan_id(record.scan_id);
  wire->set_number(record.number);
  wire->set_ended(record.ended);
  wire->set_end_reason(record.end_reason);
  wire->set_superseded_by(record.superseded_by);
  wire->set_darks_accepted(record.darks_accepted);
  wire->set_flats_accepted(record.flats_accepted);
  wire->set_projections_accepted(record.projections_accepted);
  wire->set_projections_integrated(record.projections_integrated);
  for (const auto& [reason, count] : record.discards)
    (*wire->mutable_discards())[reason] = count;
  wire->set_last_frame_age_s(record.last_frame_age_s);
  wire->set_reconstructed(record.reconstructed);
}

}  // namespace slicestream

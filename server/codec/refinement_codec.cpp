#include "server/codec/refinement_codec.hpp"

#include <string>

#include "wire/wire_text.hpp"

namespace slicestream {
namespace {

// The table's value of a non-empty name, else a bad_value refusal naming the field.
template <typename Enum, std::size_t N>
std::optional<WireError> parse_name(const std::string& name, const NameTable<Enum, N>& table,
                                    const char* field, Enum* value) {
  const std::optional<Enum> parsed = value_in(table, name);
  if (!parsed) {
    return invalid(wire_reason::kBadValue, std::string(field) + " \"" + escape_wire_text(name, 64) +
                                               "\" is not one of " + names_in(table, ", "));
  }
  *value = *parsed;
  return std::nullopt;
}

}  // namespace

Decoded<RefinementSettings> decode_refinement_settings(const v1::RefinementSettings& wire) {
  RefinementSettings settings;
  if (!wire.method().empty()) {
    if (auto e = parse_name(wire.method(), kMethodNames, "method", &settings.method)) return *e;
  }
  if (!wire.regularizer().empty()) {
    solvers::Regularizer regularizer{};
    if (auto e = parse_name(wire.regularizer(), kRegularizerNames, "regularizer", &regularizer)) {
      return *e;
    }
    settings.regularizer = regularizer;
  }
  if (!wire.stop().empty()) {
    if (auto e = parse_name(wire.stop(), kStopRuleNames, "stop", &settings.stop)) return *e;
  }
  if (wire.has_weight()) settings.weight = wire.weight();
  if (wire.has_non_negative()) settings.non_negative = wire.non_negative();
  if (wire.has_discrepancy_factor()) settings.discrepancy_factor = wire.discrepancy_factor();
  return settings;
}

void encode_refinement_settings(const RefinementSettings& settings, v1::RefinementSettings* wire) {
  wire->set_method(to_string(settings.method));
  wire->set_regularizer(to_string(regularizer_of(settings)));
  wire->set_weight(weight_of(settings));
  wire->set_non_negative(settings.non_negative);
  wire->set_stop(to_string(settings.stop));
  wire->set_discrepancy_factor(settings.discrepancy_factor);
}

void encode_refinement_summary(const RefinementSummary& summary, v1::RefinementSummary* wire) {
  wire->set_method(summary.method);
  wire->set_regularizer(summary.regularizer);
  wire->set_weight(summary.weight);
  wire->set_non_negative(summary.non_negative);
  wire->set_stop_reason(summary.stop_reason);
  if (summary.noise_level >= 0) wire->set_noise_level(summary.noise_level);
  wire->set_target_residual(summary.target_residual);
}

}  // namespace slicestream

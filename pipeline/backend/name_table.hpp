// An enum's one table of names: what logs, events, flags, config keys and docs call its values.
// to_string and parsing both read it, so a name cannot be written two ways.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace slicestream {

template <typename Enum, std::size_t N>
using NameTable = std::array<std::pair<Enum, const char*>, N>;

template <typename Enum, std::size_t N>
const char* name_in(const NameTable<Enum, N>& table, Enum value) {
  for (const auto& [entry, name] : table) {
    if (entry == value) return name;
  }
  return "unknown";
}

template <typename Enum, std::size_t N>
std::optional<Enum> value_in(const NameTable<Enum, N>& table, std::string_view name) {
  for (const auto& [entry, entry_name] : table) {
    if (name == entry_name) return entry;
  }
  return std::nullopt;
}

// "a|b|c": the names in table order, for help texts and error messages.
template <typename Enum, std::size_t N>
std::string names_in(const NameTable<Enum, N>& table, std::string_view separator = "|") {
  std::string names;
  for (const auto& [entry, name] : table) {
    if (!names.empty()) names += separator;
    names += name;
  }
  return names;
}

}  // namespace slicestream

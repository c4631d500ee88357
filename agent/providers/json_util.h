// agent/providers/json_util.h: non-throwing accessors for JSON that came off the wire.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace moat::agent::providers {

using nlohmann::json;

// A provider (or anything claiming to be one) controls every byte of the stream, so no
// accessor may assume a field's presence or type: these return nothing instead of throwing.
inline const json* field(const json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}
inline std::optional<std::string> string_field(const json& j, std::string_view key) {
  const json* f = field(j, key);
  if (f == nullptr || !f->is_string()) return std::nullopt;
  return f->get<std::string>();
}
inline std::optional<int64_t> int_field(const json& j, std::string_view key) {
  const json* f = field(j, key);
  if (f == nullptr || !f->is_number()) return std::nullopt;
  if (f->is_number_float()) return static_cast<int64_t>(f->get<double>());
  return f->get<int64_t>();
}
// The value at j[key] as it was sent, or JSON null when absent.
inline json raw_field(const json& j, std::string_view key) {
  const json* f = field(j, key);
  return f == nullptr ? json(nullptr) : *f;
}
inline json int_or_null(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }
// Parses without exceptions; nullopt when the text is not JSON.
inline std::optional<json> parse_json(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

}  // namespace moat::agent::providers

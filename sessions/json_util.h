// sessions/json_util.h: exception-free access to nlohmann::json for data read from disk.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace moat::sessions {

// Parses one JSON text without throwing; a discarded value (is_discarded()) on error.
inline nlohmann::json parse_json(std::string_view text) {
  return nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
}

// Compact serialisation that never throws: invalid UTF-8 in a string becomes U+FFFD.
inline std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// j[key] when j is an object and the member is a string; "" otherwise.
inline std::string str_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

// j[key] when j is an object and the member is an integer; `fallback` otherwise.
inline int64_t int_field(const nlohmann::json& j, const char* key, int64_t fallback = 0) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return fallback;
  return it->get<int64_t>();
}

}  // namespace moat::sessions

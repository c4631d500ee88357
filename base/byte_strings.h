// base/byte_strings.h: host bytes that are not UTF-8 carried through JSON without change.
//
// Paths, argv words and commands are bytes on the host; JSON text (and nlohmann's dump) holds
// only UTF-8. A dump that replaces an invalid byte with U+FFFD changes a path: what one side
// judged is then not what the other side does. A string value that is not well-formed UTF-8 is
// written instead as the object {"bytes": "<standard base64 of its exact bytes>"} (ripgrep's
// --json convention, also the audit log's: docs/sessions.md), and decoded back on receipt.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "base/base64.h"
#include "base/utf8.h"

namespace moat {

// `value` with every string value (at any depth) that is not UTF-8 replaced by
// {"bytes": base64}. Object keys are left as they are (moat's own names).
inline nlohmann::json encode_byte_strings(nlohmann::json value) {
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (is_utf8(s)) return value;
    return {{"bytes", base64_encode(s)}};
  }
  if (value.is_object() || value.is_array())
    for (auto& member : value) member = encode_byte_strings(std::move(member));
  return value;
}

// The first string value (at any depth) that is not UTF-8, for a channel that cannot carry it
// and must refuse rather than send another string in its place.
inline std::optional<std::string> first_non_utf8_string(const nlohmann::json& value) {
  if (value.is_string() && !is_utf8(value.get_ref<const std::string&>()))
    return value.get<std::string>();
  if (value.is_object() || value.is_array())
    for (const auto& member : value)
      if (auto bad = first_non_utf8_string(member)) return bad;
  return std::nullopt;
}

// The exact bytes an {"bytes": base64} object stands for; nullopt for any other value, and
// for base64 that is not the canonical encoding of what it decodes to.
inline std::optional<std::string> byte_string_of(const nlohmann::json& value) {
  if (!value.is_object() || value.size() != 1 || !value.contains("bytes") ||
      !value["bytes"].is_string())
    return std::nullopt;
  const std::string& text = value["bytes"].get_ref<const std::string&>();
  std::string bytes = base64_decode(text);
  if (base64_encode(bytes) != text) return std::nullopt;
  return bytes;
}

// The inverse of encode_byte_strings: each {"bytes": base64} object becomes its string. Only
// for moat's own channels, whose values hold no such object otherwise (tool arguments are
// validated against schemas that allow no extra members before they are sent).
inline nlohmann::json decode_byte_strings(nlohmann::json value) {
  if (auto bytes = byte_string_of(value)) return *bytes;
  if (value.is_object() || value.is_array())
    for (auto& member : value) member = decode_byte_strings(std::move(member));
  return value;
}

// A dump that never throws and never changes a byte: decode_byte_strings(parse(it)) == j.
inline std::string dump_lossless(const nlohmann::json& j, int indent = -1) {
  return encode_byte_strings(j).dump(indent);
}

}  // namespace moat

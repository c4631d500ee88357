// sessions/byte_strings.cc: the {"bytes": base64} form of non-UTF-8 strings (see the header).
#include "sessions/byte_strings.h"

#include <cstdio>
#include <string_view>

#include "base/base64.h"
#include "sessions/jcs.h"

namespace moat::sessions {
namespace {

// The length of the valid UTF-8 sequence at the start of `s`, 0 if there is none.
std::size_t utf8_sequence_length(std::string_view s) {
  for (std::size_t len = 1; len <= 4 && len <= s.size(); ++len)
    if (is_utf8(s.substr(0, len))) return len;
  return 0;
}

}  // namespace

nlohmann::json encode_byte_strings(nlohmann::json value) {
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    if (is_utf8(s)) return value;
    return {{"bytes", base64_encode(s)}};
  }
  if (value.is_object() || value.is_array())
    for (auto& member : value) member = encode_byte_strings(std::move(member));
  return value;
}

std::string display_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_object() || value.size() != 1 || !value.contains("bytes") || !value["bytes"].is_string())
    return "";
  const std::string bytes = base64_decode(value["bytes"].get<std::string>());
  std::string out;
  std::string_view rest(bytes);
  while (!rest.empty()) {
    if (const std::size_t n = utf8_sequence_length(rest); n > 0) {
      out += rest.substr(0, n);
      rest.remove_prefix(n);
      continue;
    }
    char esc[8];
    std::snprintf(esc, sizeof esc, "\\x%02x", static_cast<unsigned char>(rest[0]));
    out += esc;
    rest.remove_prefix(1);
  }
  return out;
}

}  // namespace moat::sessions

// sessions/byte_strings.cc: the {"bytes": base64} form of non-UTF-8 strings (see the header).
#include "sessions/byte_strings.h"

#include "base/base64.h"
#include "base/utf8.h"

namespace moat::sessions {

std::string display_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_object() || value.size() != 1 || !value.contains("bytes") ||
      !value["bytes"].is_string())
    return "";
  return hex_escape_non_utf8(base64_decode(value["bytes"].get<std::string>()));
}

}  // namespace moat::sessions

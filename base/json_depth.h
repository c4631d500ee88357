// base/json_depth.h: how deep a JSON text nests, read on its raw bytes before any parser sees
// it. nlohmann's parser recurses once per level, so text from a client or a server (moatd's
// frames, an MCP server's lines) is refused over its bound without building anything.
#pragma once

#include <cstddef>
#include <string_view>

namespace moat {

// True when `text` nests arrays and objects deeper than `max`. Brackets inside strings do not
// count, and a closing bracket never takes the count below zero (a stray one cannot buy depth).
inline bool json_nests_deeper_than(std::string_view text, std::size_t max) {
  std::size_t depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max) return true;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return false;
}

}  // namespace moat

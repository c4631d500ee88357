// base/lf_lines.h: bytes that arrive in pieces (a pipe, a terminal), taken a LF-ended line at
// a time.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace moat {

// Appends `bytes` to `pending` and calls `take(line)` (the line without its LF) for each line
// they complete, in order; what follows the last LF stays in `pending` for the next piece.
template <typename Take>
void take_lf_lines(std::string& pending, std::string_view bytes, Take&& take) {
  pending.append(bytes);
  std::size_t start = 0;
  for (std::size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1)
    take(pending.substr(start, nl - start));
  pending.erase(0, start);
}

}  // namespace moat

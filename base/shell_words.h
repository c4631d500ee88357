// base/shell_words.h: argv words written as a POSIX shell line that means exactly them, for a
// policy that judges command lines and for what people read.
#pragma once

#include <string>
#include <vector>

namespace moat {

// Always single-quoted, even a plain word: `'FOO=bar'` is a word, where a bare `FOO=bar`
// before a command would be read as an assignment, and judged as one.
inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

inline std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + shell_quote(w);
  return out;
}

}  // namespace moat

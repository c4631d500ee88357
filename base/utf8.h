// base/utf8.h: well-formed UTF-8, and host bytes that are not, shown as \xNN.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace moat {

// The length of the well-formed UTF-8 sequence at the start of `s` (RFC 3629: no overlong
// forms, surrogates or code points past U+10FFFF), 0 if there is none.
inline std::size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong below
    if (c == 0xED) hi = 0x9F;  // UTF-16 surrogates above
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong below
    if (c == 0xF4) hi = 0x8F;  // past U+10FFFF above
  }
  if (n == 0 || s.size() < n || b(1) < lo || b(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i)
    if ((b(i) & 0xC0) != 0x80) return 0;
  return n;
}

inline bool is_utf8(std::string_view s) {
  while (!s.empty()) {
    const std::size_t n = utf8_sequence_length(s);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

// Appends the byte as \xNN: how text shown to a person (quoted(), a session's one-line views)
// writes a byte that must not reach the terminal as it is.
inline void append_hex_escape(std::string& out, unsigned char c) {
  char esc[8];
  std::snprintf(esc, sizeof esc, "\\x%02x", c);
  out += esc;
}

// `s` with each byte that is not part of well-formed UTF-8 written as \xNN: a path or word
// shown to a person stays distinct from its neighbours, where U+FFFD would merge them.
inline std::string hex_escape_non_utf8(std::string_view s) {
  std::string out;
  while (!s.empty()) {
    if (const std::size_t n = utf8_sequence_length(s); n > 0) {
      out += s.substr(0, n);
      s.remove_prefix(n);
      continue;
    }
    append_hex_escape(out, static_cast<unsigned char>(s[0]));
    s.remove_prefix(1);
  }
  return out;
}

}  // namespace moat

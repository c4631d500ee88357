// tools/glob.cc: a backtracking matcher; patterns are short, paths are single file names
// or relative paths.
#include "tools/glob.h"

namespace moat::tools {
namespace {

// Matches a [...] class at p[i] against c; sets *next past the class. A malformed class
// (no closing ']') matches a literal '['.
bool match_class(std::string_view p, std::size_t i, char c, std::size_t* next) {
  std::size_t j = i + 1;
  bool negate = j < p.size() && (p[j] == '!' || p[j] == '^');
  if (negate) ++j;
  bool matched = false;
  bool first = true;
  for (; j < p.size() && (first || p[j] != ']'); first = false) {
    char lo = p[j];
    if (lo == '\\' && j + 1 < p.size()) lo = p[++j];
    char hi = lo;
    if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
      hi = p[j + 2];
      if (hi == '\\' && j + 3 < p.size()) hi = p[++j + 2];
      j += 2;
    }
    if (c >= lo && c <= hi) matched = true;
    ++j;
  }
  if (j >= p.size()) {  // unterminated: a literal '['
    *next = i + 1;
    return c == '[';
  }
  *next = j + 1;
  return matched != negate && c != '/';
}

bool match_at(std::string_view p, std::size_t pi, std::string_view s, std::size_t si) {
  while (pi < p.size()) {
    const char pc = p[pi];
    if (pc == '*') {
      const bool dstar = pi + 1 < p.size() && p[pi + 1] == '*' && (pi == 0 || p[pi - 1] == '/') &&
                         (pi + 2 == p.size() || p[pi + 2] == '/');
      if (dstar) {
        // "**/" also matches zero directories; a trailing "**" matches everything below.
        if (pi + 2 == p.size()) return true;
        for (std::size_t k = si; k <= s.size(); ++k)
          if ((k == si || s[k - 1] == '/') && match_at(p, pi + 3, s, k)) return true;
        return false;
      }
      for (std::size_t k = si; k <= s.size(); ++k) {
        if (match_at(p, pi + 1, s, k)) return true;
        if (k < s.size() && s[k] == '/') return false;
      }
      return false;
    }
    if (si >= s.size()) return false;
    if (pc == '?') {
      if (s[si] == '/') return false;
      ++pi;
      ++si;
    } else if (pc == '[') {
      std::size_t next = 0;
      if (!match_class(p, pi, s[si], &next)) return false;
      pi = next;
      ++si;
    } else {
      char lit = pc;
      if (pc == '\\' && pi + 1 < p.size()) lit = p[++pi];
      if (s[si] != lit) return false;
      ++pi;
      ++si;
    }
  }
  return si == s.size();
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view path) {
  return match_at(pattern, 0, path, 0);
}

bool glob_match_relative(std::string_view pattern, std::string_view rel) {
  if (!pattern.empty() && pattern.back() == '/') pattern.remove_suffix(1);
  if (pattern.find('/') == std::string_view::npos) {
    const std::size_t slash = rel.rfind('/');
    return glob_match(pattern, slash == std::string_view::npos ? rel : rel.substr(slash + 1));
  }
  if (pattern.front() == '/') pattern.remove_prefix(1);
  return glob_match(pattern, rel);
}

}  // namespace moat::tools

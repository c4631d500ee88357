// base/glob.cc: the glob engine (see glob.h), written out so the semantics are ours: fnmatch's
// FNM_PATHNAME cannot express "**", and without it '*' crosses '/'.
#include "base/glob.h"

namespace moat::glob {
namespace {

// Matches one bracket expression at pattern[pi] ('[' already seen) against c. Returns the
// index after ']' in `next`, or npos in `next` when the bracket is unterminated (then '['
// is literal).
bool bracket_matches(std::string_view p, std::size_t pi, unsigned char c, std::size_t& next) {
  std::size_t i = pi + 1;
  bool negate = false;
  if (i < p.size() && (p[i] == '!' || p[i] == '^')) {
    negate = true;
    ++i;
  }
  bool matched = false;
  bool first = true;
  while (i < p.size() && (p[i] != ']' || first)) {
    first = false;
    unsigned char lo = static_cast<unsigned char>(p[i]);
    if (lo == '\\' && i + 1 < p.size()) lo = static_cast<unsigned char>(p[++i]);
    unsigned char hi = lo;
    if (i + 2 < p.size() && p[i + 1] == '-' && p[i + 2] != ']') {
      hi = static_cast<unsigned char>(p[i + 2]);
      i += 2;
    }
    if (c >= lo && c <= hi) matched = true;
    ++i;
  }
  if (i >= p.size()) {
    next = std::string_view::npos;
    return false;
  }
  next = i + 1;
  return matched != negate;
}

// A plain loop: find_first_of with a character set calls memchr once per byte of `p`, and
// this check runs for every pattern of every rule on every word (it was a tenth of
// decide_command's time).
bool is_literal_pattern(std::string_view p) {
  for (char c : p)
    if (c == '*' || c == '?' || c == '[' || c == '\\') return false;
  return true;
}

}  // namespace

bool has_glob_chars(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

bool word_matches(std::string_view p, std::string_view w) {
  if (is_literal_pattern(p)) return p == w;  // most patterns are words
  std::size_t pi = 0, wi = 0;
  std::size_t star_p = std::string_view::npos, star_w = 0;
  while (wi < w.size()) {
    if (pi < p.size()) {
      char c = p[pi];
      if (c == '*') {
        star_p = pi++;
        star_w = wi;
        continue;
      }
      if (c == '?') {
        ++pi;
        ++wi;
        continue;
      }
      if (c == '[') {
        std::size_t next = 0;
        bool ok = bracket_matches(p, pi, static_cast<unsigned char>(w[wi]), next);
        if (next != std::string_view::npos) {
          if (ok) {
            pi = next;
            ++wi;
            continue;
          }
        } else if (w[wi] == '[') {
          ++pi;
          ++wi;
          continue;
        }
      } else {
        if (c == '\\' && pi + 1 < p.size()) c = p[pi + 1];
        if (c == w[wi]) {
          pi += (p[pi] == '\\' && pi + 1 < p.size()) ? 2 : 1;
          ++wi;
          continue;
        }
      }
    }
    if (star_p == std::string_view::npos) return false;
    pi = star_p + 1;
    wi = ++star_w;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

namespace {

void split_path_into(std::string_view path, std::vector<std::string_view>& out) {
  out.clear();
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    std::size_t start = i;
    while (i < path.size() && path[i] != '/') ++i;
    if (i > start) out.push_back(path.substr(start, i - start));
  }
}

}  // namespace

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> out;
  split_path_into(path, out);
  return out;
}

// The buffers are reused per thread: the search tools and the masker match patterns against
// every entry of a tree, and two allocations per match doubled its cost.
bool path_matches(std::string_view pattern, std::string_view path, PathMatch how) {
  thread_local std::vector<std::string_view> pattern_parts;
  split_path_into(pattern, pattern_parts);
  return path_matches_parts(pattern_parts, path, how);
}

bool path_matches_parts(const std::vector<std::string_view>& pattern, std::string_view path,
                        PathMatch how) {
  thread_local std::vector<std::string_view> path_parts;
  split_path_into(path, path_parts);
  return parts_match(pattern, 0, path_parts, 0, how);
}

}  // namespace moat::glob

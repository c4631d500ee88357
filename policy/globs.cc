// policy/globs.cc: word and path glob matching, written out so the semantics are ours
// (fnmatch's FNM_PATHNAME cannot express "**", and gitignore's rules are subtle).
#include "policy/globs.h"

namespace moat::policy {
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

// Component-wise matching. `open_end`: the path stops early but may continue (used by
// may_match_under).
bool match_parts(const std::vector<std::string>& pat, std::size_t pi,
                 const std::vector<std::string_view>& path, std::size_t qi, bool open_end) {
  while (pi < pat.size()) {
    if (pat[pi] == "**") {
      if (pi + 1 == pat.size()) return true;
      for (std::size_t k = qi; k <= path.size(); ++k)
        if (match_parts(pat, pi + 1, path, k, open_end)) return true;
      return false;
    }
    if (qi == path.size()) return open_end;
    if (!word_glob_matches(pat[pi], path[qi])) return false;
    ++pi;
    ++qi;
  }
  return qi == path.size();
}

bool is_var_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

bool has_glob_chars(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

// A plain loop: find_first_of with a character set calls memchr once per byte of `p`, and
// this check runs for every pattern of every rule on every word (it was a tenth of
// decide_command's time).
namespace {
bool is_literal_pattern(std::string_view p) {
  for (char c : p)
    if (c == '*' || c == '?' || c == '[' || c == '\\') return false;
  return true;
}
}  // namespace

bool word_glob_matches(std::string_view p, std::string_view w) {
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

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    std::size_t start = i;
    while (i < path.size() && path[i] != '/') ++i;
    if (i > start) out.push_back(path.substr(start, i - start));
  }
  return out;
}

Result<PathGlob> compile_path_glob(std::string_view pattern, const PathVars& vars) {
  PathGlob g;
  g.text = std::string(pattern);
  std::string expanded;
  if (pattern == "~" || pattern.substr(0, 2) == "~/") {
    if (vars.home.empty()) return fail("path \"" + g.text + "\": no home directory to expand ~");
    expanded = vars.home + std::string(pattern.substr(1));
  } else if (!pattern.empty() && pattern[0] == '$') {
    bool braced = pattern.size() > 1 && pattern[1] == '{';
    std::size_t start = braced ? 2 : 1, end = start;
    while (end < pattern.size() && is_var_char(pattern[end])) ++end;
    std::string name(pattern.substr(start, end - start));
    if (braced) {
      if (end >= pattern.size() || pattern[end] != '}')
        return fail("path \"" + g.text + "\": unterminated ${");
      ++end;
    }
    std::string value;
    if (name == "WORKSPACE") {
      value = vars.workspace;
    } else if (name == "HOME") {
      value = vars.home;
    } else if (auto it = vars.vars.find(name); it != vars.vars.end()) {
      value = it->second;
    } else {
      std::string accepted = "$WORKSPACE, $HOME";
      for (const auto& entry : vars.vars) accepted += ", $" + entry.first;
      return fail("path \"" + g.text + "\": unknown variable $" + name + "; accepted: " + accepted);
    }
    if (value.empty() || value[0] != '/')
      return fail("path \"" + g.text + "\": $" + name + " is not set to an absolute path");
    expanded = value + std::string(pattern.substr(end));
  } else if (!pattern.empty() && pattern[0] == '/') {
    expanded = std::string(pattern);
  } else {
    std::string_view body = pattern;
    if (body.size() > 1 && body.back() == '/') body.remove_suffix(1);
    if (body.find('/') == std::string_view::npos) {
      expanded = "/**/" + std::string(pattern);
    } else {
      if (vars.workspace.empty())
        return fail("path \"" + g.text + "\": relative pattern but no workspace to anchor it");
      expanded = vars.workspace + "/" + std::string(pattern);
    }
  }
  if (!expanded.empty() && expanded.back() == '/') expanded += "**";
  for (auto part : split_path(expanded)) {
    if (part == ".") continue;
    if (part == "..") return fail("path \"" + g.text + "\": \"..\" is not accepted in patterns");
    g.parts.emplace_back(part);
  }
  return g;
}

bool path_glob_matches(const PathGlob& glob, std::string_view path) {
  return match_parts(glob.parts, 0, split_path(path), 0, false);
}

bool path_glob_matches_parts(const PathGlob& glob, const std::vector<std::string_view>& parts) {
  return match_parts(glob.parts, 0, parts, 0, false);
}

bool path_glob_may_match_under(const PathGlob& glob, std::string_view dir) {
  return match_parts(glob.parts, 0, split_path(dir), 0, true);
}

bool path_glob_covers_all_under(const PathGlob& glob, std::string_view dir) {
  // A sentinel component that only wildcards match stands for "any name".
  static const std::string kAnyName = "\x01";
  auto parts = split_path(dir);
  parts.push_back(kAnyName);
  return match_parts(glob.parts, 0, parts, 0, false);
}

}  // namespace moat::policy

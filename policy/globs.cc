// policy/globs.cc: expanding and anchoring policy path patterns; base/glob.cc matches them.
#include "policy/globs.h"

namespace moat::policy {
namespace {

bool is_var_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

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
  for (auto part : glob::split_path(expanded)) {
    if (part == ".") continue;
    if (part == "..") return fail("path \"" + g.text + "\": \"..\" is not accepted in patterns");
    g.parts.emplace_back(part);
  }
  return g;
}

bool path_glob_matches(const PathGlob& g, std::string_view path) {
  return glob::parts_match(g.parts, 0, glob::split_path(path), 0);
}

bool path_glob_matches_parts(const PathGlob& g, const std::vector<std::string_view>& parts) {
  return glob::parts_match(g.parts, 0, parts, 0);
}

bool path_glob_may_match_under(const PathGlob& g, std::string_view dir) {
  return glob::parts_match(g.parts, 0, glob::split_path(dir), 0, {.open_end = true});
}

bool path_glob_covers_all_under(const PathGlob& g, std::string_view dir) {
  // A sentinel component that only wildcards match stands for "any name".
  static const std::string kAnyName = "\x01";
  auto parts = glob::split_path(dir);
  parts.push_back(kAnyName);
  return glob::parts_match(g.parts, 0, parts, 0);
}

}  // namespace moat::policy

// policy/globs.h: gitignore-style path patterns of policy rules: "~", "$NAME" and relative
// patterns expanded to absolute ones, matched by the one glob engine (base/glob.h), whose
// word_matches also matches argv words and tool names.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/glob.h"
#include "base/result.h"

namespace moat::policy {

// What a path pattern's "~", "$WORKSPACE" and other "$NAME" prefixes expand to.
struct PathVars {
  std::string home;
  std::string workspace;                    // relative patterns are anchored here
  std::map<std::string, std::string> vars;  // NAME -> absolute path (WORKSPACE and HOME implied)
};

// A compiled gitignore-style pattern over canonical absolute paths:
//  - "*.pem" (no slash): a name at any depth, like "**/*.pem";
//  - ".git/config" (relative with a slash): anchored at the workspace;
//  - "/etc/shadow", "~/.ssh/**", "$WORKSPACE/build/**": anchored where they say;
//  - "**" is any number of components; "dir/**" also covers "dir" itself (a write to the
//    directory entry, such as renaming it, is as dangerous as a write below it);
//  - a trailing "/" means the directory and everything below it.
struct PathGlob {
  std::string text;                // as written, for explain
  std::vector<std::string> parts;  // components of the expanded absolute pattern
};

// Fails when the pattern names an unknown $VAR or is relative with no workspace to anchor it.
Result<PathGlob> compile_path_glob(std::string_view pattern, const PathVars& vars);

// `path` is canonical and absolute ("/a/b"); "/" has no components.
bool path_glob_matches(const PathGlob& glob, std::string_view path);
// The same, for a path already split with glob::split_path (one split for many patterns).
bool path_glob_matches_parts(const PathGlob& glob, const std::vector<std::string_view>& parts);
// True if the pattern matches `dir` or any path below it (a write whose exact target is
// unknown below `dir` might hit it).
bool path_glob_may_match_under(const PathGlob& glob, std::string_view dir);
// True if the pattern matches every path strictly below `dir`.
bool path_glob_covers_all_under(const PathGlob& glob, std::string_view dir);

}  // namespace moat::policy

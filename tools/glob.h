// tools/glob.h: glob matching as git and ripgrep use it (the find pattern, grep's glob and
// .gitignore lines share it, so the built-in search agrees with rg and fd).
#pragma once

#include <string_view>

namespace moat::tools {

// The one engine's glob (base/glob.h): `*` and `?` never match '/'; `**` as a whole component
// ("**/x", "x/**", "a/**/b") spans directories; `[a-z]`, `[!a]`/`[^a]` classes; backslash
// escapes the next character. As in git and ripgrep, "x/**" matches what lies below x, not x.
bool glob_match(std::string_view pattern, std::string_view path);

// The rule rg -g and .gitignore share: a pattern without '/' matches the last component of
// `rel` at any depth; with one, it matches the whole relative path (a leading '/' only
// anchors).
bool glob_match_relative(std::string_view pattern, std::string_view rel);

}  // namespace moat::tools

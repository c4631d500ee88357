// tools/glob.cc: the search tools' reading of a glob, on the one engine (base/glob.h).
#include "tools/glob.h"

#include "base/glob.h"

namespace moat::tools {

bool glob_match(std::string_view pattern, std::string_view path) {
  // git's and ripgrep's "dir/**" is what lies below dir, never dir itself.
  return glob::path_matches(pattern, path, {.trailing = glob::TrailingStars::kOnlyBelow});
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

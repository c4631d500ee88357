// base/glob.h: the one glob engine: fnmatch-like words, and paths matched component by
// component with "**" spanning components. The policy's path rules, the sandbox's masker and
// the search tools (find, grep's glob, .gitignore) all match through it, so a glob means one
// thing wherever it is read (POLICY.md "Path globs"; issue 28: three engines disagreed).
#pragma once

#include <string_view>
#include <vector>

namespace moat::glob {

// True if `s` holds a wildcard ('*', '?' or '[').
bool has_glob_chars(std::string_view s);

// fnmatch-like on one word: "*" any run, "?" one byte, "[a-z]"/"[!x]"/"[^x]" a class (an
// unterminated '[' is literal), "\x" literal. '/' is an ordinary byte here.
bool word_matches(std::string_view pattern, std::string_view word);

// The components of a path: "/a//b/" is {"a", "b"}; "/" and "" have none.
std::vector<std::string_view> split_path(std::string_view path);

// What a trailing "**" covers. The policy's "dir/**" also covers "dir" itself (renaming the
// directory is as dangerous as writing below it); git's and ripgrep's "dir/**" is only what
// lies below "dir".
enum class TrailingStars { kCoverTheDirectory, kOnlyBelow };

struct PathMatch {
  TrailingStars trailing = TrailingStars::kCoverTheDirectory;
  // The path stops early but may continue: true if it or any path below it could match.
  bool open_end = false;
};

// Component by component: a "**" component spans any number of components (none included);
// every other component is a word_matches pattern, so "*", "?" and classes never cross a '/'.
// `Part` is std::string or std::string_view (pattern parts are compiled once by the caller).
template <typename Part>
bool parts_match(const std::vector<Part>& pattern, std::size_t pi,
                 const std::vector<std::string_view>& path, std::size_t qi, PathMatch how = {}) {
  while (pi < pattern.size()) {
    if (pattern[pi] == "**") {
      if (pi + 1 == pattern.size())
        return how.trailing == TrailingStars::kCoverTheDirectory || qi < path.size() ||
               how.open_end;
      for (std::size_t k = qi; k <= path.size(); ++k)
        if (parts_match(pattern, pi + 1, path, k, how)) return true;
      return false;
    }
    if (qi == path.size()) return how.open_end;
    if (!word_matches(pattern[pi], path[qi])) return false;
    ++pi;
    ++qi;
  }
  return qi == path.size();
}

// parts_match over split_path(pattern) and split_path(path), for a pattern used once.
bool path_matches(std::string_view pattern, std::string_view path, PathMatch how = {});
// parts_match of a pattern split once against split_path(path).
bool path_matches_parts(const std::vector<std::string_view>& pattern, std::string_view path,
                        PathMatch how = {});

}  // namespace moat::glob

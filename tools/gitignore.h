// tools/gitignore.h: .gitignore semantics (gitignore(5)) for the built-in find, grep and
// ls: the files of the search root's ancestors and of every directory below it, the last
// matching line wins, `!` re-includes, a trailing '/' matches directories only, a '/'
// elsewhere anchors the pattern to its file's directory.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace moat::tools {

class GitIgnore {
 public:
  // Whether `path` (canonical, absolute) is ignored by the .gitignore files of its
  // ancestors. Reads each directory's .gitignore once (inside the sandbox).
  bool is_ignored(const std::string& path, bool is_dir);
  // Whether `path` or any directory between `root` (exclusive) and it is ignored:
  // what a walk from `root` that does not descend into ignored directories would skip.
  bool is_excluded_below(const std::string& root, const std::string& path, bool is_dir);

 private:
  struct Rule {
    std::string pattern;
    bool negate = false;
    bool dir_only = false;
  };
  const std::vector<Rule>& rules_of(const std::string& dir);

  std::map<std::string, std::vector<Rule>> cache_;
  std::map<std::string, bool> dir_excluded_;
};

}  // namespace moat::tools

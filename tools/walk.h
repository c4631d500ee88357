// tools/walk.h: the built-in directory walk of find and grep (runs in the worker): depth
// first, each directory sorted by name, .gitignore respected, .git skipped, symlinks listed
// but never followed (what rg and fd do by default).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tools/gitignore.h"

namespace moat::tools {

enum class EntryType { kFile, kDir, kSymlink, kOther };

struct WalkEntry {
  std::string path;  // absolute
  std::string rel;   // relative to the walk's root
  EntryType type;
};

// Entries below `root` (a canonical directory), at most max_entries.
std::vector<WalkEntry> walk_tree(const std::string& root, GitIgnore& ignore,
                                 std::size_t max_entries = 1'000'000);

// The walk's order: component by component, bytewise ("a/b" < "a-c", since "a" < "a-c").
bool path_less(std::string_view a, std::string_view b);

}  // namespace moat::tools

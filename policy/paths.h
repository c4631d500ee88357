// policy/paths.h: canonical paths for matching: joined to a cwd, ~ expanded, "." "..", "//"
// collapsed, symlinks of the existing part resolved.
#pragma once

#include <string>
#include <string_view>

namespace moat::policy {

// Purely lexical: `path` joined to `cwd` when relative, then "." "..", "//" collapsed.
std::string lexical_absolute(std::string_view path, std::string_view cwd);

// lexical_absolute, then the longest existing prefix is realpath'd (a new file is judged
// by where its parent really is). Paths under /dev and /proc are left lexical: their
// symlinks (/dev/stdout -> /proc/self/fd/1) point at per-process objects.
std::string canonical_path(std::string_view path, std::string_view cwd);

// True if `path` is `root` or below it (both canonical).
bool is_under(std::string_view path, std::string_view root);

std::string_view base_name(std::string_view path);

}  // namespace moat::policy

// tools/diff.h: a unified diff of two texts (edit's result shows what changed).
#pragma once

#include <string>
#include <string_view>

namespace moat::tools {

// `diff -u` style, 3 lines of context, headers "--- a/<path>" / "+++ b/<path>". Lines are
// compared without their '\r', so a CRLF file diffs like an LF one.
std::string unified_diff(std::string_view before, std::string_view after, const std::string& path,
                         std::size_t context = 3);

}  // namespace moat::tools

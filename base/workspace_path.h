// base/workspace_path.h: how moat, moatd and the policy name a workspace, and the one text a
// refused workspace gets wherever it is refused.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace moat {

// "workspace '<path>': <why>", with why's errno kept: the path as it was given (quoted, it is
// untrusted text) and the reason it was refused. moat's command line and moatd's hello both
// refuse through it, so a person sees one shape whichever side said no.
Error workspace_refused(std::string_view path, const Error& why);

// An absolute path whose text is exactly what the kernel walks: no NUL, no ".", ".." or empty
// component, no trailing "/" ("/" itself is not one). moatd refuses any other text for a path it
// resolves (the workspace, a bind's source and target): "." and ".." can be pointed elsewhere by
// a rename between two walks.
bool is_normalized_absolute(std::string_view p);

// realpath(3) as a Result: absolute, with every symlink, "." and ".." resolved; the path must
// exist. Errors: realpath's errno, context "cannot be resolved": the caller names the path and
// the option it came from (a person reads "--bind '/x': cannot be resolved: No such file or
// directory", not a bare "realpath(/x)").
Result<std::string> real_path(const std::string& path);

// The workspace `path` names ("" = the current directory) in the one form moat sends to moatd
// and the policy keys its pins by: its real path, which must be a directory. moatd then opens
// exactly that text with no symlink allowed (sandbox/workspace.h), which a real path passes.
// Errors through workspace_refused: realpath's errno, or ENOTDIR.
Result<std::string> canonical_workspace(const std::string& path);

}  // namespace moat

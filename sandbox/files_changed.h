// sandbox/files_changed.h: a tool call's "files_changed" in its audit record, from the session's
// workspace index (workspace_index.h): every workspace file the call created, modified, deleted
// or renamed, with SHA-256 and size before and after (sessions/audit.h, docs/sessions.md).
#pragma once

#include <nlohmann/json.hpp>

#include "sandbox/session_state.h"

namespace moat::sandbox {

// Diffs the session's index and returns the record's fields: {"files_changed": [{"path",
// "op", "from"?, "before", "after"}], "files_changed_truncated": bool}, paths absolute. With
// no index (or a failed walk), {"files_changed": null, "files_changed_error": why}. A file
// the policy does not let the model read keeps its SHA-256 out of the log ("sha256": null,
// "withheld": why): a digest tells whoever can guess the content that the guess is right.
nlohmann::json files_changed_fields(SessionState& session);

// Removes every `.git` the session created below the workspace root (nested_git.h) unless the
// policy's [workspace] nested_git allows it, and every protected name it created where the
// workspace had none (NestedGitWatch::sweep_created, always), and returns what was found for
// the record: [{"path", "type", "removed", "error"?, "reason"?}], paths absolute, "reason" on
// a protected name's entry; empty when none was found.
nlohmann::json remove_nested_git(SessionState& session);

// What the model and the person read about it: one line per entry; "" for an empty list.
std::string nested_git_note(const nlohmann::json& removed);

// Why: the record's and the note's reason.
inline constexpr const char* kNestedGitReason =
    "a nested .git runs code on the host at the next git command there; the policy's "
    "[workspace] nested_git = \"allow\" keeps it";

// Why a protected name the host had none of (.env, .moat, .git/hooks, ~/.zshrc) is removed
// (NestedGitWatch::sweep_created): the entry's "reason" says it.
inline constexpr const char* kProtectedNameReason =
    "a protected path the workspace did not have may not be created from the sandbox (it is "
    "masked only where it exists)";

}  // namespace moat::sandbox

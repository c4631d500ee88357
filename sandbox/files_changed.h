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

}  // namespace moat::sandbox

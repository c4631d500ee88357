// agent/batch/item.h: one batch item from start to end: a fresh work copy, `moat run
// --headless` in it (its own moatd, sandbox, session and audit log), the check command in the
// sandbox, the patch against the starting commit, and the item's results line.
#pragma once

#include <string>
#include <vector>

#include "agent/batch/env.h"
#include "agent/batch/item_result.h"
#include "agent/batch/manifest.h"

namespace moat::agent::batch {

// Where an item's files go under OUT: patches/ID.patch, items/ID/ (task, logs, sessions,
// audit, the session and audit pages) and work/ID (the work copy, removed at the end).
std::string patch_path(const std::string& out_dir, const std::string& id);
std::string item_dir(const std::string& out_dir, const std::string& id);

// Runs the item and returns its results line (the caller appends to_json of it). Never fails: a
// step that could not be done makes the line's status "error" with the step's message in "reason".
ItemResult run_item(const Item& item, const BatchEnv& env);

}  // namespace moat::agent::batch

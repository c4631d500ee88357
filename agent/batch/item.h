// agent/batch/item.h: one batch item from start to end: a fresh work copy, `moat run
// --headless` in it (its own moatd, sandbox, session and audit log), the check command in the
// sandbox, the patch against the starting commit, and the item's results line.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agent/batch/manifest.h"

namespace moat::agent::batch {

struct BatchEnv {
  std::string moat_bin;                   // the `moat` that runs each item (this one)
  std::string out_dir;                    // absolute
  std::vector<std::string> policy_files;  // the manifest's, for every item's moatd
  // Takes a finished item's work copy away (the runner removes them on a thread of its own:
  // unlinking a tree waits on the disk, not the CPU); empty: removed in place.
  std::function<void(const std::string& work)> discard_work;
  // The most a url repo's checkout may hold (url_clone.h, url_checkout_fits).
  std::int64_t url_checkout_bytes = 0;
  // The check's sandbox reaches the network through moatd's proxy, as an item's agent does,
  // when the batch's policy lets some connection through (policy::Policy::grants_network).
  bool check_network = false;
};

// Where an item's files go under OUT: patches/ID.patch, items/ID/ (task, logs, sessions,
// audit, the session and audit pages) and work/ID (the work copy, removed at the end).
std::string patch_path(const std::string& out_dir, const std::string& id);
std::string item_dir(const std::string& out_dir, const std::string& id);

// Runs the item and returns its results line. Never fails: a step that could not be done
// makes the line's status "error" with the step's message in "reason".
nlohmann::json run_item(const Item& item, const BatchEnv& env);

}  // namespace moat::agent::batch

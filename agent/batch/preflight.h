// agent/batch/preflight.h: what every item of a batch needs, checked once before any starts:
// its model (a replay file, or a provider in config.toml with its API key) and its check
// command (the shell parses it, and the policy lets it run). Found late, such a fault failed
// every item with "moat run exited 2", the cause only in each item's run.log (issue 27 item 10).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/batch/manifest.h"
#include "base/result.h"
#include "policy/policy.h"

namespace moat::agent::batch {

// The layers a batch's own moatds load (an item's agent and check, a url repo's clone): the
// system and user layers, the built-in default and the manifest's files; no project layer, as
// `scratch_dir` (the workspace) is a folder of moat's. Headless: an ask is a deny.
Result<std::unique_ptr<policy::Policy>> load_batch_policy(
    const std::vector<std::string>& policy_files, const std::string& scratch_dir);

// "test.no-make in the cli layer, /path/no-make.toml:2".
std::string rule_text(const policy::RuleRef& r);

// Checks each distinct model and check command of `items` once; the error names the item, the
// model or check, and what is wrong (the caller exits 2 before any item starts).
Result<void> check_before_items(const std::vector<const Item*>& items,
                                const std::vector<std::string>& policy_files,
                                const std::string& scratch_dir);

}  // namespace moat::agent::batch

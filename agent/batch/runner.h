// agent/batch/runner.h: `moat batch`: the manifest's items (or one shard of them), --jobs at
// a time, results appended as each finishes, --resume, the batch-wide cost ceiling, --apply.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace moat::agent::batch {

struct BatchOptions {
  std::string manifest;
  std::string out_dir = "batch-out";
  unsigned jobs = 1;
  bool resume = false;
  bool retry_failed = false;  // with resume: failed and errored items run again
  bool apply = false;
  // With apply: a patch that adds or changes a file a host program runs code from (a results
  // line's "hostExecuted") is applied too; without it, it is named and left for the person.
  bool apply_host_executed = false;
  bool json_events = false;                            // one JSON line per item event on stdout
  std::optional<std::pair<unsigned, unsigned>> shard;  // (I, N)
};

// OUT/batch.json: which items this output is for (the merge's list of what should be there).
inline constexpr const char* kBatchInfoFile = "batch.json";

// Returns moat's exit code: 0 when every item of the shard passed (and, with apply, every patch
// applied), 1 when one failed, was not started (the cost ceiling), could not run or its patch
// did not apply, 2 on usage errors and on what would fail every item (preflight.h).
int run_batch(const BatchOptions& o);

}  // namespace moat::agent::batch

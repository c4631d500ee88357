// agent/batch/merge.h: `moat batch merge OUT...`: the shards' outputs joined into one
// results.jsonl, patches/, items/ and report, naming the manifest's items no shard finished.
#pragma once

#include <string>
#include <vector>

namespace moat::agent::batch {

// Returns moat's exit code: 0 when every item of the manifest has a result, 1 when some are
// missing (listed on stderr and in the report), 2 when an OUT is not a batch output.
int merge_outputs(const std::vector<std::string>& outs, const std::string& dest);

}  // namespace moat::agent::batch

// agent/batch/manifest.h: a batch manifest (TOML) to the list of items `moat batch` runs.
// Unknown keys are errors with file:line:col, like policy files (policy/toml_reader.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace moat::agent::batch {

// Refused before parsing: a manifest lists repositories, it is not a data set.
inline constexpr std::size_t kMaxManifestBytes = 4 << 20;

// Per-item gates, handed to `moat run` (0 = none, except turns).
struct ItemLimits {
  int max_turns = 50;                  // model turns
  std::int64_t max_tokens = 0;         // total tokens
  double max_cost = 0;                 // USD
  std::int64_t max_wall_s = 0;         // the agent's wall time; the item is killed 30 s after it
  std::int64_t check_timeout_s = 600;  // the check command's wall time
};

struct Item {
  std::string id;    // unique, [A-Za-z0-9._-]: names the patch and the item's folder
  std::string path;  // a local repository, absolute; "" for a url repo
  std::string url;   // a repository cloned through moatd's proxy (agent/batch/repo_url.h)
  std::string ref;   // the branch, tag or commit the item starts from; "" = the HEAD
  std::string task;
  std::string model;  // "replay:FILE" with FILE made absolute, or "provider/model"
  std::string check;  // a shell line run in the sandbox after the agent stops; "" = none
  ItemLimits limits;
  int line = 0;  // the [[repo]] table's line in the manifest
};

struct Manifest {
  std::string file;                       // as given
  std::vector<std::string> policy_files;  // absolute; passed to every item's moatd
  double max_total_cost = 0;              // USD over the whole batch; 0 = none
  std::vector<Item> items;                // in manifest order
};

// `dir` is the directory relative paths are resolved against (the manifest's).
Result<Manifest> parse_manifest_text(std::string_view text, const std::string& file,
                                     const std::string& dir);
Result<Manifest> load_manifest(const std::string& path);

// Shard `index` of `count` (0-based): a stable assignment by item id, the same on every
// machine and for any order or subset of the manifest's items.
bool in_shard(const std::string& id, unsigned index, unsigned count);
// "I/N" with 0 <= I < N.
Result<std::pair<unsigned, unsigned>> parse_shard(std::string_view text);

}  // namespace moat::agent::batch

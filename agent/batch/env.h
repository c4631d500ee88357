// agent/batch/env.h: what every item of a batch runs with (the runner fills it; an item and a
// url repo's clone read it).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

}  // namespace moat::agent::batch

// policy/ceilings.h: which layer sets each resource ceiling, for `moat policy list`, `policy
// lint` and the notes that name a limit (issue 27 item 7). The rule is policy.cc's resources():
// the person's (user) layer replaces the built-in default's value, even upwards; the smallest
// value of the system, project and cli layers binds over both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "policy/layer.h"

namespace moat::policy {

struct CeilingSource {
  std::string key;         // the resources key: "wall_time", "pids", ...
  std::int64_t value = 0;  // the effective value (seconds, bytes or a count)
  std::string layer;       // the layer kind that set it, "" for schema.h's default
  std::string file;        // that layer's file, "" for the default
};

// One row per resources key, in schema.h's order.
std::vector<CeilingSource> ceiling_sources(const std::vector<LoadedLayer>& layers);

// The value as a policy file writes it: "10m", "1h", "4GiB", "512".
std::string format_ceiling(const std::string& key, std::int64_t value);

// A layer's ceiling that does not bind, each as "resources.<key> = <value> has no effect: ...".
struct IdleCeiling {
  std::string file;
  std::string message;
};
std::vector<IdleCeiling> idle_ceilings(const std::vector<LoadedLayer>& layers);

}  // namespace moat::policy

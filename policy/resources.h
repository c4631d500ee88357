// policy/resources.h: the sandbox's ceilings on a session as the policy hands them over; below
// schema.h (their defaults) and policy.h (resources()).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>

namespace moat::policy {

// The sandbox's ceilings on a session, combined across the layers: each is the minimum over
// the layers that set it, else its default (kDefaultResources in policy/schema.h).
struct ResourceCeilings {
  std::int64_t wall_time_s = 0;   // resources.wall_time: per call, wall clock
  std::int64_t cpu_time_s = 0;    // resources.cpu_time: per call, CPU
  std::int64_t memory_bytes = 0;  // resources.memory
  std::int64_t pids = 0;          // resources.pids
  std::int64_t output_bytes = 0;  // resources.output: kept per call before it is cut
  std::int64_t file_size = 0;     // resources.file_size: the largest file a call may write
  std::int64_t open_files = 0;    // resources.open_files
  std::int64_t network_connections = 0;  // resources.network_connections: open at once
  std::int64_t network_bytes = 0;        // resources.network_bytes: per session, both ways
  std::int64_t network_idle_s = 0;       // resources.network_idle: per connection
  std::int64_t network_rate = 0;         // resources.network_rate: new connections a second

  // {"wall_time_s":..,"cpu_time_s":..,...}, as `moat policy list --json` prints them.
  nlohmann::json to_json() const {
    return {{"wall_time_s", wall_time_s},     {"cpu_time_s", cpu_time_s},
            {"memory_bytes", memory_bytes},   {"pids", pids},
            {"output_bytes", output_bytes},   {"file_size", file_size},
            {"open_files", open_files},       {"network_connections", network_connections},
            {"network_bytes", network_bytes}, {"network_idle_s", network_idle_s},
            {"network_rate", network_rate}};
  }
};

}  // namespace moat::policy

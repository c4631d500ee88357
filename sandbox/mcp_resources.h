// sandbox/mcp_resources.h: what an MCP server's own `resources` (docs/mcp.md) apply to its
// process: rlimits below the session's (CallLimits, set by its worker before its exec) and,
// where the session has a cgroup, a child cgroup of the session's holding its memory and pids.
// Never wider than the session's: each value is the smaller of the two.
#pragma once

#include <nlohmann/json.hpp>

#include "policy/mcp_servers.h"
#include "policy/resources.h"
#include "sandbox/cgroup.h"
#include "sandbox/init_contract.h"
#include "sandbox/session_description.h"

namespace moat::sandbox {

struct McpServerResources {
  CallLimits rlimits;   // the five rlimit keys, each the smaller of the server's and the session's
  ScopedCgroup cgroup;  // active when its memory or pids went into a child cgroup
  // The mcp.server record's "limits": {"rlimits": {cpu_time, memory, pids, file_size,
  // open_files}, "cgroup": {memory, pids} when one was made, "cgroup_error": why not when the
  // server narrows memory or pids and none could be made}.
  nlohmann::json record;
};

// `session`: the session's ceilings (Policy::resources); `sandbox`: what the session applied
// (its cgroup, the exec watch that places the server in the child before its program runs).
McpServerResources mcp_server_resources(const policy::ResourceCeilings& session,
                                        const SessionDescription& sandbox,
                                        const policy::McpServerConfig& server);

}  // namespace moat::sandbox

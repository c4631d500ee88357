// sandbox/mcp_resources.cc: an MCP server's own resources (see mcp_resources.h).
#include "sandbox/mcp_resources.h"

#include <cstdint>
#include <optional>
#include <string>

namespace moat::sandbox {
namespace {

using nlohmann::json;

// The smaller of the session's ceiling and the server's (0: not set).
std::uint64_t narrower(std::int64_t session, const std::optional<std::int64_t>& server) {
  const auto s = static_cast<std::uint64_t>(session > 0 ? session : 0);
  if (!server || *server <= 0) return s;
  const auto v = static_cast<std::uint64_t>(*server);
  return s == 0 || v < s ? v : s;
}

// True when the server's value is set and below the session's.
bool narrows(std::int64_t session, const std::optional<std::int64_t>& server) {
  return server && *server > 0 && (session <= 0 || *server < session);
}

json rlimits_json(const CallLimits& l) {
  return {{"cpu_time", l.cpu_time_s}, {"memory", l.memory_bytes}, {"pids", l.pids},
          {"file_size", l.file_size}, {"open_files", l.open_files}};
}

// Why the server's memory and pids get no child cgroup, or "" when one can be made.
std::string no_child_cgroup(const SessionDescription& sandbox) {
  if (!sandbox.cgroup || !sandbox.cgroup_dirs)
    return "the session has no cgroup (" +
           (sandbox.layers.skipped.count("cgroup") ? sandbox.layers.skipped.at("cgroup")
                                                   : std::string("none made")) +
           "): rlimits only";
  if (!sandbox.layers.exec_watch.value_or(false))
    return "the session runs without the exec watch, which holds the server's first exec "
           "while it joins its cgroup: rlimits only";
  return "";
}

}  // namespace

McpServerResources mcp_server_resources(const policy::ResourceCeilings& session,
                                        const SessionDescription& sandbox,
                                        const policy::McpServerConfig& server) {
  const policy::Resources& r = server.resources;
  McpServerResources out;
  out.rlimits.cpu_time_s = narrower(session.cpu_time_s, r.cpu_time);
  out.rlimits.memory_bytes = narrower(session.memory_bytes, r.memory);
  out.rlimits.pids = narrower(session.pids, r.pids);
  out.rlimits.file_size = narrower(session.file_size, r.file_size);
  out.rlimits.open_files = narrower(session.open_files, r.open_files);
  out.record = {{"rlimits", rlimits_json(out.rlimits)}};
  if (!narrows(session.memory_bytes, r.memory) && !narrows(session.pids, r.pids))
    return out;  // the session's cgroup bounds it as it bounds every call
  std::string why = no_child_cgroup(sandbox);
  if (why.empty()) {
    auto made = ScopedCgroup::create_child(*sandbox.cgroup_dirs, "mcp-" + server.name,
                                           out.rlimits.memory_bytes, out.rlimits.pids);
    if (made) {
      out.cgroup = std::move(*made);
      out.record["cgroup"] = {{"memory", out.rlimits.memory_bytes}, {"pids", out.rlimits.pids}};
      return out;
    }
    why = made.error().message() + ": rlimits only";
  }
  out.record["cgroup_error"] = why;
  return out;
}

}  // namespace moat::sandbox

// policy/mcp_servers.cc: the effective MCP server list and the annotation hints.
#include "policy/mcp_servers.h"

#include <cstdlib>
#include <map>

#include "policy/mcp_import.h"

namespace moat::policy {
namespace {

std::string where(const SourcePos& p) {
  return p.file + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
}

McpServerConfig config_of(const McpServerDecl& d, const std::string& layer) {
  return McpServerConfig{d.name, d.command, d.url,        d.env, d.read,
                         d.start, d.resources, layer,     d.pos};
}

bool managed_only(const std::vector<LoadedLayer>& layers) {
  for (const auto& l : layers)
    if (l.kind == "system" && l.file.constraints && l.file.constraints->managed_mcp_servers_only)
      return true;
  return false;
}

}  // namespace

Result<std::vector<McpServerConfig>> effective_mcp_servers(const std::vector<LoadedLayer>& layers,
                                                           std::vector<std::string>* notices) {
  const bool managed = managed_only(layers);
  std::vector<McpServerConfig> out;
  std::map<std::string, std::size_t> by_name;
  auto notice = [&](const std::string& s) {
    if (notices != nullptr) notices->push_back(s);
  };
  for (const auto& l : layers) {
    for (const auto& d : l.file.mcp.server) {
      if (managed && l.kind != "system") {
        notice(where(d.pos) + ": MCP server \"" + d.name +
               "\" ignored: the organisation allows only the system layer's servers "
               "(constraints.managed_mcp_servers_only)");
        continue;
      }
      auto [it, fresh] = by_name.emplace(d.name, out.size());
      if (fresh) {
        out.push_back(config_of(d, l.kind));
        continue;
      }
      const McpServerConfig& first = out[it->second];
      if (first.layer == l.kind)
        return fail(where(d.pos) + ": mcp.server.name: \"" + d.name + "\" is already declared in the " +
                    l.kind + " layer at " + where(first.pos) + "; names must be unique in a layer");
      notice(where(d.pos) + ": MCP server \"" + d.name + "\" ignored: the " + first.layer +
             " layer's declaration at " + where(first.pos) + " wins");
    }
  }
  if (out.size() > kMaxMcpServers)
    return fail("more than " + std::to_string(kMaxMcpServers) +
                " MCP servers across the layers; the first extra is " +
                where(out[kMaxMcpServers].pos));
  return out;
}

ToolHints tool_hints(const nlohmann::json& annotations) {
  ToolHints h;
  if (!annotations.is_object()) return h;
  auto flag = [&](const char* key, bool absent) {
    auto it = annotations.find(key);
    return it == annotations.end() || !it->is_boolean() ? absent : it->get<bool>();
  };
  h.read_only = flag("readOnlyHint", false);
  h.destructive = !h.read_only && flag("destructiveHint", true);
  return h;
}

std::map<std::string, std::string> person_env(const std::vector<McpServerConfig>& servers) {
  std::map<std::string, std::string> env;
  for (const McpServerConfig& c : servers)
    for (const std::string& name : c.env)
      if (const char* v = std::getenv(name.c_str()); v != nullptr && takes_person_env(c))
        env[name] = v;
  return env;
}

}  // namespace moat::policy

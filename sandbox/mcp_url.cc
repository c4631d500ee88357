// sandbox/mcp_url.cc: an MCP server reached by url, through the session's proxy (see
// mcp_url.h).
#include "sandbox/mcp_url.h"

#include <cstdlib>
#include <mutex>
#include <utility>

#include "sandbox/net_proxy.h"
#include "tools/mcp_http.h"

namespace moat::sandbox {

namespace mcp = tools::mcp;

namespace {

// The host and port a url names (http:// or https://, the scheme's port when none is given;
// "[v6]" without its brackets, as the [[network]] rules take it); port 0 when it has none.
std::pair<std::string, int> host_port_of(const std::string& url) {
  const auto sep = url.find("://");
  if (sep == std::string::npos) return {"", 0};
  std::string authority = url.substr(sep + 3, url.find_first_of("/?#", sep + 3) - sep - 3);
  authority.erase(0, authority.rfind('@') + 1);
  const auto colon = authority.rfind(':');
  const bool has_port =
      colon != std::string::npos && authority.find(']', colon) == std::string::npos;
  int port = url.compare(0, sep, "https") == 0 ? 443 : 80;
  if (has_port) port = std::atoi(authority.c_str() + colon + 1);
  std::string host = has_port ? authority.substr(0, colon) : authority;
  if (host.size() > 1 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return {host, port};
}

// Why a session without network does not reach `config`'s url: the rule deciding its host.
Error no_network(const policy::Policy& policy, const policy::McpServerConfig& config) {
  const auto [host, port] = host_port_of(config.url);
  const policy::Decision d = policy.decide_network(host, port);
  return Error::msg("mcp server " + config.name + ": url " + config.url +
                    " is not reached: the session has no network, and a url server is reached "
                    "only through the session's proxy; the policy decides " +
                    policy::verdict_name(d.verdict) + " for " + host + ":" +
                    std::to_string(port) + " (rule " + d.deciding.id +
                    "; a headless session's ask is a deny), or the session was started without "
                    "the network");
}

}  // namespace

Result<std::unique_ptr<mcp::Client>> connect_url_server(NetProxy* proxy,
                                                        const policy::Policy& policy,
                                                        const policy::McpServerConfig& config,
                                                        const std::string& call_id,
                                                        const mcp::ServerLimits& limits,
                                                        std::stop_token stop) {
  const std::string who = "mcp server " + config.name + ": ";
  if (proxy == nullptr) return fail(no_network(policy, config));
  auto refused = std::make_shared<LocalRefusal>();
  mcp::HttpOptions o;
  o.url = config.url;
  o.proxy_entry = [proxy, refused, call_id, name = config.name]() -> Result<mcp::ProxyEntry> {
    MOAT_ASSIGN_OR_RETURN(auto local,
                          proxy->open_local({{"call_id", call_id}, {"mcp_server", name}}, refused));
    return mcp::ProxyEntry{std::move(local.socket), local.address};
  };
  MOAT_ASSIGN_OR_RETURN(auto transport, mcp::http_transport(config.name, std::move(o), limits));
  auto client = mcp::Client::start(config.name, std::move(transport), limits, std::move(stop));
  if (client) return client;
  std::lock_guard<std::mutex> lock(refused->mu);
  if (refused->why.empty()) return fail(client.error());
  return fail(who + "url " + config.url + " refused by the session's proxy: " + refused->why);
}

}  // namespace moat::sandbox

// sandbox/mcp_url.cc: an MCP server reached by url, through the session's proxy (see
// mcp_url.h).
#include "sandbox/mcp_url.h"

#include <mutex>

#include "sandbox/net_proxy.h"
#include "tools/mcp_http.h"

namespace moat::sandbox {

namespace mcp = tools::mcp;

Result<std::unique_ptr<mcp::Client>> connect_url_server(NetProxy* proxy,
                                                        const policy::McpServerConfig& config,
                                                        const std::string& call_id,
                                                        const mcp::ServerLimits& limits,
                                                        std::stop_token stop) {
  const std::string who = "mcp server " + config.name + ": ";
  if (proxy == nullptr)
    return fail(who + "url " + config.url +
                " is not reached: the session has no network (no [[network]] rule allows a "
                "connection, or the session was started without the network), and a url server "
                "is reached only through the session's proxy");
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

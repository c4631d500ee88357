// sandbox/mcp_url.h: a session's MCP server declared with a `url` (docs/mcp.md "Servers
// reached by url"): the protocol client (tools/mcp_client.h) over the HTTP transports
// (tools/mcp_http.h), every connection opened through the session's proxy (NetProxy::
// open_local), so the [[network]] rules decide the host and port, the session's network
// limits apply, and each connection is a `net` record naming the server, like a tool's.
#pragma once

#include <memory>
#include <stop_token>
#include <string>

#include "base/result.h"
#include "policy/mcp_servers.h"
#include "policy/policy.h"
#include "tools/mcp_client.h"

namespace moat::sandbox {

class NetProxy;

// Connects and initializes. `proxy` null (the session has no network) refuses the server with
// an error naming the network layer and the rule `policy` decides its host and port by (a
// headless session's ask is a deny, so it leaves no proxy); a connection the proxy refuses
// fails naming its rule. `call_id` names the server's connections in their `net` records
// ("mcp:SERVER#N").
Result<std::unique_ptr<tools::mcp::Client>> connect_url_server(
    NetProxy* proxy, const policy::Policy& policy, const policy::McpServerConfig& config,
    const std::string& call_id, const tools::mcp::ServerLimits& limits, std::stop_token stop);

}  // namespace moat::sandbox

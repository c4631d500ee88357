// tools/mcp_http.h: the MCP client's HTTP transports (tools/mcp_client.h's Transport) over
// libcurl, for a server declared with a `url` (docs/mcp.md "Servers reached by url"):
//
//  - Streamable HTTP (spec 2025-11-25 "Transports"): each message is POSTed to the url with
//    `Accept: application/json, text/event-stream`; the answer is one JSON body, or an event
//    stream of messages (base/sse.h parses it), or 202 for a notification or a response. The
//    `Mcp-Session-Id` the server gives at initialize is sent back on every request, with
//    `MCP-Protocol-Version` after initialize; a GET stream carries the server's own messages
//    (a server that offers none answers 405); close() DELETEs the session.
//  - HTTP+SSE (2024-11-05): a GET of the url opens an event stream whose first `endpoint` event
//    names the URL messages are POSTed to; every message from the server comes on that stream.
//
// kAuto, the default, speaks Streamable HTTP and, when the server answers the first POST
// (initialize) with 400, 404 or 405, falls back to HTTP+SSE at the same url, as the spec's
// "Backwards Compatibility" section says a client should.
//
// Every connection goes to the proxy that HttpOptions::proxy_entry names (moatd: the session's
// proxy, which judges the host and port by the [[network]] rules and records
// the connection); without one (tests only) the url's host is connected to directly. Bounds:
// a message (a JSON body, an event's data) over ServerLimits::max_frame_bytes ends the
// connection; a 404 to a request carrying the session id ends it too (the server forgot the
// session: a new client must initialize again).
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "tools/mcp_client.h"

namespace moat::tools::mcp {

enum class HttpKind {
  kAuto,        // Streamable HTTP, falling back to HTTP+SSE (see above)
  kStreamable,  // 2025-11-25 (and 2025-03-26 on)
  kSse,         // 2024-11-05 HTTP+SSE
};

// A connection's wait for its TCP (and TLS) handshake, proxy included.
inline constexpr std::chrono::milliseconds kHttpConnectTimeout{10000};

// A socket (not yet connected) and the address libcurl connects it to, where an HTTP proxy
// listens (CURLOPT_OPENSOCKETFUNCTION; libcurl 7.88 ignores CURL_SOCKOPT_ALREADY_CONNECTED, so
// an already connected socket cannot be handed over).
struct ProxyEntry {
  UniqueFd socket;
  sockaddr_in address{};
};

struct HttpOptions {
  std::string url;  // http:// or https:// (anything else is refused)
  HttpKind kind = HttpKind::kAuto;
  std::chrono::milliseconds connect_timeout = kHttpConnectTimeout;
  // Where each connection libcurl opens goes instead of the url's host: an HTTP proxy (it gets
  // CONNECT for https, an absolute-URI request for http). Null: direct connections.
  std::function<Result<ProxyEntry>()> proxy_entry;
};

// The transport; nothing is sent before the client's first message. `server` names the
// server in every error ("mcp server NAME: ...").
Result<std::unique_ptr<Transport>> http_transport(const std::string& server, HttpOptions options,
                                                  const ServerLimits& limits);

}  // namespace moat::tools::mcp

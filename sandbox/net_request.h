// sandbox/net_request.h: the head of a request a sandboxed program sends its HTTP proxy, read
// into what the proxy judges (host and port) and what it sends on.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace moat::sandbox {

// The most a request head may take; a longer one is refused (431) before anything is judged.
inline constexpr std::size_t kMaxRequestHead = 16 * 1024;

struct ProxyRequest {
  bool tunnel = false;  // CONNECT: a byte stream (TLS, never decrypted) follows the reply
  bool socks5 = false;  // a SOCKS5 CONNECT (net_socks.h): a tunnel answered in SOCKS5 frames
  std::string method;
  std::string host;  // as the program wrote it; the policy normalises it
  int port = 0;
  // Plain HTTP: the head to send to the server, in origin form ("GET /x HTTP/1.1"), without
  // the Proxy-* and hop-by-hop headers, with "Connection: close" so that one upstream
  // connection carries one request for the host that was judged.
  std::string upstream_head;
};

// Parses a head ending in an empty line. CONNECT takes "host:port"; other methods an
// absolute "http://host[:port]/path" (its Host header, if any, must name the same host) or
// an origin-form path with a Host header. Errors name what was wrong and what is accepted.
Result<ProxyRequest> parse_proxy_request(std::string_view head);

}  // namespace moat::sandbox

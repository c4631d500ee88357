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

// A response head from the server of a plain HTTP request (status line to the empty line),
// as the program gets it: the server's Connection, Keep-Alive and Proxy-Connection headers
// dropped and "Connection: close" added. The proxy judged the connection for one host, and the
// server was asked to close after one request; one that keeps the connection open anyway must
// not lead the program to send its next request, maybe for another host, on this connection
// (RFC 9112 9.6: no request after a close): it opens a new one, judged on its own.
std::string closing_response_head(std::string_view head);
// Whether a response head is an interim one (1xx): the final head follows it.
bool is_interim_response(std::string_view head);

// Parses a head ending in an empty line. CONNECT takes "host:port"; other methods an
// absolute "http://host[:port]/path" (its Host header, if any, must name the same host) or
// an origin-form path with a Host header. Errors name what was wrong and what is accepted.
Result<ProxyRequest> parse_proxy_request(std::string_view head);

}  // namespace moat::sandbox

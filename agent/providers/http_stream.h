// agent/providers/http_stream.h: one streaming HTTP POST over libcurl, with connect and
// idle timeouts and cancellation.
//
// Two builds implement it: http_stream.cc calls libcurl directly (the libraries and tests), and
// http_module_loader.cc, in the `moat` binary, loads that same code from a module on first use
// (http_module_entry.cc): libcurl brings some 30 shared libraries (GnuTLS, Kerberos, LDAP, SSH)
// whose loading and initialisation cost every command, and only an HTTP model provider needs
// them (issue 15: `moat sandbox exec` started in 13 ms before its main()).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace moat::agent::providers {

// The transport's timeouts unless a provider's config says otherwise (docs/config.md:
// connect_timeout_ms, idle_timeout_ms): their one home.
inline constexpr std::chrono::milliseconds kDefaultConnectTimeout{10000};
inline constexpr std::chrono::milliseconds kDefaultIdleTimeout{120000};

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; may hold the API key, never logged
  std::string body;
  std::chrono::milliseconds connect_timeout = kDefaultConnectTimeout;
  // No byte for this long aborts the transfer: a stalled stream must not hang the loop.
  std::chrono::milliseconds idle_timeout = kDefaultIdleTimeout;
  std::stop_token stop;  // stops the transfer at once (it wakes the transfer's poll)
  // Where the transport keeps its open connections (and TLS sessions) between requests, held
  // by the caller (one per provider, one request at a time): the next turn's request goes out
  // on the connection the last one used instead of paying a new TCP and TLS handshake. The
  // transport fills it on first use; releasing it closes the connections. Null: the request
  // gets a connection of its own, closed when it ends.
  std::shared_ptr<void>* connections = nullptr;
};

enum class Transport {
  kOk,             // the server answered; see status
  kConnectFailed,  // DNS, TLS, or the connect timeout
  kRefused,        // the host answered the connect with a refusal: nothing listens there
  kIdleTimeout,    // no byte within idle_timeout
  kCancelled,      // the request's stop was requested
  kStopped,        // on_body asked to stop (the decoder saw a failure)
  kBroken,         // the connection broke mid-transfer
};

struct HttpOutcome {
  Transport transport = Transport::kOk;
  long status = 0;                             // HTTP status, 0 if none arrived
  std::map<std::string, std::string> headers;  // lower-cased names, last value wins
  std::string error_body;                      // the body of a non-2xx answer
  std::string detail;                          // libcurl's description of a transport failure
};

// POSTs the request. A 2xx body goes to on_body as it arrives (return false to stop); any
// other status's body is collected into error_body, since it is JSON, not a stream.
HttpOutcome http_post_stream(const HttpRequest& request,
                             const std::function<bool(std::string_view)>& on_body);

// Makes the transport usable: the module build loads its module here (an error names the paths
// tried and why each failed). Called before the agent drops its privileges and installs its
// seccomp filter, which leave no way to map a library; http_post_stream calls it too.
Result<void> load_http_transport();

}  // namespace moat::agent::providers

// sandbox/net_socks.h: the SOCKS5 side of the session's proxy (RFC 1928): the greeting and the
// CONNECT request a sandboxed program sends, read into the same host and port an HTTP CONNECT
// gives, and the replies. Only "no authentication" and CONNECT are served; with socks5h://
// (ALL_PROXY) the program sends the name and moatd resolves it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "sandbox/net_request.h"

namespace moat::sandbox {

inline constexpr unsigned char kSocks5Version = 0x05;

// SOCKS5 reply codes (RFC 1928, section 6).
enum class SocksReply : unsigned char {
  kSucceeded = 0x00,
  kGeneralFailure = 0x01,
  kNotAllowed = 0x02,  // "connection not allowed by ruleset": a policy refusal
  kHostUnreachable = 0x04,
  kCommandNotSupported = 0x07,
  kAddressTypeNotSupported = 0x08,
};

// Reads exactly n bytes from the program, or fails (closed, timed out).
using ReadExact = std::function<Result<std::string>(std::size_t n)>;

// Reads the greeting (answering it: "no authentication", or 0xFF and an error when the
// program does not offer it) and the request. On an error that has a SOCKS5 answer,
// `*refusal` is set to the reply to send (an unsupported command or address type).
Result<ProxyRequest> read_socks5(const ReadExact& read,
                                 const std::function<void(std::string_view)>& send,
                                 SocksReply* refusal);

// The reply frame: the code, and an unspecified bound address (0.0.0.0:0).
std::string socks5_reply(SocksReply code);

// The reply for a connection the proxy ended with an HTTP status (403, 502, 503, ...).
SocksReply socks5_reply_for_status(int status);

}  // namespace moat::sandbox

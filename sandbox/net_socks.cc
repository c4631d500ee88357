// sandbox/net_socks.cc: SOCKS5 greeting and CONNECT request (see net_socks.h).
#include "sandbox/net_socks.h"

#include <arpa/inet.h>

#include <algorithm>

namespace moat::sandbox {
namespace {

constexpr unsigned char kNoAuth = 0x00, kNoAcceptable = 0xff;
constexpr unsigned char kConnect = 0x01;
constexpr unsigned char kIpv4 = 0x01, kName = 0x03, kIpv6 = 0x04;

unsigned char byte_at(const std::string& s, std::size_t i) {
  return static_cast<unsigned char>(s[i]);
}

Result<void> negotiate(const ReadExact& read, const std::function<void(std::string_view)>& send) {
  MOAT_ASSIGN_OR_RETURN(std::string head, read(2));
  if (byte_at(head, 0) != kSocks5Version) return fail("not a SOCKS5 greeting");
  MOAT_ASSIGN_OR_RETURN(std::string methods, read(byte_at(head, 1)));
  const bool no_auth = std::find(methods.begin(), methods.end(), char(kNoAuth)) != methods.end();
  const char answer[2] = {char(kSocks5Version), char(no_auth ? kNoAuth : kNoAcceptable)};
  send(std::string_view(answer, 2));
  if (!no_auth)
    return fail("the SOCKS5 client offers no method moat serves (only 'no authentication')");
  return {};
}

// The destination: an IPv4 or IPv6 address as text, or the name as sent.
Result<std::string> read_host(const ReadExact& read, unsigned char type, SocksReply* refusal) {
  char text[INET6_ADDRSTRLEN] = {};
  if (type == kIpv4 || type == kIpv6) {
    MOAT_ASSIGN_OR_RETURN(std::string raw, read(type == kIpv4 ? 4 : 16));
    inet_ntop(type == kIpv4 ? AF_INET : AF_INET6, raw.data(), text, sizeof text);
    return std::string(text);
  }
  if (type != kName) {
    *refusal = SocksReply::kAddressTypeNotSupported;
    return fail("SOCKS5 address type " + std::to_string(type) +
                " (accepted: 1 IPv4, 3 a name, 4 IPv6)");
  }
  MOAT_ASSIGN_OR_RETURN(std::string len, read(1));
  if (byte_at(len, 0) == 0) return fail("an empty SOCKS5 host name");
  return read(byte_at(len, 0));
}

}  // namespace

Result<ProxyRequest> read_socks5(const ReadExact& read,
                                 const std::function<void(std::string_view)>& send,
                                 SocksReply* refusal) {
  MOAT_TRY(negotiate(read, send));
  MOAT_ASSIGN_OR_RETURN(std::string req, read(4));
  if (byte_at(req, 0) != kSocks5Version) return fail("not a SOCKS5 request");
  if (byte_at(req, 1) != kConnect) {
    *refusal = SocksReply::kCommandNotSupported;
    return fail("SOCKS5 command " + std::to_string(byte_at(req, 1)) +
                " (only CONNECT, 1, is served: no BIND, no UDP)");
  }
  ProxyRequest out;
  out.tunnel = true;
  out.socks5 = true;
  out.method = "SOCKS5";
  MOAT_ASSIGN_OR_RETURN(out.host, read_host(read, byte_at(req, 3), refusal));
  MOAT_ASSIGN_OR_RETURN(std::string port, read(2));
  out.port = (byte_at(port, 0) << 8) | byte_at(port, 1);
  if (out.port == 0) return fail("SOCKS5 port 0 (the port must be 1 to 65535)");
  return out;
}

std::string socks5_reply(SocksReply code) {
  const char reply[10] = {char(kSocks5Version), char(code), 0, char(kIpv4), 0, 0, 0, 0, 0, 0};
  return std::string(reply, sizeof reply);
}

SocksReply socks5_reply_for_status(int status) {
  switch (status) {
    case 403: return SocksReply::kNotAllowed;
    case 502: return SocksReply::kHostUnreachable;
    default: return SocksReply::kGeneralFailure;
  }
}

}  // namespace moat::sandbox

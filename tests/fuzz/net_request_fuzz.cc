// tests/fuzz/net_request_fuzz.cc: libFuzzer target for what a sandboxed program sends the
// session's network proxy before anything is judged: an HTTP proxy request head
// (parse_proxy_request) and a SOCKS5 greeting and CONNECT request (read_socks5, fed from the
// input by a fake reader). Beyond "no crash", it checks what the proxy relies on:
//   - an accepted request names a host and a port of 1 to 65535;
//   - CONNECT and SOCKS5 are tunnels with no head of their own to send;
//   - a forwarded head is one request in origin form ending in "Connection: close" and one
//     empty line, so nothing the program wrote reaches the server as a second request, and it
//     parses again to the same method, host and port (the server reads the host that was
//     judged: one Host header, naming it);
//   - a SOCKS5 exchange answers the greeting once, with two bytes.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sandbox/net_request.h"
#include "sandbox/net_socks.h"

namespace {

using moat::Result;
using moat::sandbox::ProxyRequest;

void check(bool ok) {
  if (!ok) std::abort();
}

std::string lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

void check_http(std::string_view head) {
  auto req = moat::sandbox::parse_proxy_request(head);
  if (!req) return;
  check(!req->host.empty() && req->port >= 1 && req->port <= 65535);
  check(req->tunnel == (req->method == "CONNECT") && !req->socks5);
  if (req->tunnel) {
    check(req->upstream_head.empty());
    return;
  }
  const std::string& up = req->upstream_head;
  const std::string end = "Connection: close\r\n\r\n";
  check(up.size() > end.size() && up.compare(up.size() - end.size(), end.size(), end) == 0);
  check(up.find("\r\n\r\n") == up.size() - 4);
  check(up.rfind(req->method + " /", 0) == 0);
  auto again = moat::sandbox::parse_proxy_request(up);
  check(again.has_value());
  check(again->method == req->method && lower(again->host) == lower(req->host) &&
        again->port == req->port && again->upstream_head == up);
}

void check_socks(std::string_view input) {
  std::size_t off = 0;
  auto read = [&](std::size_t n) -> Result<std::string> {
    if (input.size() - off < n) return moat::fail("the program closed the connection");
    std::string out(input.substr(off, n));
    off += n;
    return out;
  };
  int answers = 0;
  auto send = [&](std::string_view bytes) {
    check(bytes.size() == 2);
    ++answers;
  };
  auto refusal = moat::sandbox::SocksReply::kGeneralFailure;
  auto req = moat::sandbox::read_socks5(read, send, &refusal);
  check(answers <= 1);
  if (!req) return;
  check(answers == 1 && req->tunnel && req->socks5 && req->method == "SOCKS5");
  check(!req->host.empty() && req->port >= 1 && req->port <= 65535);
  check(req->upstream_head.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // Byte 0 chooses the parser: even for the HTTP head, odd for SOCKS5 (whose first byte, 5,
  // is how the proxy tells them apart).
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  if (rest.size() > moat::sandbox::kMaxRequestHead + 4) return 0;  // the proxy reads no more
  if (data[0] & 1) check_socks(rest);
  else check_http(rest);
  return 0;
}

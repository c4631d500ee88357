// sandbox/net_request.cc: a proxy request head to host, port and upstream head (see
// net_request.h).
#include "sandbox/net_request.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace moat::sandbox {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string_view> split_lines(std::string_view head) {
  std::vector<std::string_view> lines;
  while (!head.empty()) {
    const auto nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (nl == std::string_view::npos) break;
    head.remove_prefix(nl + 1);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

// "host:port", "[v6]:port", or without the port when `default_port` is not 0.
Result<void> split_authority(std::string_view a, int default_port, ProxyRequest& req) {
  std::string_view port;
  if (!a.empty() && a.front() == '[') {
    const auto close = a.find(']');
    if (close == std::string_view::npos) return fail("'" + std::string(a) + "': unclosed '['");
    req.host = std::string(a.substr(0, close + 1));
    if (close + 1 < a.size()) {
      if (a[close + 1] != ':') return fail("'" + std::string(a) + "': expected ':' after ']'");
      port = a.substr(close + 2);
    }
  } else {
    const auto colon = a.rfind(':');
    req.host = std::string(a.substr(0, colon));
    if (colon != std::string_view::npos) port = a.substr(colon + 1);
  }
  // A space or a control byte in a host is never a name or an address; refused here, it can
  // never read differently in the Host header the server gets (which loses surrounding blanks).
  const auto is_blank_or_control = [](char c) { return c <= ' ' || c == '\x7f'; };
  if (req.host.empty() || a.find('@') != std::string_view::npos ||
      std::any_of(req.host.begin(), req.host.end(), is_blank_or_control))
    return fail("'" + std::string(a) + "': expected host[:port]");
  if (port.empty() && default_port == 0)
    return fail("'" + std::string(a) + "': CONNECT needs host:port");
  if (port.empty()) {
    req.port = default_port;
    return {};
  }
  if (port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return fail("'" + std::string(a) + "': the port must be 1 to 65535");
  req.port = std::stoi(std::string(port));
  if (req.port < 1 || req.port > 65535)
    return fail("'" + std::string(a) + "': the port must be 1 to 65535");
  return {};
}

// Hop-by-hop and proxy headers: the proxy's own business, never the server's.
bool is_dropped_header(const std::string& name) {
  static const char* const kDropped[] = {
      "connection",         "keep-alive", "proxy-connection", "proxy-authorization",
      "proxy-authenticate", "te",         "upgrade"};
  return std::any_of(std::begin(kDropped), std::end(kDropped),
                     [&](const char* d) { return name == d; });
}

// Reads the headers after the request line into the upstream head; returns the Host header
// ("" when there is none). An empty Host header is refused: the head would otherwise reach the
// server with it and the one the proxy adds (fuzz: tests/fuzz/net_request_fuzz.cc).
Result<std::string> copy_headers(const std::vector<std::string_view>& lines, std::string& out) {
  std::string host;
  bool seen_host = false;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const auto colon = lines[i].find(':');
    if (colon == std::string_view::npos || colon == 0)
      return fail("header line " + std::to_string(i) + " is not 'Name: value'");
    const std::string name = lower(lines[i].substr(0, colon));
    if (name == "host") {
      if (seen_host) return fail("two Host headers");
      seen_host = true;
      std::string_view v = lines[i].substr(colon + 1);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      if (v.empty()) return fail("an empty Host header");
      host = std::string(v);
    }
    if (!is_dropped_header(name)) out.append(lines[i]).append("\r\n");
  }
  out += "Connection: close\r\n\r\n";
  return host;
}

// Plain HTTP: the absolute or origin-form target, checked against the Host header.
Result<void> read_forward(std::string_view target, std::string_view version,
                          const std::vector<std::string_view>& lines, ProxyRequest& req) {
  std::string path(target);
  std::string authority;
  if (lower(target.substr(0, 7)) == "http://") {
    const auto slash = target.find('/', 7);
    authority =
        std::string(target.substr(7, slash == std::string_view::npos ? target.npos : slash - 7));
    path = slash == std::string_view::npos ? "/" : std::string(target.substr(slash));
  } else if (target.empty() || target.front() != '/') {
    return fail("'" + std::string(target) +
                "': expected an http:// URL (https goes through CONNECT) or a /path");
  }
  req.upstream_head = req.method + " " + path + " " + std::string(version) + "\r\n";
  MOAT_ASSIGN_OR_RETURN(std::string host_header, copy_headers(lines, req.upstream_head));
  if (authority.empty()) {
    if (host_header.empty()) return fail("a /path request needs a Host header");
    authority = host_header;
  }
  MOAT_TRY(split_authority(authority, 80, req));
  if (host_header.empty()) {
    req.upstream_head.insert(req.upstream_head.find("\r\n") + 2, "Host: " + authority + "\r\n");
    return {};
  }
  ProxyRequest named;
  MOAT_TRY(split_authority(host_header, 80, named));
  if (lower(named.host) != lower(req.host) || named.port != req.port)
    return fail("the Host header '" + host_header + "' names another host than the URL");
  return {};
}

}  // namespace

std::string closing_response_head(std::string_view head) {
  const std::vector<std::string_view> lines = split_lines(head);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string name = lower(lines[i].substr(0, lines[i].find(':')));
    if (i > 0 && (name == "connection" || name == "keep-alive" || name == "proxy-connection"))
      continue;
    out.append(lines[i]).append("\r\n");
  }
  return out + "Connection: close\r\n\r\n";
}

bool is_interim_response(std::string_view head) {
  const auto sp = head.find(' ');
  return sp != std::string_view::npos && sp + 1 < head.size() && head[sp + 1] == '1';
}

Result<ProxyRequest> parse_proxy_request(std::string_view head) {
  const std::vector<std::string_view> lines = split_lines(head);
  if (lines.empty()) return fail("empty request");
  const std::string_view line = lines[0];
  const auto sp1 = line.find(' ');
  const auto sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp1 == sp2)
    return fail("request line is not 'METHOD target HTTP/1.x'");
  ProxyRequest req;
  req.method = std::string(line.substr(0, sp1));
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0")
    return fail("'" + std::string(version) + "': accepted versions are HTTP/1.0 and HTTP/1.1");
  if (req.method.empty() || !std::all_of(req.method.begin(), req.method.end(),
                                         [](char c) { return c >= 'A' && c <= 'Z'; }))
    return fail("'" + req.method + "': a method is upper-case letters");
  if (req.method == "CONNECT") {
    req.tunnel = true;
    MOAT_TRY(split_authority(target, 0, req));
    return req;
  }
  MOAT_TRY(read_forward(target, version, lines, req));
  return req;
}

}  // namespace moat::sandbox

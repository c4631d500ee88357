// policy/network.cc: host normalisation, domain patterns and internal address ranges.
#include "policy/network.h"

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <cstring>

namespace moat::policy {
namespace {

struct V4Range {
  std::uint32_t base;
  int bits;
  const char* why;
};

// Ranges a name must not lead to (IANA special-purpose registry, RFC 6890): the proxy runs on
// the host, so each of these would reach the host itself or the networks behind it.
constexpr V4Range kInternalV4[] = {
    {0x00000000, 8, "this network (0/8), unspecified"},
    {0x0A000000, 8, "private (RFC 1918)"},
    {0x64400000, 10, "carrier-grade NAT (RFC 6598)"},
    {0x7F000000, 8, "loopback"},
    {0xA9FE0000, 16, "link-local (cloud metadata lives at 169.254.169.254)"},
    {0xAC100000, 12, "private (RFC 1918)"},
    {0xC0000000, 24, "IETF protocol assignments"},
    {0xC0A80000, 16, "private (RFC 1918)"},
    {0xC6120000, 15, "benchmarking (RFC 2544)"},
    {0xE0000000, 4, "multicast"},
    {0xF0000000, 4, "reserved, broadcast"},
};

bool v4_internal(std::uint32_t a) {
  for (const auto& r : kInternalV4) {
    const std::uint32_t mask = r.bits == 0 ? 0 : ~std::uint32_t{0} << (32 - r.bits);
    if ((a & mask) == r.base) return true;
  }
  return false;
}

bool v6_internal(const std::array<unsigned char, 16>& b) {
  static const unsigned char zero[16] = {};
  if (std::memcmp(b.data(), zero, 15) == 0 && (b[15] == 0 || b[15] == 1)) return true;  // ::, ::1
  // ::ffff:a.b.c.d (IPv4-mapped) and 64:ff9b::a.b.c.d (NAT64) reach the IPv4 address inside.
  static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(b.data(), mapped, 12) == 0 || std::memcmp(b.data(), nat64, 12) == 0) {
    const std::uint32_t v4 = (std::uint32_t{b[12]} << 24) | (std::uint32_t{b[13]} << 16) |
                             (std::uint32_t{b[14]} << 8) | b[15];
    return v4_internal(v4);
  }
  if ((b[0] & 0xfe) == 0xfc) return true;                  // fc00::/7 unique local
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return true;  // fe80::/10 link-local
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return true;  // fec0::/10 site-local (deprecated)
  if (b[0] == 0xff) return true;                           // multicast
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return true;  // documentation
  return false;
}

bool is_name_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

bool is_dns_name(const std::string& h) {
  if (h.empty() || h.size() > 253) return false;
  std::size_t label = 0;
  for (char c : h) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
    } else if (!is_name_byte(c) || ++label > 63) {
      return false;
    }
  }
  return label > 0;
}

}  // namespace

std::optional<std::string> normalize_host(std::string_view in) {
  std::string h(in);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') {
    in6_addr a6;
    if (inet_pton(AF_INET6, h.substr(1, h.size() - 2).c_str(), &a6) != 1) return std::nullopt;
    char buf[INET6_ADDRSTRLEN];
    return std::string(inet_ntop(AF_INET6, &a6, buf, sizeof buf));
  }
  in6_addr a6;
  if (inet_pton(AF_INET6, h.c_str(), &a6) == 1) {
    char buf[INET6_ADDRSTRLEN];
    return std::string(inet_ntop(AF_INET6, &a6, buf, sizeof buf));
  }
  for (char& c : h)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  if (!h.empty() && h.back() == '.') h.pop_back();
  in_addr a4;
  if (inet_pton(AF_INET, h.c_str(), &a4) == 1) return h;  // dotted quad: already canonical
  if (!is_dns_name(h)) return std::nullopt;
  // All-numeric labels ("2130706433", "127.1", "0x7f.1") are addresses to inet_aton and to
  // some resolvers: never a name the policy could have meant.
  const auto last_dot = h.rfind('.');
  const std::string tld = last_dot == std::string::npos ? h : h.substr(last_dot + 1);
  if (tld.find_first_not_of("0123456789") == std::string::npos) return std::nullopt;
  if (tld.size() > 2 && tld[0] == '0' && tld[1] == 'x') return std::nullopt;
  return h;
}

std::optional<std::string> normalize_domain_pattern(std::string_view pattern) {
  if (pattern.substr(0, 2) != "*.") return normalize_host(pattern);
  auto rest = normalize_host(pattern.substr(2));
  if (!rest || is_ip_literal(*rest)) return std::nullopt;
  return "*." + *rest;
}

bool is_ip_literal(const std::string& host) {
  in_addr a4;
  in6_addr a6;
  return inet_pton(AF_INET, host.c_str(), &a4) == 1 || inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

bool is_internal_address(const std::string& ip) {
  in_addr a4;
  if (inet_pton(AF_INET, ip.c_str(), &a4) == 1) return v4_internal(ntohl(a4.s_addr));
  in6_addr a6;
  if (inet_pton(AF_INET6, ip.c_str(), &a6) != 1) return true;  // not an address: refuse
  std::array<unsigned char, 16> b;
  std::memcpy(b.data(), &a6, 16);
  return v6_internal(b);
}

bool domain_matches(const std::string& pattern, const std::string& host) {
  if (pattern.rfind("*.", 0) == 0 && !is_ip_literal(host)) {
    const std::string suffix = pattern.substr(1);  // ".x": at least one label before it
    return host.size() > suffix.size() &&
           host.compare(host.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  return pattern == host;
}

}  // namespace moat::policy

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

// Every range of the IANA IPv4 special-purpose address registry (RFC 6890 and its updates),
// multicast and the reserved rest: the proxy runs on the host, so each of these reaches the
// host itself, the networks behind it, or nothing a sandbox has a reason to reach. A rule that
// names the literal address still reaches it. Ordered by address; the tests check each edge.
constexpr V4Range kInternalV4[] = {
    {0x00000000, 8, "this network (0.0.0.0/8): 0.0.0.0 reaches the host itself"},
    {0x0A000000, 8, "private (10.0.0.0/8, RFC 1918)"},
    {0x64400000, 10, "shared address space (100.64.0.0/10, carrier-grade NAT, RFC 6598)"},
    {0x7F000000, 8, "loopback (127.0.0.0/8)"},
    {0xA9FE0000, 16, "link-local (169.254.0.0/16: cloud metadata at 169.254.169.254)"},
    {0xAC100000, 12, "private (172.16.0.0/12, RFC 1918)"},
    {0xC0000000, 24, "IETF protocol assignments (192.0.0.0/24: DS-Lite, PCP, TURN anycast)"},
    {0xC0000200, 24, "documentation (192.0.2.0/24, TEST-NET-1, RFC 5737)"},
    {0xC01FC400, 24, "AS112 (192.31.196.0/24, RFC 7535): DNS sink anycast"},
    {0xC034C100, 24, "AMT (192.52.193.0/24, RFC 7450): multicast tunnelling anycast"},
    {0xC0586300, 24, "6to4 relay anycast (192.88.99.0/24, deprecated by RFC 7526)"},
    {0xC0A80000, 16, "private (192.168.0.0/16, RFC 1918)"},
    {0xC0AF3000, 24, "AS112 direct delegation (192.175.48.0/24, RFC 7534): DNS sink"},
    {0xC6120000, 15, "benchmarking (198.18.0.0/15, RFC 2544)"},
    {0xC6336400, 24, "documentation (198.51.100.0/24, TEST-NET-2, RFC 5737)"},
    {0xCB007100, 24, "documentation (203.0.113.0/24, TEST-NET-3, RFC 5737)"},
    {0xE0000000, 4, "multicast (224.0.0.0/4)"},
    {0xF0000000, 4, "reserved (240.0.0.0/4) and limited broadcast (255.255.255.255)"},
};

const char* v4_internal(std::uint32_t a) {
  for (const auto& r : kInternalV4) {
    const std::uint32_t mask = r.bits == 0 ? 0 : ~std::uint32_t{0} << (32 - r.bits);
    if ((a & mask) == r.base) return r.why;
  }
  return nullptr;
}

// What an IPv6 range is to the proxy: internal, global, or a carrier of an IPv4 address that
// is what the connection reaches and so what is judged.
enum class V6Kind { kInternal, kGlobal, kV4At12, kV4At2 };

struct V6Range {
  std::array<unsigned char, 16> prefix;
  int bits;
  V6Kind kind;
  const char* why;
};

// The first matching row decides. Global unicast is 2000::/3 (RFC 4291 section 2.4, the IANA
// IPv6 address space): everything outside it is loopback, unspecified, IPv4-compatible,
// reserved, unique-local, link-local, site-local or multicast, or a special-purpose block
// (64:ff9b:1::/48, 100::/64, 100:0:0:1::/64, 5f00::/16), and the last row refuses it all. Inside
// 2000::/3 the IANA IPv6 special-purpose registry's blocks are refused row by row.
constexpr V6Range kRangesV6[] = {
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff},
     96,
     V6Kind::kV4At12,
     "IPv4-mapped (::ffff:0:0/96): reaches the IPv4 address inside"},
    {{0, 0x64, 0xff, 0x9b},
     96,
     V6Kind::kV4At12,
     "NAT64 well-known prefix (64:ff9b::/96, RFC 6052): the translator reaches the IPv4 inside"},
    {{0x20, 0x02},
     16,
     V6Kind::kV4At2,
     "6to4 (2002::/16, RFC 3056): the relay reaches the IPv4 address inside"},
    {{0x20, 0x01},
     23,
     V6Kind::kInternal,
     "IETF protocol assignments (2001::/23: Teredo, benchmarking, ORCHID, AMT, AS112)"},
    {{0x20, 0x01, 0x0d, 0xb8}, 32, V6Kind::kInternal, "documentation (2001:db8::/32, RFC 3849)"},
    {{0x26, 0x20, 0x00, 0x4f, 0x80, 0x00},
     48,
     V6Kind::kInternal,
     "AS112 direct delegation (2620:4f:8000::/48, RFC 7534): DNS sink"},
    {{0x3f, 0xff}, 20, V6Kind::kInternal, "documentation (3fff::/20, RFC 9637)"},
    {{0x20}, 3, V6Kind::kGlobal, "global unicast (2000::/3)"},
    {{},
     0,
     V6Kind::kInternal,
     "outside global unicast (::, ::1, ::/96, 64:ff9b:1::/48, 100::/64, 5f00::/16, fc00::/7 "
     "unique-local, fe80::/10 link-local, fec0::/10 site-local, ff00::/8 multicast, reserved)"},
};

bool has_prefix(const std::array<unsigned char, 16>& b, const V6Range& r) {
  for (int i = 0; i < r.bits; i += 8) {
    const int n = r.bits - i >= 8 ? 8 : r.bits - i;
    const unsigned mask = (0xffu << (8 - n)) & 0xffu;
    if ((b[static_cast<std::size_t>(i / 8)] & mask) !=
        (r.prefix[static_cast<std::size_t>(i / 8)] & mask))
      return false;
  }
  return true;
}

std::uint32_t v4_at(const std::array<unsigned char, 16>& b, std::size_t i) {
  return (std::uint32_t{b[i]} << 24) | (std::uint32_t{b[i + 1]} << 16) |
         (std::uint32_t{b[i + 2]} << 8) | b[i + 3];
}

const char* v6_internal(const std::array<unsigned char, 16>& b) {
  for (const auto& r : kRangesV6) {
    if (!has_prefix(b, r)) continue;
    switch (r.kind) {
      case V6Kind::kInternal: return r.why;
      case V6Kind::kGlobal: return nullptr;
      case V6Kind::kV4At12: return v4_internal(v4_at(b, 12));
      case V6Kind::kV4At2: return v4_internal(v4_at(b, 2));
    }
  }
  return nullptr;  // unreachable: the last row matches every address
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

const char* internal_address_reason(const std::string& ip) {
  in_addr a4;
  if (inet_pton(AF_INET, ip.c_str(), &a4) == 1) return v4_internal(ntohl(a4.s_addr));
  in6_addr a6;
  if (inet_pton(AF_INET6, ip.c_str(), &a6) != 1) return "not an address";  // refuse
  std::array<unsigned char, 16> b;
  std::memcpy(b.data(), &a6, 16);
  return v6_internal(b);
}

bool is_internal_address(const std::string& ip) { return internal_address_reason(ip) != nullptr; }

bool domain_matches(const std::string& pattern, const std::string& host) {
  if (pattern.rfind("*.", 0) == 0 && !is_ip_literal(host)) {
    const std::string suffix = pattern.substr(1);  // ".x": at least one label before it
    return host.size() > suffix.size() &&
           host.compare(host.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  return pattern == host;
}

}  // namespace moat::policy

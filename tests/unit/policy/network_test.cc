// tests/unit/policy/network_test.cc: host normalisation, domain patterns, internal ranges.
#include "policy/network.h"

#include <gtest/gtest.h>

namespace moat::policy {
namespace {

TEST(Network, HostsAreLowerCasedWithoutTheirTrailingDot) {
  EXPECT_EQ(normalize_host("Registry.NPMJS.org."), "registry.npmjs.org");
  EXPECT_EQ(normalize_host("[::1]"), "::1");
  EXPECT_EQ(normalize_host("0:0:0:0:0:0:0:1"), "::1");
  EXPECT_EQ(normalize_host("127.0.0.1"), "127.0.0.1");
}

TEST(Network, AnythingButANameOrAnAddressIsNotAHost) {
  for (const char* bad : {"", ".", "a..b", "exa mple.com", "evil.com/x", "a\nb", "user@host",
                          "2130706433", "127.1", "0x7f.1", "1.2.3.0x4", "[127.0.0.1]"}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(normalize_host(bad).has_value());
  }
  EXPECT_FALSE(normalize_host(std::string(64, 'a') + ".com").has_value());  // label > 63
}

struct Coverage {
  const char* pattern;
  const char* host;
  bool covered;
};

// One row per case: a pattern, a normalised host, and whether the pattern covers it.
constexpr Coverage kCoverage[] = {
    {"*.example.org", "a.example.org", true}, {"*.example.org", "a.b.example.org", true},
    {"*.example.org", "example.org", false},  {"*.example.org", "badexample.org", false},
    {"example.org", "example.org", true},     {"example.org", "a.example.org", false},
    {"127.0.0.1", "127.0.0.1", true},         {"*.0.0.1", "127.0.0.1", false},
};

TEST(Network, AStarCoversSubdomainsButNotTheApexAndAnAddressOnlyItself) {
  for (const auto& c : kCoverage) {
    SCOPED_TRACE(std::string(c.pattern) + " / " + c.host);
    EXPECT_EQ(domain_matches(c.pattern, c.host), c.covered);
  }
}

TEST(Network, DomainPatternsAreNormalisedOrRefused) {
  EXPECT_FALSE(normalize_domain_pattern("*.0.0.1").has_value());
  EXPECT_FALSE(normalize_domain_pattern("*").has_value());
  EXPECT_FALSE(normalize_domain_pattern("a.*.org").has_value());
  EXPECT_EQ(normalize_domain_pattern("*.Example.ORG"), "*.example.org");
  EXPECT_EQ(normalize_domain_pattern("[::1]"), "::1");
}

TEST(Network, InternalRangesAreRecognised) {
  for (const char* ip : {"127.0.0.1",
                         "127.9.9.9",
                         "10.1.2.3",
                         "172.16.0.1",
                         "172.31.255.255",
                         "192.168.1.1",
                         "169.254.169.254",
                         "100.64.0.1",
                         "0.0.0.0",
                         "224.0.0.1",
                         "255.255.255.255",
                         "::1",
                         "::",
                         "fe80::1",
                         "fd00::1",
                         "fc00::1",
                         "ff02::1",
                         "::ffff:127.0.0.1",
                         "::ffff:10.0.0.1",
                         "64:ff9b::a00:1"}) {
    SCOPED_TRACE(ip);
    EXPECT_TRUE(is_internal_address(ip));
  }
  for (const char* ip :
       {"1.1.1.1", "8.8.8.8", "172.32.0.1", "192.169.0.1", "2606:4700::1111", "::ffff:1.1.1.1"}) {
    SCOPED_TRACE(ip);
    EXPECT_FALSE(is_internal_address(ip));
  }
}

struct Edge {
  const char* ip;
  bool internal;
};

// Each special-purpose range's first and last address, and the addresses just outside it
// (issue 26 item 9: 192.0.2.0/24, 198.51.100.0/24 and 203.0.113.0/24 were reachable by name).
constexpr Edge kV4Edges[] = {
    {"0.0.0.0", true},          {"0.255.255.255", true},    {"1.0.0.0", false},
    {"9.255.255.255", false},   {"10.0.0.0", true},         {"10.255.255.255", true},
    {"11.0.0.0", false},        {"100.63.255.255", false},  {"100.64.0.0", true},
    {"100.127.255.255", true},  {"100.128.0.0", false},     {"126.255.255.255", false},
    {"127.0.0.0", true},        {"127.255.255.255", true},  {"128.0.0.0", false},
    {"169.253.255.255", false}, {"169.254.0.0", true},      {"169.254.255.255", true},
    {"169.255.0.0", false},     {"172.15.255.255", false},  {"172.16.0.0", true},
    {"172.31.255.255", true},   {"172.32.0.0", false},      {"191.255.255.255", false},
    {"192.0.0.0", true},        {"192.0.0.255", true},      {"192.0.1.0", false},
    {"192.0.1.255", false},     {"192.0.2.0", true},        {"192.0.2.255", true},
    {"192.0.3.0", false},       {"192.31.195.255", false},  {"192.31.196.0", true},
    {"192.31.196.255", true},   {"192.31.197.0", false},    {"192.52.192.255", false},
    {"192.52.193.0", true},     {"192.52.193.255", true},   {"192.52.194.0", false},
    {"192.88.98.255", false},   {"192.88.99.0", true},      {"192.88.99.255", true},
    {"192.88.100.0", false},    {"192.167.255.255", false}, {"192.168.0.0", true},
    {"192.168.255.255", true},  {"192.169.0.0", false},     {"192.175.47.255", false},
    {"192.175.48.0", true},     {"192.175.48.255", true},   {"192.175.49.0", false},
    {"198.17.255.255", false},  {"198.18.0.0", true},       {"198.19.255.255", true},
    {"198.20.0.0", false},      {"198.51.99.255", false},   {"198.51.100.0", true},
    {"198.51.100.255", true},   {"198.51.101.0", false},    {"203.0.112.255", false},
    {"203.0.113.0", true},      {"203.0.113.255", true},    {"203.0.114.0", false},
    {"223.255.255.255", false}, {"224.0.0.0", true},        {"239.255.255.255", true},
    {"240.0.0.0", true},        {"255.255.255.254", true},  {"255.255.255.255", true},
};

TEST(Network, EachSpecialPurposeIPv4RangeIsInternalFromItsFirstToItsLastAddress) {
  for (const auto& e : kV4Edges) {
    SCOPED_TRACE(e.ip);
    EXPECT_EQ(is_internal_address(e.ip), e.internal);
    EXPECT_EQ(internal_address_reason(e.ip) != nullptr, e.internal);
  }
}

// IPv6: the special-purpose registry's blocks, everything outside global unicast (2000::/3),
// and the forms that carry an IPv4 address (mapped, NAT64, 6to4) judged by that address.
constexpr Edge kV6Edges[] = {
    {"::", true},
    {"::1", true},
    {"::2", true},  // IPv4-compatible (deprecated) and reserved: outside 2000::/3
    {"::ffff:0.0.0.0", true},
    {"::ffff:127.0.0.1", true},
    {"::ffff:192.0.2.1", true},
    {"::ffff:1.1.1.1", false},
    {"::ffff:255.255.255.255", true},
    {"64:ff9b::1.1.1.1", false},
    {"64:ff9b::10.0.0.1", true},
    {"64:ff9b::203.0.113.9", true},
    {"64:ff9b:1::", true},  // local-use translation (RFC 8215): its mapping is the site's
    {"64:ff9b:1:ffff:ffff:ffff:ffff:ffff", true},
    {"100::", true},  // discard-only
    {"100::ffff:ffff:ffff:ffff", true},
    {"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"2000::", false},
    {"2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"2001::", true},  // Teredo and the rest of 2001::/23
    {"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"2001:200::", false},
    {"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"2001:db8::", true},
    {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"2001:db9::", false},
    {"2002:101:101::", false},  // 6to4 of 1.1.1.1
    {"2002:a00:1::", true},     // 6to4 of 10.0.0.1
    {"2002:c000:201::", true},  // 6to4 of 192.0.2.1
    {"2002::", true},           // 6to4 of 0.0.0.0
    {"2606:4700::1111", false},
    {"2620:4f:7fff:ffff:ffff:ffff:ffff:ffff", false},
    {"2620:4f:8000::", true},
    {"2620:4f:8000:ffff:ffff:ffff:ffff:ffff", true},
    {"2620:4f:8001::", false},
    {"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"3fff::", true},
    {"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"3fff:1000::", false},
    {"4000::", true},
    {"5f00::", true},  // SRv6 SIDs
    {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"fc00::", true},
    {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"fe80::", true},
    {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"fec0::", true},
    {"ff00::", true},
    {"ff02::1", true},
    {"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
};

TEST(Network, EachSpecialPurposeIPv6RangeAndEverythingOutsideGlobalUnicastIsInternal) {
  for (const auto& e : kV6Edges) {
    SCOPED_TRACE(e.ip);
    const auto canonical = normalize_host(e.ip);
    ASSERT_TRUE(canonical.has_value());
    EXPECT_EQ(is_internal_address(*canonical), e.internal);
  }
}

TEST(Network, AnInternalAddressSaysWhichRangeItIsIn) {
  EXPECT_STREQ(internal_address_reason("192.0.2.7"),
               "documentation (192.0.2.0/24, TEST-NET-1, RFC 5737)");
  EXPECT_STREQ(internal_address_reason("::ffff:169.254.169.254"),
               "link-local (169.254.0.0/16: cloud metadata at 169.254.169.254)");
  EXPECT_STREQ(internal_address_reason("2001:db8::1"), "documentation (2001:db8::/32, RFC 3849)");
  EXPECT_EQ(internal_address_reason("1.1.1.1"), nullptr);
  EXPECT_STREQ(internal_address_reason("not-an-address"), "not an address");
}

}  // namespace
}  // namespace moat::policy

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

}  // namespace
}  // namespace moat::policy

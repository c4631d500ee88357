// tests/unit/sandbox/net_socks_test.cc: the SOCKS5 greeting and request (RFC 1928) read into
// the host and port the proxy judges, and what is refused with which reply.
#include "sandbox/net_socks.h"

#include <gtest/gtest.h>

namespace moat::sandbox {
namespace {

// Feeds `bytes` to read_socks5 and keeps what it answered.
struct Exchange {
  explicit Exchange(std::string bytes) : in(std::move(bytes)) {}
  Result<ProxyRequest> run() {
    return read_socks5(
        [this](std::size_t n) -> Result<std::string> {
          if (in.size() - at < n) return fail("the program closed the connection");
          std::string out = in.substr(at, n);
          at += n;
          return out;
        },
        [this](std::string_view b) { sent += b; }, &refusal);
  }
  std::string in, sent;
  std::size_t at = 0;
  SocksReply refusal = SocksReply::kGeneralFailure;
};

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s += static_cast<char>(c);
  return s;
}

TEST(Socks5, ANameRequestIsReadAsTheHostAndPortToJudge) {
  Exchange x(bytes({5, 2, 2, 0}) + bytes({5, 1, 0, 3, 11}) + "pypi.org.uk" + bytes({1, 187}));
  auto r = x.run();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(x.sent, bytes({5, 0})) << "no authentication chosen";
  EXPECT_EQ(r->host, "pypi.org.uk");
  EXPECT_EQ(r->port, 443);
  EXPECT_TRUE(r->tunnel && r->socks5);
  EXPECT_EQ(r->method, "SOCKS5");
}

TEST(Socks5, AddressRequestsAreReadAsLiteralsThePolicyJudgesAsAddresses) {
  Exchange v4(bytes({5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 80}));
  auto r = v4.run();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->host, "127.0.0.1");
  EXPECT_EQ(r->port, 80);
  Exchange v6(bytes({5, 1, 0, 5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 80}));
  r = v6.run();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->host, "::1");
}

TEST(Socks5, AClientOfferingOnlyPasswordsGetsNoAcceptableMethod) {
  Exchange x(bytes({5, 1, 2}));
  auto r = x.run();
  ASSERT_FALSE(r);
  EXPECT_EQ(x.sent, bytes({5, 0xff}));
  EXPECT_NE(r.error().message().find("no authentication"), std::string::npos);
}

TEST(Socks5, BindUdpAndUnknownAddressTypesAreRefusedWithTheirReplyCodes) {
  Exchange bind(bytes({5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80}));
  ASSERT_FALSE(bind.run());
  EXPECT_EQ(bind.refusal, SocksReply::kCommandNotSupported);
  Exchange udp(bytes({5, 1, 0, 5, 3, 0, 1, 127, 0, 0, 1, 0, 80}));
  ASSERT_FALSE(udp.run());
  EXPECT_EQ(udp.refusal, SocksReply::kCommandNotSupported);
  Exchange odd(bytes({5, 1, 0, 5, 1, 0, 9}));
  ASSERT_FALSE(odd.run());
  EXPECT_EQ(odd.refusal, SocksReply::kAddressTypeNotSupported);
}

TEST(Socks5, PortZeroAnEmptyNameAndATruncatedRequestAreErrors) {
  EXPECT_FALSE(Exchange(bytes({5, 1, 0, 5, 1, 0, 1, 1, 2, 3, 4, 0, 0})).run());
  EXPECT_FALSE(Exchange(bytes({5, 1, 0, 5, 1, 0, 3, 0, 0, 80})).run());
  EXPECT_FALSE(Exchange(bytes({5, 1, 0, 5, 1, 0, 3, 20, 'a'})).run());
}

TEST(Socks5, RefusalsMapToTheirReplies) {
  EXPECT_EQ(socks5_reply_for_status(403), SocksReply::kNotAllowed);
  EXPECT_EQ(socks5_reply_for_status(502), SocksReply::kHostUnreachable);
  EXPECT_EQ(socks5_reply_for_status(503), SocksReply::kGeneralFailure);
  EXPECT_EQ(socks5_reply(SocksReply::kNotAllowed), bytes({5, 2, 0, 1, 0, 0, 0, 0, 0, 0}));
}

}  // namespace
}  // namespace moat::sandbox

// tests/integration/e2e/net_rate_test.cc: resources.network_rate (issue 26 item 10). A call
// that opens connections faster than the session's rate is ended, with a `net` record saying
// so; the session's next call still reaches the network.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "net_proxy_fixture.h"

namespace moat::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class NetRateTest : public NetProxyTest {
 protected:
  std::string policy_dir() const override { return "net_rate_policy"; }
};

// The flood holds each connection open, so each is named for its program (one closed at once
// is not: nothing holds its socket any more) and the proxy knows which call to end. The kernel
// completes connections into the proxy's backlog faster than the proxy accepts them, so the
// program can reach its open_files limit (1024) before the proxy has counted 51: then it waits
// and tries again, holding what it has, as a flood bounded by its own limit would, instead of
// ending with EMFILE before moat ends it (a flake as uid 65534 in CI).
TEST_F(NetRateTest, ACallOpeningConnectionsPastTheRateIsEndedAndTheNextCallStillConnects) {
  auto out = run_session(
      {"python3 -c 'import socket, time\nheld = []\nfor i in range(20000):\n  try:\n    "
       "held.append(socket.create_connection((\"127.0.0.1\", 3128)))\n  except OSError:\n"
       "    time.sleep(0.05)\nprint(\"flooded\")'",
       "sleep 1; curl -sS --max-time 20 " + url("allowed.test", local_.port())});
  EXPECT_THAT(out[0], Not(HasSubstr("flooded"))) << out[0];
  EXPECT_THAT(out[0], HasSubstr("[moat ended this call: the call opened connections faster than "
                                "resources.network_rate (5 a second, after a burst of 50)]"))
      << out[0] << moatd_log();
  EXPECT_THAT(out[1], HasSubstr("hello from the allowed server")) << out[1];
  int ended = 0;
  for (const json& r : records_)
    if (r.value("call_ended", false)) {
      ++ended;
      EXPECT_EQ(r.value("call_id", ""), "c0") << r.dump();
      EXPECT_EQ(r.value("decision", ""), "deny") << r.dump();
      EXPECT_EQ(r.value("rule", ""), "resources.network_rate") << r.dump();
    }
  EXPECT_EQ(ended, 1) << json(records_).dump();
  json reached = net_record_of(records_, "c1");
  EXPECT_EQ(reached.value("decision", ""), "allow") << json(records_).dump();
  const moat::e2e::Run verify = run({moat_bin(), "audit", "verify", audit_path_});
  EXPECT_EQ(verify.exit_code, 0) << verify.out;
}

}  // namespace
}  // namespace moat::e2e

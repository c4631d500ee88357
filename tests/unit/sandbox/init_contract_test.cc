// tests/unit/sandbox/init_contract_test.cc: the moatd <-> init contract (sandbox/init_contract.h):
// each record round-trips, a bad request is refused naming its field; and the one list of
// writable roots that Landlock and the policy share (policy/writable_roots.h).
#include "sandbox/init_contract.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "base/sys.h"
#include "policy/writable_roots.h"
#include "sandbox/rlimits.h"
#include "sandbox/session_init.h"

namespace moat::sandbox {
namespace {

CallRequest an_exec() {
  CallRequest r;
  r.argv = {"/bin/echo", std::string("caf\xe9", 4), "x"};  // not UTF-8: exact bytes kept
  r.cwd = "/work/sub";
  r.env = {{"A", "1"}, {"B", std::string("\xff", 1)}};
  r.terminal = true;
  r.skip = "seccomp";
  return r;
}

void expect_same(const CallRequest& a, const CallRequest& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.argv, b.argv);
  EXPECT_EQ(a.cwd, b.cwd);
  EXPECT_EQ(a.env, b.env);
  EXPECT_EQ(a.terminal, b.terminal);
  EXPECT_EQ(a.limits, b.limits);
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.skip, b.skip);
}

TEST(InitContract, AnExecRequestRoundTripsWithItsExactBytes) {
  const CallRequest sent = an_exec();
  auto got = CallRequest::decode(sent.encode());
  ASSERT_TRUE(got) << got.error().message();
  expect_same(sent, *got);
}

TEST(InitContract, HandlerAndCreateRequestsRoundTrip) {
  CallRequest handler;
  handler.kind = WorkerKind::kHandler;
  CallRequest create;
  create.kind = WorkerKind::kCreateFile;
  create.path = "/tmp/out.txt";
  for (const CallRequest& sent : {handler, create}) {
    auto got = CallRequest::decode(sent.encode());
    ASSERT_TRUE(got) << got.error().message();
    expect_same(sent, *got);
  }
}

TEST(InitContract, ABadRequestIsRefusedNamingTheFieldAndWhatIsAccepted) {
  const struct {
    const char* text;
    const char* says;
  } cases[] = {
      {R"({"kind":"run"})", "field 'kind' must be \"exec\", \"handler\" or \"create\""},
      {R"({"argv":["x"]})", "field 'kind'"},
      {R"({"kind":"exec","argv":[]})", "field 'argv' must be a non-empty array"},
      {R"({"kind":"exec","argv":"ls"})", "field 'argv' must be an array of strings"},
      {R"({"kind":"exec","argv":["ls",1]})", "field 'argv' must be an array of strings"},
      {R"({"kind":"exec","argv":["ls"],"env":{"A":1}})", "field 'env' must be an object"},
      {R"({"kind":"exec","argv":["ls"],"cwd":3})", "field 'cwd' must be a string"},
      {R"({"kind":"exec","argv":["ls"],"terminal":"yes"})", "field 'terminal' must be true"},
      {R"({"kind":"create","path":[]})", "field 'path' must be a string"},
      {R"({"kind":"exec","argv":["ls"],"skip":0})", "field 'skip' must be a string"},
      {"[1,2]", "not a JSON object"},
      {"{", "not a JSON object"},
  };
  for (const auto& c : cases) {
    auto got = CallRequest::decode(c.text);
    ASSERT_FALSE(got) << c.text;
    EXPECT_NE(got.error().message().find(c.says), std::string::npos)
        << c.text << " -> " << got.error().message();
  }
}

// A call's own limits (an MCP server's resources) cross to the init; a bad one is refused
// naming the field, and what the init applies is never wider than the session's.
TEST(InitContract, ACallsOwnLimitsRoundTripAreRefusedNamingTheFieldAndOnlyNarrow) {
  CallRequest sent = an_exec();
  sent.limits = {.cpu_time_s = 5, .memory_bytes = 1u << 30, .pids = 4};
  auto got = CallRequest::decode(sent.encode());
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->limits, sent.limits);
  EXPECT_EQ(sent.encode().find("file_size"), std::string::npos) << "unset keys are not sent";
  const struct {
    const char* text;
    const char* says;
  } cases[] = {
      {R"({"kind":"exec","argv":["ls"],"limits":4})", "field 'limits' must be an object"},
      {R"({"kind":"exec","argv":["ls"],"limits":{"pids":0}})",
       "field 'limits.pids' must be a positive integer"},
      {R"({"kind":"exec","argv":["ls"],"limits":{"pids":-3}})",
       "field 'limits.pids' must be a positive integer"},
      {R"({"kind":"exec","argv":["ls"],"limits":{"memory_bytes":"1GiB"}})",
       "field 'limits.memory_bytes' must be a positive integer"},
      {R"({"kind":"exec","argv":["ls"],"limits":{"wall_time":3}})",
       "has the key 'wall_time'; accepted: cpu_time_s, memory_bytes, pids, file_size, open_files"},
  };
  for (const auto& c : cases) {
    auto bad = CallRequest::decode(c.text);
    ASSERT_FALSE(bad) << c.text;
    EXPECT_NE(bad.error().message().find(c.says), std::string::npos)
        << c.text << " -> " << bad.error().message();
  }
  Limits session;
  session.pids = 512;
  session.open_files = 0;  // not set: the call's own applies
  const Limits l = narrowed(session, {.cpu_time_s = session.cpu_time_s + 100, .pids = 4,
                                      .open_files = 64});
  EXPECT_EQ(l.pids, 4u);
  EXPECT_EQ(l.cpu_time_s, session.cpu_time_s) << "a wider value is the session's";
  EXPECT_EQ(l.memory_bytes, session.memory_bytes) << "an unset one is the session's";
  EXPECT_EQ(l.open_files, 64u);
}

TEST(InitContract, ARequestCrossesAChannelWholeAndAnOversizedOneIsRefused) {
  auto pair = sys::make_socketpair(SOCK_STREAM);
  ASSERT_TRUE(pair);
  ASSERT_TRUE(send_call_request(pair->first.get(), an_exec()));
  auto got = read_call_request(pair->second.get());
  ASSERT_TRUE(got) << got.error().message();
  expect_same(an_exec(), *got);

  const std::uint32_t too_long = kMaxCallRequestBytes + 1;
  ASSERT_EQ(::write(pair->first.get(), &too_long, sizeof too_long), 4);
  auto refused = read_call_request(pair->second.get());
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("the limit is " + std::to_string(kMaxCallRequestBytes)),
            std::string::npos)
      << refused.error().message();
}

TEST(InitContract, APlaceholderRecordRoundTripsAndAnotherRecordIsNotOne) {
  const Placeholder p{".git/hooks", 42, 4242};
  auto got = parse_placeholder_message(placeholder_message(p));
  ASSERT_TRUE(got);
  EXPECT_EQ(got->relative, p.relative);
  EXPECT_EQ(got->dev, p.dev);
  EXPECT_EQ(got->ino, p.ino);
  EXPECT_FALSE(parse_placeholder_message(std::string(1, ctl_byte(CtlMsg::kReady)) + "{}"));
}

// Landlock (the session init) and the policy (which never trusts a program by name under a
// writable root, nor lets a redirection write outside them) read one list: before, Landlock's
// lacked /var/tmp.
TEST(WritableRoots, LandlockGrantsWritesBeneathExactlyThePolicysWritableRoots) {
  SessionConfig config;
  config.workspace = "/home/u/project";
  config.binds.push_back({"/srv/out", "/out", true, true, -1, false, {}, {}});
  config.binds.push_back({"/srv/ref", "/ref", false, true, -1, false, {}, {}});
  std::vector<std::string> policy_roots = policy::writable_roots(config.workspace);
  policy_roots.push_back("/out");  // the policy's extra_writable_roots: writable --bind targets
  EXPECT_EQ(landlock_write_paths(config), policy_roots);
  for (std::string_view root : policy::kSystemWritableRoots)
    EXPECT_NE(std::find(policy_roots.begin(), policy_roots.end(), root), policy_roots.end());
}

}  // namespace
}  // namespace moat::sandbox

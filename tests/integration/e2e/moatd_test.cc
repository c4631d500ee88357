// tests/integration/e2e/moatd_test.cc: moatd as a real daemon on a socket path: clients that
// break the protocol get an error frame and a closed connection; the others keep working.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "e2e_support.h"
#include "moatd_fixture.h"
#include "sandbox/protocol.h"

namespace moat::e2e {
namespace {

using nlohmann::json;

class MoatdSocketTest : public MoatdFixture {
 protected:
  // Thread stacks in moatd's address space: an 8 MiB read-write mapping right after its
  // 4 KiB guard page. (Not VmSize: malloc arenas reserve 64 MiB at a time as threads come.)
  int thread_stacks() {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/maps");
    std::string line, prev;
    int n = 0;
    auto span = [](const std::string& l) {
      const auto dash = l.find('-'), space = l.find(' ');
      return std::stoull(l.substr(dash + 1, space - dash - 1), nullptr, 16) -
             std::stoull(l.substr(0, dash), nullptr, 16);
    };
    while (std::getline(in, line)) {
      if (!prev.empty() && prev.find(" ---p ") != std::string::npos && span(prev) == 4096 &&
          line.find(" rw-p ") != std::string::npos && span(line) == 8u << 20)
        ++n;
      prev = line;
    }
    return n;
  }
};

TEST_F(MoatdSocketTest, GarbageGetsAnErrorFrameAndAClose) {
  RawClient c(socket_);
  ASSERT_TRUE(c.connected()) << moatd_log();
  c.send_bytes(frame_of("this is not json"));
  json e = expect_error_then_close(c);
  EXPECT_NE(e.value("message", "").find("malformed JSON"), std::string::npos) << e.dump();
  EXPECT_TRUE(moatd_alive());
}

TEST_F(MoatdSocketTest, AnOversizedFrameIsRefusedBeforeItsPayload) {
  RawClient c(socket_);
  ASSERT_TRUE(c.connected());
  c.send_bytes(std::string("\x01\x00\x00\x01", 4));  // 16 MiB + 1
  json e = expect_error_then_close(c);
  // Before hello the limit is a hello's size (issue 26 item 11), after it the protocol's.
  EXPECT_NE(e.value("message", "").find("exceeds the " +
                                        std::to_string(sandbox::kMaxHelloFrameBytes) +
                                        "-byte limit of a frame before 'hello'"),
            std::string::npos)
      << e.dump();
  EXPECT_TRUE(moatd_alive());
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << "a greeted connection needs a sandbox: " << why;
  RawClient greeted(socket_);
  greeted.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}});
  ASSERT_EQ(greeted.read_frame().value("type", ""), "welcome") << moatd_log();
  greeted.send_bytes(std::string("\x01\x00\x00\x01", 4));
  e = expect_error_then_close(greeted);
  EXPECT_NE(e.value("message", "").find("exceeds the 16777216-byte limit"), std::string::npos)
      << e.dump();
  EXPECT_TRUE(moatd_alive());
}

TEST_F(MoatdSocketTest, UnknownTypesAndMissingFieldsAreNamed) {
  {
    RawClient c(socket_);
    c.send_json({{"type", "launch_missiles"}});
    json e = expect_error_then_close(c);
    EXPECT_NE(e.value("message", "").find("unknown frame type 'launch_missiles'"),
              std::string::npos);
  }
  {
    RawClient c(socket_);
    c.send_json({{"type", "hello"}, {"version", 1}});
    json e = expect_error_then_close(c);
    EXPECT_EQ(e.value("message", ""), "'hello' frame is missing the field 'workspace' (a string)");
  }
  {
    RawClient c(socket_);
    c.send_json({{"type", "call"}, {"id", "1"}, {"tool", "read"}, {"arguments", json::object()}});
    json e = expect_error_then_close(c);
    EXPECT_EQ(e.value("message", ""), "the first frame must be 'hello'");
  }
  EXPECT_TRUE(moatd_alive());
}

TEST_F(MoatdSocketTest, AWorkspaceThatIsNotADirectoryIsRefused) {
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", "relative/path"}});
  json e = expect_error_then_close(c);
  EXPECT_EQ(e.value("code", ""), "workspace");
}

TEST_F(MoatdSocketTest, AMisbehavingClientDoesNotDisturbAnotherSession) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  RawClient good(socket_);
  ASSERT_TRUE(good.connected());
  // The hello arrives one byte per write: framing does not care how bytes are split.
  const std::string hello = sandbox::encode_frame(
      {{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
  for (char ch : hello) good.send_bytes(std::string(1, ch));
  json w = good.read_frame();
  ASSERT_EQ(w.value("type", ""), "welcome") << w.dump() << moatd_log();
  bool has_read = false;
  for (const auto& t : w["tools"]) has_read |= t["name"] == "read";
  ASSERT_TRUE(has_read) << w.dump();

  // Meanwhile, three clients break the protocol in different ways.
  for (const std::string& junk :
       {frame_of("{"), std::string("\xff\xff\xff\xff", 4), frame_of("[\"not an object\"]")}) {
    RawClient bad(socket_);
    bad.send_bytes(junk);
    expect_error_then_close(bad);
  }
  ASSERT_TRUE(moatd_alive());

  good.send_json({{"type", "call"},
                  {"id", "r1"},
                  {"tool", "read"},
                  {"arguments", {{"path", ws_ + "/hello.txt"}}}});
  json r;
  for (int i = 0; i < 10; ++i) {
    r = good.read_frame();
    if (r.value("type", "") == "result") break;
  }
  ASSERT_EQ(r.value("type", ""), "result") << r.dump();
  EXPECT_FALSE(r["isError"].get<bool>()) << r.dump();
  EXPECT_NE(r["content"][0]["text"].get<std::string>().find("hello from the workspace"),
            std::string::npos);
  good.send_json({{"type", "bye"}});
  EXPECT_EQ(good.read_frame().value("type", ""), "bye");
}

TEST_F(MoatdSocketTest, AnUnknownToolIsAnErrorResultNotACrash) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}});
  ASSERT_EQ(c.read_frame().value("type", ""), "welcome") << moatd_log();
  c.send_json(
      {{"type", "call"}, {"id", "x"}, {"tool", "format_disk"}, {"arguments", json::object()}});
  json r = c.read_frame();
  ASSERT_EQ(r.value("type", ""), "result") << r.dump();
  EXPECT_TRUE(r["isError"].get<bool>());
  EXPECT_NE(
      r["content"][0]["text"].get<std::string>().find("unknown or refused tool 'format_disk'"),
      std::string::npos)
      << r.dump();
  EXPECT_TRUE(moatd_alive());
}

TEST_F(MoatdSocketTest, ConcurrentCallsEachGetTheirResult) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}});
  ASSERT_EQ(c.read_frame().value("type", ""), "welcome") << moatd_log();
  c.send_json({{"type", "call"},
               {"id", "slow"},
               {"tool", "bash"},
               {"arguments", {{"command", "sleep 1; echo slow-done"}}}});
  c.send_json({{"type", "call"},
               {"id", "fast"},
               {"tool", "bash"},
               {"arguments", {{"command", "echo fast-done"}}}});
  std::vector<std::string> order;
  while (order.size() < 2) {
    json f = c.read_frame();
    ASSERT_FALSE(f.is_null()) << "connection closed early";
    if (f.value("type", "") == "result") {
      order.push_back(f["id"]);
      EXPECT_FALSE(f["isError"].get<bool>()) << f.dump();
    }
  }
  EXPECT_EQ(order, (std::vector<std::string>{"fast", "slow"})) << "calls overlap in moatd";
}

// moatd signs each session's log with its own key: the log ends in a checkpoint that
// verifies under the public key moatd wrote next to the private one, and the sandbox cannot
// read that private key (the audit directory is outside its view).
TEST_F(MoatdSocketTest, TheSessionsAuditLogEndsInACheckpointSignedWithMoatdsKey) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  const std::string key = dir_.path() + "/audit/audit-key.pem";
  std::string audit_path;
  {
    RawClient c(socket_);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}});
    json welcome = c.read_frame();
    ASSERT_EQ(welcome.value("type", ""), "welcome") << moatd_log();
    audit_path = welcome.value("audit", "");
    c.send_json({{"type", "call"},
                 {"id", "k"},
                 {"tool", "bash"},
                 {"arguments", {{"command", "cat " + key}}}});
    json r = c.read_result();
    EXPECT_TRUE(r.value("isError", false)) << "the sandbox read moatd's key: " << r.dump();
    EXPECT_EQ(r.dump().find("PRIVATE KEY"), std::string::npos) << r.dump();
    c.send_json({{"type", "bye"}});
    EXPECT_EQ(c.read_frame().value("type", ""), "bye");
  }
  ASSERT_FALSE(audit_path.empty());
  struct stat st {};
  ASSERT_EQ(::stat(key.c_str(), &st), 0) << "moatd created its key at " << key;
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string pub = dir_.path() + "/audit/audit-key.pub";
  e2e::Run v = run({moat_bin(), "audit", "verify", "--key", pub, audit_path});
  EXPECT_EQ(v.exit_code, 0) << v.out;
  EXPECT_NE(v.out.find("checkpoint signed through seq"), std::string::npos) << v.out;
  // Another key (RFC 8410's example Ed25519 public key) does not vouch for it.
  const std::string other = dir_.path() + "/other";
  std::filesystem::create_directories(other);
  std::ofstream(other + "/other.pub")
      << "-----BEGIN PUBLIC "
         "KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n"
         "-----END PUBLIC KEY-----\n";
  e2e::Run w = run({moat_bin(), "audit", "verify", "--key", other + "/other.pub", audit_path});
  EXPECT_EQ(w.exit_code, 1) << w.out;
  EXPECT_NE(w.out.find("bad-signature"), std::string::npos) << w.out;
}

// A key moatd cannot use (here: not a key) is never replaced; the session still gets its
// audit log, unsigned, and session.start says why.
TEST(MoatdAuditKey, AnUnusableKeyLeavesTheLogUnsignedAndSaysWhy) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  TempDir dir;
  const std::string key = dir.path() + "/bad-key.pem";
  std::ofstream(key) << "not a key\n";
  ::chmod(key.c_str(), 0600);
  const std::string socket = dir.path() + "/moatd.sock", ws = dir.path() + "/ws";
  std::filesystem::create_directories(ws);
  pid_t pid = start(
      {moatd_bin(), "--socket", socket, "--audit-dir", dir.path() + "/audit", "--audit-key", key},
      dir.path() + "/moatd.log");
  std::string audit_path;
  {
    RawClient c(socket);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws}});
    json welcome = c.read_frame();
    EXPECT_EQ(welcome.value("type", ""), "welcome") << welcome.dump();
    audit_path = welcome.value("audit", "");
    c.send_json({{"type", "bye"}});
    c.read_frame();
  }
  kill(pid, SIGTERM);
  wait_exit(pid, 10);
  std::ifstream in(audit_path);
  std::string first;
  std::getline(in, first);
  const json start_rec = json::parse(first, nullptr, false);
  ASSERT_TRUE(start_rec.is_object()) << first;
  EXPECT_EQ(start_rec.value("audit_signing", "").rfind("off: audit key " + key, 0), 0u) << first;
  std::ifstream k(key);
  std::string content((std::istreambuf_iterator<char>(k)), {});
  EXPECT_EQ(content, "not a key\n");
}

// moatd runs each call on its own thread. A finished thread that is never joined keeps its
// stack mapped (8 MiB each), so a long headless session would grow moatd without bound:
// finished call threads are joined as new calls arrive.
TEST_F(MoatdSocketTest, ManySequentialCallsDoNotGrowMoatd) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}});
  ASSERT_EQ(c.read_frame().value("type", ""), "welcome") << moatd_log();
  auto call = [&](int i) {
    const std::string id = "c" + std::to_string(i);
    c.send_json(
        {{"type", "call"}, {"id", id}, {"tool", "bash"}, {"arguments", {{"command", "true"}}}});
    for (;;) {
      json f = c.read_frame();
      if (f.is_null()) return false;
      if (f.value("type", "") == "result" && f.value("id", "") == id)
        return !f["isError"].get<bool>();
    }
  };
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(call(i)) << moatd_log();
  const int before = thread_stacks();
  constexpr int kCalls = 120;
  for (int i = 5; i < 5 + kCalls; ++i) ASSERT_TRUE(call(i)) << "call " << i << "\n" << moatd_log();
  // Unjoined, 120 calls would keep 120 more stacks (960 MiB). Joined, none stay.
  EXPECT_LT(thread_stacks() - before, 8) << "moatd kept " << thread_stacks() - before
                                         << " more thread stacks after " << kCalls << " calls";
}

// A system moatd serves one session after another, each on its own thread: those are joined
// as they end too, not when moatd stops.
TEST_F(MoatdSocketTest, ManySequentialSessionsDoNotGrowMoatd) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  auto session = [&] {
    RawClient c(socket_);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}});
    if (c.read_frame().value("type", "") != "welcome") return false;
    c.send_json({{"type", "bye"}});
    return c.read_frame().value("type", "") == "bye";
  };
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(session()) << moatd_log();
  const int before = thread_stacks();
  constexpr int kSessions = 40;
  for (int i = 0; i < kSessions; ++i)
    ASSERT_TRUE(session()) << "session " << i << "\n" << moatd_log();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the accept loop's next tick
  EXPECT_LT(thread_stacks() - before, 8)
      << "moatd kept " << thread_stacks() - before << " more thread stacks after " << kSessions
      << " sessions";
}

}  // namespace
}  // namespace moat::e2e

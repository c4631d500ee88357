// tests/integration/e2e/moatd_test.cc: moatd as a real daemon on a socket path: clients that
// break the protocol get an error frame and a closed connection; the others keep working.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "e2e_support.h"
#include "sandbox/protocol.h"

namespace moat::e2e {
namespace {

using nlohmann::json;

class MoatdSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.path() + "/moatd.sock";
    pid_ = start({moatd_bin(), "--socket", socket_, "--audit-dir", dir_.path() + "/audit"},
                 dir_.path() + "/moatd.log");
    ws_ = dir_.path() + "/ws";
    std::filesystem::create_directories(ws_);
    std::ofstream(ws_ + "/hello.txt") << "hello from the workspace\n";
  }
  void TearDown() override {
    kill(pid_, SIGTERM);
    wait_exit(pid_, 10);
  }
  bool moatd_alive() { return kill(pid_, 0) == 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  std::string moatd_log() {
    std::ifstream in(dir_.path() + "/moatd.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  json expect_error_then_close(RawClient& c) {
    json e = c.read_frame();
    EXPECT_EQ(e.value("type", ""), "error") << e.dump();
    EXPECT_TRUE(c.closed_by_peer()) << "moatd closes a connection that broke the protocol";
    return e;
  }

  TempDir dir_;
  std::string socket_;
  std::string ws_;
  pid_t pid_ = -1;
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
  EXPECT_NE(e.value("message", "").find("exceeds the 16777216-byte limit"), std::string::npos);
  EXPECT_TRUE(moatd_alive());
}

TEST_F(MoatdSocketTest, UnknownTypesAndMissingFieldsAreNamed) {
  {
    RawClient c(socket_);
    c.send_json({{"type", "launch_missiles"}});
    json e = expect_error_then_close(c);
    EXPECT_NE(e.value("message", "").find("unknown frame type 'launch_missiles'"), std::string::npos);
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
  for (const std::string& junk : {frame_of("{"), std::string("\xff\xff\xff\xff", 4),
                                  frame_of("[\"not an object\"]")}) {
    RawClient bad(socket_);
    bad.send_bytes(junk);
    expect_error_then_close(bad);
  }
  ASSERT_TRUE(moatd_alive());

  good.send_json({{"type", "call"}, {"id", "r1"}, {"tool", "read"},
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
  c.send_json({{"type", "call"}, {"id", "x"}, {"tool", "format_disk"}, {"arguments", json::object()}});
  json r = c.read_frame();
  ASSERT_EQ(r.value("type", ""), "result") << r.dump();
  EXPECT_TRUE(r["isError"].get<bool>());
  EXPECT_NE(r["content"][0]["text"].get<std::string>().find("unknown or refused tool 'format_disk'"),
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
  c.send_json({{"type", "call"}, {"id", "slow"}, {"tool", "bash"},
               {"arguments", {{"command", "sleep 1; echo slow-done"}}}});
  c.send_json({{"type", "call"}, {"id", "fast"}, {"tool", "bash"},
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

// moatd runs each call on its own thread. A finished thread that is never joined keeps its
// stack mapped (8 MiB each), so a long headless session would grow moatd without bound:
// finished call threads are joined as new calls arrive.
TEST_F(MoatdSocketTest, ManySequentialCallsDoNotGrowMoatd) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  auto vm_size_kib = [&] {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("VmSize:", 0) == 0) return std::stol(line.substr(7));
    return -1L;
  };
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}});
  ASSERT_EQ(c.read_frame().value("type", ""), "welcome") << moatd_log();
  auto call = [&](int i) {
    const std::string id = "c" + std::to_string(i);
    c.send_json({{"type", "call"}, {"id", id}, {"tool", "bash"},
                 {"arguments", {{"command", "true"}}}});
    for (;;) {
      json f = c.read_frame();
      if (f.is_null()) return false;
      if (f.value("type", "") == "result" && f.value("id", "") == id)
        return !f["isError"].get<bool>();
    }
  };
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(call(i)) << moatd_log();
  const long before = vm_size_kib();
  ASSERT_GT(before, 0);
  constexpr int kCalls = 120;
  for (int i = 5; i < 5 + kCalls; ++i) ASSERT_TRUE(call(i)) << "call " << i << "\n" << moatd_log();
  const long grown_kib = vm_size_kib() - before;
  // Unjoined, 120 calls would keep 120 stacks: about 960 MiB. Joined, a few at most.
  EXPECT_LT(grown_kib, 64 * 1024) << "moatd's address space grew " << grown_kib / 1024
                                  << " MiB over " << kCalls << " calls";
}

}  // namespace
}  // namespace moat::e2e

// tests/integration/e2e/moatd_limits_test.cc: limits that hold whatever a client does, against
// the real moatd binary: a call's timeout argument cannot pass the policy's wall time, a client
// that stops reading suspends no deadline and is disconnected alone, and a second moatd cannot
// take a live socket over.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "e2e_support.h"
#include "moatd_fixture.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

std::string read_file(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The audit records of one session file, parsed.
std::vector<json> audit_records(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object()) out.push_back(std::move(j));
  }
  return out;
}

std::optional<json> find_record(const std::string& path, const std::string& type,
                                const std::string& call_id = "") {
  for (auto& r : audit_records(path))
    if (r.value("type", "") == type && (call_id.empty() || r.value("call_id", "") == call_id))
      return r;
  return std::nullopt;
}

// A moatd on a socket, with an extra policy file and extra flags.
class MoatdLimitsTest : public MoatdProcess {
 protected:
  void start_moatd(const std::string& policy, const std::vector<std::string>& flags = {}) {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    make_workspace();
    std::ofstream(dir_.path() + "/limits.toml") << policy;
    std::vector<std::string> all = {"--audit-dir", dir_.path() + "/audit", "--policy",
                                    dir_.path() + "/limits.toml"};
    all.insert(all.end(), flags.begin(), flags.end());
    MoatdProcess::start_moatd(all);
  }

  // hello -> welcome; returns the session's audit log path ("" on failure).
  std::string greet(RawClient& c) {
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    json w = c.read_frame();
    EXPECT_EQ(w.value("type", ""), "welcome") << w.dump() << moatd_log();
    return w.value("audit", "");
  }

  // The call's result frame, skipping its progress frames.
  json result_of(RawClient& c, const std::string& id, int timeout_ms = 60000) {
    for (;;) {
      json f = c.read_frame(timeout_ms);
      if (f.is_null() || (f.value("type", "") == "result" && f.value("id", "") == id)) return f;
    }
  }
};

// A `timeout` argument above the policy's wall time does not extend it: the call ends at the
// policy's limit (1 s here, not the 1000 s asked for, nor the 60 s the command sleeps) and
// its result says the timeout was capped.
TEST_F(MoatdLimitsTest, ACallsTimeoutAboveThePolicysWallTimeIsCapped) {
  start_moatd("schema = 1\n[resources]\nwall_time = 1\n");
  if (IsSkipped()) return;
  RawClient c(socket_);
  ASSERT_TRUE(c.connected()) << moatd_log();
  const std::string audit = greet(c);
  c.send_json({{"type", "call"},
               {"id", "long"},
               {"tool", "bash"},
               {"arguments", {{"command", "sleep 60; echo overslept"}, {"timeout", 1000}}}});
  json r = result_of(c, "long", 45000);
  ASSERT_FALSE(r.is_null()) << "no result while the command sleeps: the timeout was not capped";
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_TRUE(r["details"].value("timedOut", false)) << r.dump();
  EXPECT_TRUE(r["details"].value("timeoutCapped", false)) << r.dump();
  EXPECT_EQ(r["details"].value("timeoutS", 0.0), 1.0) << r.dump();
  const std::string text = r["content"][0].value("text", "");
  EXPECT_NE(
      text.find("the requested timeout of 1000 s was capped to the policy's wall time of 1 s"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("overslept"), std::string::npos) << text;
}

// A client that sends a call and then reads nothing: moatd's frames for it pile up, yet the
// call's deadline still fires (the exec record shows the wall-time kill while the client has
// still read nothing), and once the client has taken no byte for the stall timeout it is
// disconnected: session.end is written. Another client of the same moatd is served meanwhile.
TEST_F(MoatdLimitsTest, AClientThatStopsReadingSuspendsNoDeadlineAndIsDisconnectedAlone) {
  start_moatd("schema = 1\n[resources]\nwall_time = 2\n", {"--client-stall-timeout", "4"});
  if (IsSkipped()) return;
  RawClient stalled(socket_);
  ASSERT_TRUE(stalled.connected()) << moatd_log();
  const std::string audit = greet(stalled);
  ASSERT_FALSE(audit.empty());
  // About 1 MB/s of output, forever: far more than the socket buffers hold in 2 s.
  stalled.send_json(
      {{"type", "call"},
       {"id", "flood"},
       {"tool", "bash"},
       {"arguments",
        {{"command", "while :; do head -c 100000 /dev/zero | tr '\\0' x; sleep 0.1; done"}}}});
  ASSERT_TRUE(eventually([&] { return find_record(audit, "call", "flood").has_value(); }, 40s))
      << "the call was not killed at its deadline while its client did not read\n"
      << read_file(audit) << moatd_log();
  const json exec = *find_record(audit, "call", "flood");
  ASSERT_FALSE(exec["processes"].empty()) << exec.dump();
  EXPECT_EQ(exec["processes"][0]["exit"].value("limit", ""), "wall_time") << exec.dump();

  RawClient other(socket_);
  ASSERT_TRUE(other.connected());
  greet(other);
  other.send_json({{"type", "call"},
                   {"id", "e"},
                   {"tool", "bash"},
                   {"arguments", {{"command", "echo served"}}}});
  json r = result_of(other, "e");
  ASSERT_FALSE(r.is_null()) << moatd_log();
  EXPECT_FALSE(r.value("isError", true)) << r.dump();

  ASSERT_TRUE(eventually([&] { return find_record(audit, "session.end").has_value(); }, 40s))
      << "the stalled client was never disconnected\n"
      << moatd_log();
  // Its connection is closed: what it reads now ends in EOF.
  int frames = 0;
  while (!stalled.read_frame(5000).is_null()) ++frames;
  EXPECT_GT(frames, 0);
  other.send_json({{"type", "bye"}});
  EXPECT_EQ(result_of(other, "none", 10000).is_null(), true);
}

// ---- The socket path: a live socket is never taken over, and is left to its owner. ----

class MoatdSocketClaimTest : public ::testing::Test {
 protected:
  void SetUp() override { socket_ = dir_.path() + "/moatd.sock"; }
  void TearDown() override {
    for (pid_t p : pids_) {
      kill(p, SIGTERM);
      wait_exit(p, 10);
    }
  }
  // Waits for a moatd this test started; TearDown leaves it alone then.
  int stop_moatd(pid_t p) {
    kill(p, SIGTERM);
    pids_.erase(std::remove(pids_.begin(), pids_.end(), p), pids_.end());
    return wait_exit(p, 10);
  }
  pid_t start_moatd(const std::string& name) {
    pid_t p =
        start({moatd_bin(), "--socket", socket_, "--audit-dir", dir_.path() + "/audit"}, log(name));
    pids_.push_back(p);
    return p;
  }
  std::string log(const std::string& name) const { return dir_.path() + "/" + name + ".log"; }
  // Its start-up line says where it listens.
  bool says_listening(const std::string& name) {
    return read_file(log(name)).find("moatd: listening on " + socket_ + "\n") != std::string::npos;
  }
  // moatd answers a garbage frame with an error frame: something serves the path.
  bool served() {
    RawClient c(socket_);
    if (!c.connected()) return false;
    c.send_bytes(frame_of("not json"));
    return c.read_frame(10000).value("type", "") == "error";
  }

  TempDir dir_;
  std::string socket_;
  std::vector<pid_t> pids_;
};

TEST_F(MoatdSocketClaimTest, ASecondMoatdRefusesALiveSocketAndTheFirstStaysReachable) {
  const pid_t first = start_moatd("first");
  ASSERT_TRUE(served()) << read_file(log("first"));
  EXPECT_TRUE(says_listening("first")) << read_file(log("first"));
  e2e::Run second =
      run({moatd_bin(), "--socket", socket_, "--audit-dir", dir_.path() + "/audit"}, {}, 20);
  EXPECT_EQ(second.exit_code, 3) << second.out;
  EXPECT_NE(second.out.find("is in use"), std::string::npos) << second.out;
  EXPECT_TRUE(served()) << "the first moatd is no longer reachable";
  EXPECT_EQ(stop_moatd(first), 0);
  EXPECT_FALSE(fs::exists(socket_)) << "moatd removes its own socket at exit";
}

TEST_F(MoatdSocketClaimTest, AStaleSocketFileIsReplaced) {
  {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    socket_.copy(addr.sun_path, socket_.size());
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    close(fd);  // the file stays, with no listener: what a crashed moatd leaves
  }
  start_moatd("moatd");
  EXPECT_TRUE(served()) << read_file(log("moatd"));
  EXPECT_TRUE(says_listening("moatd")) << read_file(log("moatd"));
}

TEST_F(MoatdSocketClaimTest, APathThatIsNotASocketIsNeitherRemovedNorServed) {
  std::ofstream(socket_) << "precious\n";
  e2e::Run r =
      run({moatd_bin(), "--socket", socket_, "--audit-dir", dir_.path() + "/audit"}, {}, 20);
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("is not a socket"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(socket_), "precious\n");
}

// The path is removed at exit only if it is still moatd's socket: here it was replaced by
// another listener meanwhile, which keeps its path.
TEST_F(MoatdSocketClaimTest, AtExitMoatdRemovesThePathOnlyIfItIsStillItsSocket) {
  const pid_t p = start_moatd("moatd");
  ASSERT_TRUE(served()) << read_file(log("moatd"));
  ASSERT_EQ(unlink(socket_.c_str()), 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socket_.copy(addr.sun_path, socket_.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  EXPECT_EQ(stop_moatd(p), 0);
  EXPECT_TRUE(fs::exists(socket_)) << "moatd removed a path that was no longer its socket";
  close(fd);
}

}  // namespace
}  // namespace moat::e2e

// tests/integration/e2e/moatd_pool_test.cc: moatd's pool of sessions built ahead of their hello
// (moatd --pool, sandbox/session_pool.h) through the real moatd binary on a socket: a hello is
// served by a pre-built session (session.start's sandbox says "pooled"), the pool refills, and
// moatd's end leaves none of its keepers or their cgroups.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace moat::e2e {
namespace {

using nlohmann::json;

// moatd's children: one keeper per session, the pooled ones included.
std::set<pid_t> children_of(pid_t pid) {
  std::set<pid_t> out;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "children");
    for (pid_t child; in >> child;) out.insert(child);
  }
  return out;
}

// The session cgroups (moat-<keeper>) a process is in, as directories under /sys/fs/cgroup.
std::vector<std::string> session_cgroups_of(pid_t pid) {
  std::vector<std::string> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    const std::string ctrl = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (path.find("/moat-") == std::string::npos) continue;
    out.push_back("/sys/fs/cgroup" + (ctrl.empty() ? "" : "/" + ctrl) + path);
  }
  return out;
}

// A hello and a bye: session.start's `sandbox`.
json one_session(const std::string& socket, const std::string& ws) {
  std::string audit;
  {
    RawClient c(socket);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws}, {"headless", true}});
    const json welcome = c.read_frame();
    EXPECT_EQ(welcome.value("type", ""), "welcome") << welcome.dump();
    audit = welcome.value("audit", "");
    c.send_json({{"type", "bye"}});
    c.read_frame();
  }
  const auto starts = of_type(records_of(audit), "session.start");
  return starts.empty() ? json() : starts[0].value("sandbox", json());
}

TEST(MoatdPoolTest, ASecondHelloIsServedByAPooledSessionAndMoatdsEndLeavesNoKeeper) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  TempDir dir;
  const std::string socket = dir.path() + "/moatd.sock", ws = dir.path() + "/ws";
  std::filesystem::create_directories(ws);
  const pid_t moatd = start({moatd_bin(), "--socket", socket, "--audit-dir", dir.path() + "/audit"},
                            dir.path() + "/moatd.log");
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(socket); }));
  const json first = one_session(socket, ws);
  EXPECT_FALSE(first.value("pooled", false)) << "the first hello finds the pool empty";
  // Its session ended with its bye: what is left are the two pooled keepers.
  ASSERT_TRUE(eventually([&] { return children_of(moatd).size() == 2; }))
      << children_of(moatd).size() << " children; " << read_file(dir.path() + "/moatd.log");
  const json second = one_session(socket, ws);
  EXPECT_TRUE(second.value("pooled", false)) << second.dump();
  ASSERT_TRUE(eventually([&] { return children_of(moatd).size() == 2; })) << "no refill";
  const std::set<pid_t> pooled = children_of(moatd);
  std::vector<std::string> cgroups;
  for (pid_t pid : pooled)
    for (std::string& d : session_cgroups_of(pid)) cgroups.push_back(std::move(d));
  kill(moatd, SIGTERM);
  EXPECT_EQ(wait_exit(moatd, 10), 0) << read_file(dir.path() + "/moatd.log");
  for (pid_t pid : pooled)
    EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(pid))) << "keeper " << pid;
  for (const std::string& d : cgroups) EXPECT_FALSE(std::filesystem::exists(d)) << d;
}

// The bye's answer and EOF come before the session's state is freed (supervisor.cc), yet after
// every process of the session: a command that left a process running finds it gone, its keeper
// reaped, its cgroups removed and session.end on disk when the client has its EOF.
TEST(MoatdPoolTest, AByeIsAnsweredOnlyOnceNothingOfTheSessionIsLeft) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  TempDir dir;
  const std::string socket = dir.path() + "/moatd.sock", ws = dir.path() + "/ws";
  std::filesystem::create_directories(ws);
  const pid_t moatd =
      start({moatd_bin(), "--socket", socket, "--audit-dir", dir.path() + "/audit", "--pool", "0"},
            dir.path() + "/moatd.log");
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(socket); }));
  RawClient c(socket);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws}, {"headless", true}});
  const json welcome = c.read_frame();
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump();
  c.send_json({{"type", "call"}, {"id", "c1"}, {"tool", "bash"},
               {"arguments", {{"command", "setsid sleep 600 >/dev/null 2>&1 & echo started"}}}});
  ASSERT_FALSE(c.read_result(60000).value("isError", true));
  const std::set<pid_t> keepers = children_of(moatd);
  ASSERT_EQ(keepers.size(), 1u);
  const std::vector<std::string> cgroups = session_cgroups_of(*keepers.begin());
  c.send_json({{"type", "bye"}});
  EXPECT_EQ(c.read_frame().value("type", ""), "bye");
  EXPECT_TRUE(c.closed_by_peer(10000));
  EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(*keepers.begin())));
  for (const std::string& d : cgroups) EXPECT_FALSE(std::filesystem::exists(d)) << d;
  EXPECT_EQ(of_type(records_of(welcome.value("audit", "")), "session.end").size(), 1u);
  kill(moatd, SIGTERM);
  EXPECT_EQ(wait_exit(moatd, 10), 0) << read_file(dir.path() + "/moatd.log");
}

TEST(MoatdPoolTest, PoolZeroBuildsEverySessionFresh) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  TempDir dir;
  const std::string socket = dir.path() + "/moatd.sock", ws = dir.path() + "/ws";
  std::filesystem::create_directories(ws);
  const pid_t moatd =
      start({moatd_bin(), "--socket", socket, "--audit-dir", dir.path() + "/audit", "--pool", "0"},
            dir.path() + "/moatd.log");
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(socket); }));
  EXPECT_FALSE(one_session(socket, ws).value("pooled", false));
  EXPECT_FALSE(one_session(socket, ws).value("pooled", false));
  EXPECT_TRUE(children_of(moatd).empty());
  kill(moatd, SIGTERM);
  EXPECT_EQ(wait_exit(moatd, 10), 0);
}

}  // namespace
}  // namespace moat::e2e

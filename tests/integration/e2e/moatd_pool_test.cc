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
#include "tests/support/proc_tree.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
using moat::testing_support::children_of;  // moatd's children: one keeper per session
using moat::testing_support::descendants_of;
using moat::testing_support::state_of;

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

// The bye's answer and EOF come after every process of the session is gone (a command that
// left a process running finds it gone) and session.end is on disk in a log that verifies; the
// keeper's reaping and the cgroups' removal follow the answer (supervisor.cc), within 2 s.
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
  // A call still running at the bye: its shell and sleep are the session's processes.
  c.send_json({{"type", "call"}, {"id", "c1"}, {"tool", "bash"},
               {"arguments", {{"command", "sleep 600 & touch started; wait"}}}});
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(ws + "/started"); }));
  const std::set<pid_t> keepers = children_of(moatd);
  ASSERT_EQ(keepers.size(), 1u);
  const pid_t keeper = *keepers.begin();
  const std::set<pid_t> inside = descendants_of(keeper);  // the init, the shell, the sleep
  ASSERT_GE(inside.size(), 3u);
  const std::vector<std::string> cgroups = session_cgroups_of(keeper);
  c.send_json({{"type", "bye"}});
  json answer = c.read_result();
  if (answer.value("type", "") == "result") answer = c.read_result();  // the cancelled call's
  EXPECT_EQ(answer.value("type", ""), "bye") << answer.dump();
  // At the answer: nothing of the session runs, its end is on disk and the log verifies.
  for (pid_t pid : inside) {
    const char state = state_of(pid);
    EXPECT_TRUE(state == 0 || state == 'Z') << "process " << pid << " of the session: " << state;
  }
  const std::string audit = welcome.value("audit", "");
  EXPECT_EQ(of_type(records_of(audit), "session.end").size(), 1u);
  const e2e::Run verified = run({moat_bin(), "audit", "verify", audit});
  EXPECT_EQ(verified.exit_code, 0) << verified.out;
  EXPECT_TRUE(c.closed_by_peer(10000));
  EXPECT_TRUE(eventually([&] { return state_of(keeper) == 0; }, std::chrono::seconds(2)))
      << "keeper " << keeper << " not reaped: " << state_of(keeper);
  for (const std::string& d : cgroups)
    EXPECT_TRUE(eventually([&] { return !std::filesystem::exists(d); }, std::chrono::seconds(2)))
        << d;
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
  // The last session's keeper is reaped just after its bye's answer.
  EXPECT_TRUE(eventually([&] { return children_of(moatd).empty(); }, std::chrono::seconds(2)));
  kill(moatd, SIGTERM);
  EXPECT_EQ(wait_exit(moatd, 10), 0);
}

}  // namespace
}  // namespace moat::e2e

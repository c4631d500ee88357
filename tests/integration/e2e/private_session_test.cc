// tests/integration/e2e/private_session_test.cc: a private moatd's session (moat sandbox exec
// --private) as its first command sees it: inside the session's cgroup in both v1 hierarchies,
// under the policy's pids limit, and the cgroup gone once moat returned. moatd starts a cgroup
// attach's grace period as it starts (sandbox/cgroup.h start_attach_warmup): that moves moatd
// alone, never a process of the session, which still joins its cgroup before it runs anything.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "e2e_support.h"
#include "workspace_test.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

// The path after "N:<controller>:" in a /proc/PID/cgroup text; empty when it has none.
std::string cgroup_path(const std::string& text, const std::string& controller) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find(":" + controller + ":");
    if (at != std::string::npos) return line.substr(at + controller.size() + 2);
  }
  return "";
}

// The host directory of the cgroup a process inside the session is in, from its
// /proc/self/cgroup text: that path is relative to the session's cgroup namespace, whose root
// is moatd's cgroup (the keeper unshared it before it joined the session's), and moatd's is
// this test's in each hierarchy.
fs::path host_dir(const std::string& inside, const std::string& controller) {
  const std::string own = cgroup_path(read_file("/proc/self/cgroup"), controller);
  return fs::path("/sys/fs/cgroup/" + controller + own + "/" + cgroup_path(inside, controller))
      .lexically_normal();
}

class PrivateSessionTest : public WorkspaceTest {};

TEST_F(PrivateSessionTest, ItsFirstCommandRunsInItsCgroupUnderThePolicysPidsLimit) {
  if (::access("/sys/fs/cgroup/pids", W_OK) != 0 || ::access("/sys/fs/cgroup/memory", W_OK) != 0)
    GTEST_SKIP() << "no writable cgroup v1 pids and memory hierarchies (rootless, or v2 only)";
  const std::string policy = dir_.path() + "/pids.toml";
  std::ofstream(policy) << "schema = 1\nresources = { pids = 100 }\n"
                           "[layer]\nname = \"pids-test\"\nrevision = \"1\"\n";
  // It says where it is, then waits for the test to have looked.
  const pid_t moat = start(
      {moat_bin(), "sandbox", "exec", "--private", "--system-policy-dir",
       source_root() + "/tests/integration/e2e/sandbox_exec_policy", "--policy", policy,
       "--audit-dir", dir_.path() + "/audit", "-C", ws_, "--", "/bin/sh", "-c",
       "cat /proc/self/cgroup > cgroup.txt.new && mv cgroup.txt.new cgroup.txt; "
       "while [ ! -e done ]; do sleep 0.02; done"},
      dir_.path() + "/moat.log", env());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(ws_ + "/cgroup.txt") && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const std::string inside = read_file(ws_ + "/cgroup.txt");
  const fs::path pids = host_dir(inside, "pids"), memory = host_dir(inside, "memory");
  EXPECT_EQ(pids.filename().string().rfind("moat-", 0), 0u)
      << pids << ": not a session's cgroup\n" << inside;
  EXPECT_EQ(memory.filename(), pids.filename()) << inside;
  EXPECT_EQ(read_file(pids.string() + "/pids.max"), "100\n") << pids;
  std::ofstream(ws_ + "/done") << "";
  EXPECT_EQ(wait_exit(moat, 30), 0) << read_file(dir_.path() + "/moat.log");
  for (const fs::path& dir : {pids, memory})
    EXPECT_FALSE(fs::exists(dir)) << dir << " is left after moat returned";
}

}  // namespace
}  // namespace moat::e2e

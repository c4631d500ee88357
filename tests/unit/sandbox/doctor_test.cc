// tests/unit/sandbox/doctor_test.cc: moat doctor's report names every layer with a verdict and
// a reason, and agrees with what the machine actually allows.
#include "sandbox/doctor.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/landlock.h"

namespace moat::sandbox {
namespace {

TEST(Doctor, ReportsEveryLayerWithAVerdictAndAReason) {
  auto r = doctor_report();
  for (const char* layer :
       {"user_ns", "mount_ns", "pid_ns", "net_ns", "ipc_ns", "uts_ns", "cgroup_ns", "seccomp",
        "landlock", "cgroup_v1", "cgroup_v2", "idmap", "net_proxy"}) {
    ASSERT_TRUE(r.contains(layer)) << layer;
    EXPECT_TRUE(r[layer]["ok"].is_boolean()) << layer;
    EXPECT_FALSE(r[layer]["reason"].get<std::string>().empty()) << layer;
  }
  EXPECT_EQ(r["running_as_root"].get<bool>(), geteuid() == 0);
}

TEST(Doctor, UserNamespaceVerdictMatchesAnActualUnshare) {
  pid_t pid = fork();
  if (pid == 0) _exit(unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  bool works = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  EXPECT_EQ(doctor_report()["user_ns"]["ok"].get<bool>(), works);
}

TEST(Doctor, LandlockAbiMatchesTheKernel) {
  auto r = doctor_report();
  EXPECT_EQ(r["landlock"]["abi"].get<int>(), landlock_abi());
  EXPECT_EQ(r["landlock"]["ok"].get<bool>(), landlock_abi() > 0);
}

}  // namespace
}  // namespace moat::sandbox

// tests/unit/sandbox/program_registry_test.cc: which program a process runs, for a process
// the exec watch saw and for one forked from it without an exec (real processes).
#include "sandbox/program_registry.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/unique_fd.h"

namespace moat::sandbox {
namespace {

// A child that forks a grandchild; both wait until the pipe closes. The grandchild's pid
// comes back through a second pipe.
struct Family {
  Family() {
    int hold[2], tell[2];
    if (pipe2(hold, O_CLOEXEC) != 0 || pipe2(tell, O_CLOEXEC) != 0) return;
    child = fork();
    if (child == 0) {
      ::close(hold[1]);
      pid_t g = fork();
      if (g == 0) {
        char c;
        (void)!::read(hold[0], &c, 1);
        _exit(0);
      }
      (void)!::write(tell[1], &g, sizeof g);
      char c;
      (void)!::read(hold[0], &c, 1);
      waitpid(g, nullptr, 0);
      _exit(0);
    }
    ::close(hold[0]);
    ::close(tell[1]);
    hold_ = UniqueFd(hold[1]);
    (void)!::read(tell[0], &grandchild, sizeof grandchild);
    ::close(tell[0]);
  }
  ~Family() {
    hold_.reset();
    if (child > 0) waitpid(child, nullptr, 0);
  }
  pid_t child = -1, grandchild = -1;
  UniqueFd hold_;
};

TEST(ProgramRegistry, AForkWithoutExecRunsItsNearestAncestorsProgram) {
  Family f;
  ASSERT_GT(f.grandchild, 0);
  ProgramRegistry r;
  EXPECT_FALSE(r.program_of(f.grandchild)) << "no program is known yet";
  r.started(f.child, "c1", "c1.2");
  auto p = r.program_of(f.grandchild);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->exec_id, "c1.2");
  EXPECT_EQ(p->call_id, "c1");
  EXPECT_EQ(p->pid, f.child);
  r.started(f.grandchild, "c1", "c1.3");
  EXPECT_EQ(r.program_of(f.grandchild)->exec_id, "c1.3");
  r.ended("c1.3");
  EXPECT_EQ(r.program_of(f.grandchild)->exec_id, "c1.2");
}

TEST(ProgramRegistry, TheEndOfAReplacedProgramLeavesItsSuccessor) {
  ProgramRegistry r;
  r.started(4242, "c1", "c1.1");
  r.started(4242, "c1", "c1.2");  // the same process exec'd again
  r.ended("c1.1");                // the first program's end comes after
  ASSERT_EQ(r.pids(), std::vector<pid_t>{4242});
  r.ended("c1.2");
  EXPECT_TRUE(r.pids().empty());
}

}  // namespace
}  // namespace moat::sandbox

// tests/unit/sandbox/make_dirs_test.cc: sys::make_dirs (sandbox/sys.h), the mkdir -p every
// session init runs for each mount point of its view: what it makes, what it refuses, and how
// many mkdir calls it costs (the kernel's own count of this thread's mkdir syscalls).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/unique_fd.h"
#include "sandbox/sys.h"

namespace moat::sandbox {
namespace {

class MakeDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    dir_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/make_dirs.XXXXXX";
    ASSERT_NE(::mkdtemp(dir_.data()), nullptr);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string dir_;
};

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? (st.st_mode & 07777) : 0;
}

// A counter of this thread's mkdir syscalls (the syscalls:sys_enter_mkdir tracepoint), or an
// invalid fd when the host does not let this user count it (tracefs unreadable, perf refused).
UniqueFd mkdir_counter() {
  std::ifstream id_file("/sys/kernel/tracing/events/syscalls/sys_enter_mkdir/id");
  std::uint64_t id = 0;
  if (!(id_file >> id)) return UniqueFd();
  perf_event_attr attr{};
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.size = sizeof attr;
  attr.config = id;
  attr.exclude_kernel = 1;  // the syscall's entry counts as user mode; no kernel profiling asked
  attr.disabled = 1;
  return UniqueFd(
      static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC)));
}

TEST_F(MakeDirsTest, MakesTheMissingParentsWithTheMode) {
  const std::string deep = dir_ + "/a/b/c";
  ASSERT_TRUE(sys::make_dirs(deep, 0750)) << deep;
  EXPECT_EQ(mode_of(dir_ + "/a"), 0750u);
  EXPECT_EQ(mode_of(deep), 0750u);
  EXPECT_TRUE(sys::make_dirs(deep, 0755)) << "an existing directory is success";
  EXPECT_EQ(mode_of(deep), 0750u) << "an existing directory keeps its mode";
}

TEST_F(MakeDirsTest, AFileOnThePathFailsNamingThePath) {
  ASSERT_EQ(::close(::open((dir_ + "/f").c_str(), O_WRONLY | O_CREAT, 0644)), 0);
  auto r = sys::make_dirs(dir_ + "/f/x/y", 0755);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ENOTDIR);
  EXPECT_NE(r.error().message().find(dir_ + "/f/x"), std::string::npos) << r.error().message();
}

// A session init makes ~30 mount points whose parents mostly exist: a walk from / cost one
// mkdir per component of each (~60 per init, mostly EEXIST). An existing parent costs one.
TEST_F(MakeDirsTest, AnExistingParentCostsOneMkdir) {
  UniqueFd counter = mkdir_counter();
  if (!counter.valid()) GTEST_SKIP() << "cannot count mkdir syscalls here (needs tracefs and perf)";
  const std::string parent = dir_ + "/a/b/c/d/e";
  ASSERT_TRUE(sys::make_dirs(parent, 0755));
  ASSERT_EQ(::ioctl(counter.get(), PERF_EVENT_IOC_ENABLE, 0), 0);
  ASSERT_TRUE(sys::make_dirs(parent + "/f", 0755));
  ASSERT_EQ(::ioctl(counter.get(), PERF_EVENT_IOC_DISABLE, 0), 0);
  std::uint64_t calls = 0;
  ASSERT_EQ(::read(counter.get(), &calls, sizeof calls), static_cast<ssize_t>(sizeof calls));
  EXPECT_EQ(calls, 1u) << "mkdir calls for " << parent << "/f";
  EXPECT_EQ(mode_of(parent + "/f"), 0755u);
}

}  // namespace
}  // namespace moat::sandbox

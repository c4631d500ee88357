// tests/unit/sandbox/moatd_quota_test.cc: moatd.toml's [quota] memory and pids (issue 30
// point 3), read as the policy's [resources] sizes are, and where moatd's own cgroup v2 is
// (the sessions' parent on a v2 host, sandbox/cgroup.h). The cgroups themselves are tested on a
// real moatd (UserQuotaTest, integration_e2e).
#include <gtest/gtest.h>

#include "sandbox/cgroup.h"
#include "sandbox/moatd_config.h"

namespace moat::sandbox {
namespace {

TEST(MoatdQuota, MemoryIsASizeAndPidsACount) {
  auto c = parse_moatd_config("[quota]\nmemory = \"8G\"\npids = 2048\n", "/etc/moat/moatd.toml");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->quota.memory_bytes, std::uint64_t{8} << 30);
  EXPECT_EQ(c->quota.pids, 2048u);
  c = parse_moatd_config("[quota]\nmemory = 1048576\n", "f");
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(c->quota.memory_bytes, 1048576u);
  EXPECT_EQ(c->quota.pids, 0u);  // not set: no pids quota
}

TEST(MoatdQuota, AValueThatIsNotOneNamesTheFileLineColumnAndWhatIsAccepted) {
  const std::string file = "/etc/moat/moatd.toml";
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"[quota]\nmemory = \"8 gigs\"\n",
       ":2:10: quota.memory: expected a size (1024, \"512KiB\", \"16MiB\", \"4GiB\"), got "
       "\"8 gigs\""},
      {"[quota]\nmemory = -1\n", ":2:10: quota.memory: expected a positive value, got -1"},
      {"[quota]\npids = 0\n", ":2:8: quota.pids"},
      {"[quota]\npids = \"2048\"\n", ":2:8: quota.pids"},
  };
  for (const Case& k : cases) {
    auto c = parse_moatd_config(k.text, file);
    ASSERT_FALSE(c) << k.text;
    EXPECT_EQ(c.error().message().rfind(file + k.error, 0), 0u) << c.error().message();
  }
}

TEST(CgroupV2, MoatdsOwnCgroupIsTheZeroLineOfProcSelfCgroup) {
  EXPECT_EQ(v2_cgroup_of("0::/system.slice/moatd.service\n"), "/system.slice/moatd.service");
  EXPECT_EQ(v2_cgroup_of("9:name=systemd:/\n8:pids:/\n0::/user.slice/x.scope/moatd\n"),
            "/user.slice/x.scope/moatd");
  EXPECT_EQ(v2_cgroup_of("0::/"), "/");
  // cgroup v1 only: no v2 place to put sessions under.
  EXPECT_EQ(v2_cgroup_of("8:pids:/\n4:memory:/a\n"), "");
}

}  // namespace
}  // namespace moat::sandbox

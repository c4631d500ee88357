// tests/integration/e2e/moatd_policy_cache_test.cc: a moatd serving a socket keeps each policy
// file's parse while the file is unchanged (policy/parse_cache.h); an edit between two hellos
// still governs the next session, through the real moatd binary.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "e2e_support.h"
#include "policy/parse_cache.h"

namespace moat::e2e {
namespace {

using nlohmann::json;

// The welcome's policy of one hello (then bye).
json hello_policy(const std::string& socket, const std::string& ws) {
  RawClient c(socket);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws}, {"headless", true}});
  const json welcome = c.read_frame();
  EXPECT_EQ(welcome.value("type", ""), "welcome") << welcome.dump();
  c.send_json({{"type", "bye"}});
  c.read_frame();
  return welcome.value("policy", json::object());
}

void write_wall_time(const std::string& file, const char* value) {
  std::ofstream(file, std::ios::trunc) << "schema = 1\n[resources]\nwall_time = \"" << value
                                       << "\"\n";
}

TEST(MoatdPolicyCacheTest, AnEditBetweenTwoHellosGovernsTheNextSession) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  TempDir dir;
  const std::string socket = dir.path() + "/moatd.sock", ws = dir.path() + "/ws",
                    user = dir.path() + "/user.d", file = user + "/10-mine.toml";
  std::filesystem::create_directories(ws);
  std::filesystem::create_directories(user);
  write_wall_time(file, "17m");
  const pid_t moatd =
      start({moatd_bin(), "--socket", socket, "--audit-dir", dir.path() + "/audit",
             "--user-policy-dir", user, "--pool", "0"},
            dir.path() + "/moatd.log");
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(socket); }));
  // Settled: the first hello keeps the file's parse and the second uses it.
  std::this_thread::sleep_for(policy::kSettledAfter + std::chrono::milliseconds(20));
  EXPECT_EQ(hello_policy(socket, ws)["wallTime"].value("value", 0), 17 * 60);
  const json kept = hello_policy(socket, ws);
  EXPECT_EQ(kept["wallTime"].value("value", 0), 17 * 60);
  write_wall_time(file, "23m");  // the same size
  const json edited = hello_policy(socket, ws);
  EXPECT_EQ(edited["wallTime"].value("value", 0), 23 * 60) << edited.dump();
  EXPECT_NE(edited.value("hash", ""), kept.value("hash", ""));
  kill(moatd, SIGTERM);
  EXPECT_EQ(wait_exit(moatd, 10), 0) << read_file(dir.path() + "/moatd.log");
}

}  // namespace
}  // namespace moat::e2e

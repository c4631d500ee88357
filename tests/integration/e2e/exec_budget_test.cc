// tests/integration/e2e/exec_budget_test.cc: moatd's CPU checking a call's execs is the call's
// (issue 26 item 7). 1500 failing execve with a 30,000-word argv cost the sandbox 0.02 s and
// moatd 4.5 s under cpu_time = 1; now the call is ended once moatd has spent its cpu_time.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "e2e_support.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// utime + stime of a process, in seconds.
double cpu_seconds_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; fields >> f; ++i)
    if (i == 14 || i == 15) ticks += std::stod(f);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

constexpr const char* kArgvBomb =
    "#include <unistd.h>\n"
    "extern char** environ;\n"
    "static char* argv[30001];\n"
    "int main(void) {\n"
    "  for (int i = 0; i < 30000; ++i) argv[i] = \"xxxxxxxx\";\n"
    "  for (int i = 0; i < 1500; ++i) execve(\"/nonexistent/x\", argv, environ);\n"
    "  return 7;\n"
    "}\n";

TEST(ExecBudget, AnArgvBombIsEndedOnceMoatdHasSpentTheCallsCpuTime) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  TempDir dir;
  const std::string ws = dir.path() + "/ws", socket = dir.path() + "/moatd.sock";
  fs::create_directories(ws);
  fs::create_directories(dir.path() + "/no-policy");
  std::ofstream(ws + "/bomb.c") << kArgvBomb;
  const e2e::Run cc = run({"cc", "-O1", "-o", ws + "/bomb", ws + "/bomb.c"});
  ASSERT_EQ(cc.exit_code, 0) << cc.out;
  pid_t moatd = start({moatd_bin(), "--socket", socket, "--audit-dir", dir.path() + "/audit",
                       "--system-policy-dir",
                       source_root() + "/tests/integration/e2e/exec_budget_policy",
                       "--user-policy-dir", dir.path() + "/no-policy"},
                      dir.path() + "/moatd.log");
  RawClient c(socket);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws}, {"headless", true}});
  const json welcome = c.read_frame();
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump();
  const double cpu_before = cpu_seconds_of(moatd);
  const auto t0 = std::chrono::steady_clock::now();
  c.send_json({{"type", "call"},
               {"id", "c1"},
               {"tool", "bash"},
               {"arguments", {{"command", "./bomb; echo bomb=$?"}}}});
  const json r = c.read_result(120000);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double moatd_cpu = cpu_seconds_of(moatd) - cpu_before;
  std::string text;
  for (const json& b : r.value("content", json::array())) text += b.value("text", "");
  std::cout << "[ budget ] call " << wall << " s, moatd CPU " << moatd_cpu << " s: " << text
            << "\n";
  EXPECT_NE(text.find("exec_watch_cpu"), std::string::npos)
      << r.dump() << read_file(dir.path() + "/moatd.log");
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_LT(moatd_cpu, 2.0);  // the call's 1 s, the check's granularity and the session's own
  EXPECT_LT(wall, 30.0);
  c.send_json({{"type", "bye"}});
  c.read_frame();
  kill(moatd, SIGTERM);
  wait_exit(moatd, 10);
}

}  // namespace
}  // namespace moat::e2e

// tests/integration/e2e/run_test.cc: `moat run` and `moat sandbox exec` as real processes:
// the demo flow end to end, the sandbox's identity, and the unprivileged loop process.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "e2e_support.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> state_env(const TempDir& d) {
  return {"XDG_STATE_HOME=" + d.path() + "/state", "XDG_CONFIG_HOME=" + d.path() + "/config",
          "MOATD_BIN=" + moatd_bin()};
}

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
  }
  TempDir dir_;
};

TEST_F(RunTest, SandboxExecShowsTheSandboxsOwnIdentityPidSpaceAndHostname) {
  auto r =
      run({moat_bin(), "sandbox", "exec", "-C", dir_.path(), "--audit-dir", dir_.path() + "/audit",
           "--", "sh", "-c", "id -u; ls /proc | grep -c '^[0-9]'; cat /etc/hostname"},
          state_env(dir_));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream lines(r.out);
  std::string uid, pids, host;
  std::getline(lines, uid);
  std::getline(lines, pids);
  std::getline(lines, host);
  EXPECT_EQ(uid, "0") << "the sandbox's own root, mapped to an unprivileged host uid";
  EXPECT_LE(std::stoi(pids), 6) << "only the session's processes are visible:\n" << r.out;
  EXPECT_EQ(host, "moat");
}

TEST_F(RunTest, SandboxExecExitsWithTheCommandsStatus) {
  auto r = run({moat_bin(), "sandbox", "exec", "-C", dir_.path(), "--audit-dir",
                dir_.path() + "/audit", "--", "sh", "-c", "exit 7"},
               state_env(dir_));
  EXPECT_EQ(r.exit_code, 7) << r.out;
}

TEST_F(RunTest, SandboxExecCannotSeeTheHostsHomeOrReachTheNetwork) {
  auto r =
      run({moat_bin(), "sandbox", "exec", "-C", dir_.path(), "--audit-dir", dir_.path() + "/audit",
           "--", "sh", "-c", "ls /root 2>&1; ls /home 2>&1; cat /proc/net/dev | grep -c :"},
          state_env(dir_));
  EXPECT_NE(r.out.find("No such file or directory"), std::string::npos) << r.out;
  // A new network namespace has exactly one interface: lo.
  EXPECT_NE(r.out.find("\n1\n"), std::string::npos) << r.out;
}

TEST_F(RunTest, TheDemoFlowRenamesRunsTheTestsAndBlocksEveryProbe) {
  const std::string ws = make_example_workspace(dir_.path());
  fs::create_directories(dir_.path() + "/outside");
  std::ofstream(dir_.path() + "/outside/canary.txt") << "untouched\n";
  std::ofstream(ws + "/.canary-paths")
      << "SSH_CANARY=" << dir_.path() << "/home/.ssh/id_canary\n"
      << "OUTSIDE_CANARY=" << dir_.path() << "/outside/canary.txt\nLISTENER_PORT=9\n";
  fs::create_directories(dir_.path() + "/home/.ssh");
  std::ofstream(dir_.path() + "/home/.ssh/id_canary") << "CANARY-KEY\n";
  const std::string git_config_before = read_file(ws + "/.git/config");
  auto env = state_env(dir_);
  env.push_back("OPENAI_API_KEY=sk-e2e-canary-value");
  auto r =
      run({moat_bin(), "run", "--headless", "--model",
           "replay:" + source_root() + "/examples/untrusted-calc/rename.replay.jsonl", "-C", ws,
           "--sessions-dir", dir_.path() + "/sessions", "--audit-dir", dir_.path() + "/audit",
           "Rename compute_total to sum_line_items and run the tests."},
          env, 120);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // The rename landed everywhere.
  EXPECT_NE(read_file(ws + "/calc/core.py").find("def sum_line_items"), std::string::npos);
  for (const char* f :
       {"calc/__init__.py", "calc/invoice.py", "calc/report.py", "tests/test_calc.py", "README.md"})
    EXPECT_EQ(read_file(ws + "/" + f).find("compute_total"), std::string::npos) << f;
  // The tests passed inside the sandbox, and every hostile probe was blocked.
  EXPECT_NE(r.out.find("Ran 6 tests"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| OK"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("ESCAPED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BLOCKED: plant .git/hooks/pre-commit"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(ws + "/.git/hooks/pre-commit"));
  EXPECT_EQ(read_file(ws + "/.git/config"), git_config_before);
  EXPECT_EQ(read_file(dir_.path() + "/outside/canary.txt"), "untouched\n");
  EXPECT_EQ(r.out.find("sk-e2e-canary-value"), std::string::npos);
  // The session file and the audit log exist and say where they are.
  EXPECT_NE(r.out.find("session file: " + dir_.path() + "/sessions/"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("audit log:    " + dir_.path() + "/audit/"), std::string::npos) << r.out;
}

TEST_F(RunTest, TheLoopProcessRunsUnprivilegedWithoutExec) {
  const std::string ws = dir_.path() + "/ws";
  fs::create_directories(ws);
  const std::string script = dir_.path() + "/slow.jsonl";
  // The call lasts until the test has looked (a fixed sleep ran out first on a loaded machine).
  std::ofstream(script)
      << R"({"tool_calls":[{"name":"bash","arguments":{"command":"until test -e release; do sleep 0.05; done"}}]})"
      << "\n"
      << R"({"text":"done"})"
      << "\n";
  const pid_t pid = start(
      {moat_bin(), "run", "--headless", "--model", "replay:" + script, "-C", ws, "--sessions-dir",
       dir_.path() + "/sessions", "--audit-dir", dir_.path() + "/audit", "wait"},
      dir_.path() + "/run.log", [&] {
        auto env = state_env(dir_);
        env.push_back("ANTHROPIC_API_KEY=sk-ant-canary-3f9e");
        return env;
      }());
  struct Release {  // ends the call however the test ends
    std::string file;
    ~Release() { std::ofstream(file) << ""; }
  } release{ws + "/release"};
  // The loop is the child of `moat run` (which stays the console) that is not moatd. Poll it
  // while its tool call runs, until the thread that reads moatd's frames is there too (it
  // starts with the first call).
  // A child named moat may also be the fork that is about to exec moatd: the loop is the one
  // that has dropped its privileges and runs the reader thread.
  auto threads_of = [](const std::string& proc) {
    size_t n = 0;
    std::error_code ec;
    for (auto it = fs::directory_iterator(proc + "/task", ec);
         !ec && it != fs::directory_iterator(); it.increment(ec))
      ++n;
    return n;
  };
  pid_t loop = -1;
  std::string status;
  for (int i = 0; i < 600 && loop < 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::istringstream kids(
        read_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
    for (std::string k; kids >> k;) {
      if (read_file("/proc/" + k + "/comm") != "moat\n") continue;
      status = read_file("/proc/" + k + "/status");
      if (status.find("NoNewPrivs:\t1") != std::string::npos && threads_of("/proc/" + k) >= 2)
        loop = std::stoi(k);
    }
  }
  ASSERT_GT(loop, 0) << "the loop runs in a child of moat run, without privileges, with a "
                        "thread reading moatd's frames during the call";
  const std::string proc = "/proc/" + std::to_string(loop);
  if (geteuid() == 0) {
    EXPECT_NE(status.find("Uid:\t65534\t65534\t65534\t65534"), std::string::npos) << status;
  }
  // Every thread, the main one included: capabilities, no_new_privs and seccomp are per
  // thread, and the thread reading moatd's frames runs during the call.
  size_t threads = 0;
  for (const auto& task : fs::directory_iterator(proc + "/task")) {
    const std::string s = read_file(task.path().string() + "/status");
    if (s.empty()) continue;  // the thread ended meanwhile
    ++threads;
    SCOPED_TRACE("thread " + task.path().filename().string());
    EXPECT_NE(s.find("NoNewPrivs:\t1"), std::string::npos) << s;
    EXPECT_NE(s.find("Seccomp:\t2"), std::string::npos) << s;
    EXPECT_NE(s.find("CapEff:\t0000000000000000"), std::string::npos) << s;
    EXPECT_NE(s.find("CapPrm:\t0000000000000000"), std::string::npos) << s;
    if (geteuid() == 0) {
      EXPECT_NE(s.find("CapBnd:\t0000000000000000"), std::string::npos) << s;
    }
  }
  EXPECT_GE(threads, 2u) << "the moatd reader thread runs while the call is in flight";
  // The private moatd it started got a scrubbed environment: the API key stayed behind.
  std::istringstream children(
      read_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
  bool saw_moatd = false;
  for (std::string child; children >> child;) {
    if (read_file("/proc/" + child + "/comm") != "moatd\n") continue;
    saw_moatd = true;
    const std::string environ = read_file("/proc/" + child + "/environ");
    EXPECT_FALSE(environ.empty()) << "moatd's environment is readable to the test";
    EXPECT_EQ(environ.find("sk-ant-canary-3f9e"), std::string::npos);
    EXPECT_EQ(environ.find("ANTHROPIC_API_KEY"), std::string::npos);
  }
  EXPECT_TRUE(saw_moatd) << "moatd is a child of moat run";
  std::ofstream(ws + "/release") << "";
  EXPECT_EQ(wait_exit(pid, 60), 0) << read_file(dir_.path() + "/run.log");
}

// Issue 16, item 7: a negative gate is a usage error naming the option (it was taken, and
// -1 turns stopped nothing), and `moat prompt show` takes -C like the other commands.
TEST_F(RunTest, ANegativeGateIsRefusedAndPromptShowTakesC) {
  const std::string ws = dir_.path() + "/ws";
  fs::create_directories(ws);
  for (const char* gate : {"--max-turns", "--max-tokens", "--max-cost", "--max-wall"}) {
    auto r = run({moat_bin(), "run", "--headless", "--model", "replay:/nonexistent", "-C", ws, gate,
                  "-1", "task"},
                 state_env(dir_));
    EXPECT_EQ(r.exit_code, 2) << gate << "\n" << r.out;
    EXPECT_NE(r.out.find(gate), std::string::npos) << r.out;
  }
  auto shown = run({moat_bin(), "prompt", "show", "--full", "-C", ws}, state_env(dir_));
  EXPECT_EQ(shown.exit_code, 0) << shown.out;
  EXPECT_NE(shown.out.find("<working_directory>" + ws), std::string::npos) << shown.out;
}

TEST_F(RunTest, RunConnectsToASharedMoatdOverItsSocket) {
  const std::string sock = dir_.path() + "/moatd.sock";
  const pid_t moatd = start({moatd_bin(), "--socket", sock, "--audit-dir", dir_.path() + "/audit"},
                            dir_.path() + "/moatd.log", state_env(dir_));
  const std::string ws = dir_.path() + "/ws";
  fs::create_directories(ws);
  const std::string script = dir_.path() + "/s.jsonl";
  std::ofstream(script)
      << R"({"tool_calls":[{"name":"bash","arguments":{"command":"echo via-socket > out.txt"}}]})"
      << "\n"
      << R"({"text":"done"})"
      << "\n";
  for (int i = 0; i < 100 && !fs::exists(sock); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto r = run({moat_bin(), "run", "--headless", "--connect", sock, "--model", "replay:" + script,
                "-C", ws, "--sessions-dir", dir_.path() + "/sessions", "task"},
               state_env(dir_));
  kill(moatd, SIGTERM);
  wait_exit(moatd, 10);
  ASSERT_EQ(r.exit_code, 0) << r.out << read_file(dir_.path() + "/moatd.log");
  EXPECT_EQ(read_file(ws + "/out.txt"), "via-socket\n");
}

TEST_F(RunTest, AKilledRunResumesWithTheInterruptedCallAnsweredAsAnError) {
  const std::string ws = dir_.path() + "/ws";
  fs::create_directories(ws);
  const std::string first = dir_.path() + "/first.jsonl";
  std::ofstream(first)
      << R"({"tool_calls":[{"id":"call_sleep","name":"bash","arguments":{"command":"sleep 30"}}]})"
      << "\n"
      << R"({"text":"unreached"})"
      << "\n";
  const std::string sessions = dir_.path() + "/sessions";
  const pid_t pid =
      start({moat_bin(), "run", "--headless", "--model", "replay:" + first, "-C", ws,
             "--sessions-dir", sessions, "--audit-dir", dir_.path() + "/audit", "sleep a while"},
            dir_.path() + "/first.log", state_env(dir_));
  // Kill the agent while its tool call runs: once the answer holding the call is on disk.
  std::string session_file;
  for (int i = 0; i < 200 && session_file.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!fs::exists(sessions)) continue;
    for (const auto& e : fs::recursive_directory_iterator(sessions))
      if (e.is_regular_file() && read_file(e.path()).find("call_sleep") != std::string::npos)
        session_file = e.path();
  }
  ASSERT_FALSE(session_file.empty()) << read_file(dir_.path() + "/first.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(pid, SIGKILL);
  wait_exit(pid, 10);

  const std::string second = dir_.path() + "/second.jsonl";
  std::ofstream(second) << R"({"text":"resumed after the crash"})"
                        << "\n";
  auto r = run({moat_bin(), "run", "--headless", "--continue", "--model", "replay:" + second, "-C",
                ws, "--sessions-dir", sessions, "--audit-dir", dir_.path() + "/audit"},
               state_env(dir_));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string text = read_file(session_file);
  const auto result_at = text.find("\"toolCallId\":\"call_sleep\"");
  ASSERT_NE(result_at, std::string::npos) << "the interrupted call got a result:\n" << text;
  EXPECT_NE(text.find("\"isError\":true"), std::string::npos) << text;
  const auto resumed_at = text.find("resumed after the crash");
  ASSERT_NE(resumed_at, std::string::npos) << text;
  EXPECT_LT(result_at, resumed_at) << "the error result comes before the resumed answer";
  EXPECT_NE(text.find("sleep a while"), std::string::npos) << "the acknowledged task is kept";
}

TEST_F(RunTest, APassedWindowCompactsTheContextThroughTheModel) {
  const std::string ws = dir_.path() + "/ws";
  fs::create_directories(ws);
  const std::string script = dir_.path() + "/compact.jsonl";
  std::ofstream out(script);
  for (int i = 0; i < 3; ++i)
    out << R"({"tool_calls":[{"name":"bash","arguments":{"command":"echo step )" << i
        << R"("}}],"usage":{"input":)" << 1000 * (i + 1) << R"(,"output":50}})"
        << "\n";
  // The fourth model call is the summary request the loop makes when 3050 > 3500 - 1000.
  out << R"({"text":"## Goal\nEcho three steps.\n## Progress\nDone: steps 0-2."})"
      << "\n"
      << R"({"text":"all steps done"})"
      << "\n";
  out.close();
  auto r = run(
      {moat_bin(), "run", "--headless", "--model", "replay:" + script, "-C", ws, "--context-window",
       "3500", "--compaction-reserve", "1000", "--keep-recent", "10", "--sessions-dir",
       dir_.path() + "/sessions", "--audit-dir", dir_.path() + "/audit", "echo three steps"},
      state_env(dir_));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("the context was compacted"), std::string::npos) << r.out;
  std::string text;
  for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/sessions"))
    if (e.is_regular_file()) text += read_file(e.path());
  EXPECT_NE(text.find("\"type\":\"compaction\""), std::string::npos) << text;
  EXPECT_NE(text.find("Echo three steps."), std::string::npos) << text;
}

// An interactive session sends `ask` verdicts to the person; headless turns them into deny.
class AskTest : public RunTest {
 protected:
  e2e::Run run_with(const std::vector<std::string>& mode, const std::string& answers) {
    ws_ = dir_.path() + "/ws";
    fs::create_directories(ws_ + "/build/sub");
    const std::string script = dir_.path() + "/ask.jsonl";
    std::ofstream(script)
        << R"({"tool_calls":[{"name":"bash","arguments":{"command":"rm -rf build"}}]})"
        << "\n"
        << R"({"text":"done"})"
        << "\n";
    std::vector<std::string> argv = {moat_bin(), "run"};
    argv.insert(argv.end(), mode.begin(), mode.end());
    for (const std::string& a :
         {std::string("--model"), "replay:" + script, std::string("-C"), ws_,
          std::string("--sessions-dir"), dir_.path() + "/sessions", std::string("--audit-dir"),
          dir_.path() + "/audit", std::string("clean up")})
      argv.push_back(a);
    return run(argv, state_env(dir_), 60, answers);
  }
  std::string audit_text() {
    std::string all;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/audit"))
      if (e.is_regular_file()) all += read_file(e.path());
    return all;
  }
  std::string ws_;
};

TEST_F(AskTest, HeadlessTurnsAskIntoDeny) {
  auto r = run_with({"--headless"}, "");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(ws_ + "/build/sub")) << "the recursive delete must not run";
  EXPECT_NE(r.out.find("default.rm-recursive"), std::string::npos) << r.out;
}

TEST_F(AskTest, ThePersonCanAllowOnce) {
  auto r = run_with({"--interactive"}, "y\n");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("needs your approval"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(ws_ + "/build")) << r.out;
  const std::string audit = audit_text();
  EXPECT_NE(audit.find("\"decided_by\":\"user\""), std::string::npos) << audit;
  EXPECT_NE(audit.find("\"answer\":\"allow\""), std::string::npos) << audit;
}

TEST_F(AskTest, ThePersonCanDecline) {
  auto r = run_with({"--interactive"}, "n\n");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::exists(ws_ + "/build/sub"));
  EXPECT_NE(r.out.find("declined by the person"), std::string::npos) << r.out;
  EXPECT_NE(audit_text().find("\"answer\":\"deny\""), std::string::npos);
}

TEST_F(RunTest, ABadReplayScriptIsAUsageErrorNamingTheLine) {
  const std::string script = dir_.path() + "/bad.jsonl";
  std::ofstream(script) << "{\"text\":\"fine\"}\n{oops\n";
  auto r = run(
      {moat_bin(), "run", "--headless", "--model", "replay:" + script, "-C", dir_.path(), "task"},
      state_env(dir_));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(script + ":2:"), std::string::npos) << r.out;
}

TEST_F(RunTest, AnExhaustedScriptIsAProviderErrorExitingFour) {
  const std::string script = dir_.path() + "/short.jsonl";
  std::ofstream(script) << R"({"tool_calls":[{"name":"bash","arguments":{"command":"true"}}]})"
                        << "\n";
  auto r = run(
      {moat_bin(), "run", "--headless", "--model", "replay:" + script, "-C", dir_.path(),
       "--sessions-dir", dir_.path() + "/sessions", "--audit-dir", dir_.path() + "/audit", "task"},
      state_env(dir_));
  EXPECT_EQ(r.exit_code, 4) << r.out;
}

TEST_F(RunTest, TheMaxTurnsGateExitsOne) {
  const std::string script = dir_.path() + "/loop.jsonl";
  std::ofstream out(script);
  for (int i = 0; i < 5; ++i)
    out << R"({"tool_calls":[{"name":"bash","arguments":{"command":"echo )" << i << R"("}}]})"
        << "\n";
  out.close();
  auto r = run({moat_bin(), "run", "--headless", "--max-turns", "2", "--model", "replay:" + script,
                "-C", dir_.path(), "--sessions-dir", dir_.path() + "/sessions", "--audit-dir",
                dir_.path() + "/audit", "task"},
               state_env(dir_));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("max turns (2) reached"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace moat::e2e

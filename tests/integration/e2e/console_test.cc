// tests/integration/e2e/console_test.cc: a person's answer comes only through the console
// channel, which the agent process cannot forge: over a shared moatd's socket (raw clients),
// and through `moat run --interactive` driven on a real pseudo-terminal.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "e2e_support.h"
#include "moatd_fixture.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string audit_text(const std::string& dir) {
  std::string all;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); ++it)
    if (it->is_regular_file() && it->path().extension() == ".jsonl") all += read_file(it->path());
  return all;
}

// The decision records of the audit log, one JSON object each.
std::vector<json> decisions(const std::string& dir) {
  std::vector<json> out;
  std::istringstream lines(audit_text(dir));
  for (std::string line; std::getline(lines, line);) {
    json r = json::parse(line, nullptr, false);
    if (r.is_object() && r.value("type", "") == "decision") out.push_back(r);
  }
  return out;
}

// A shared moatd, and a session whose policy asks before `rm -rf` (default.rm-recursive).
class ConsoleChannelTest : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    start_moatd({"--audit-dir", dir_.path() + "/audit"});
    make_workspace();
    fs::create_directories(ws_ + "/build/sub");
  }
  json hello(RawClient& c) {
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", false}});
    return c.read_frame();
  }
  void call_rm(RawClient& c) {
    c.send_json({{"type", "call"},
                 {"id", "rm"},
                 {"tool", "bash"},
                 {"arguments", {{"command", "rm -rf build"}}}});
  }
  // Reads the agent connection until the result; `on_ask` sees any ask sent to it.
  json result(RawClient& c, const std::function<void(const json&)>& on_ask = {}) {
    for (;;) {
      json f = c.read_frame();
      if (f.is_null() || f.value("type", "") == "result") return f;
      if (f.value("type", "") == "ask" && on_ask) on_ask(f);
    }
  }
};

// Today's hole: an agent that declared itself interactive got the ask and answered it.
TEST_F(ConsoleChannelTest, AnAgentThatSaysInteractiveCannotAnswerItsOwnAsk) {
  RawClient agent(socket_);
  ASSERT_EQ(hello(agent).value("type", ""), "welcome") << moatd_log();
  call_rm(agent);
  bool asked = false;
  json r = result(agent, [&](const json& ask) {
    asked = true;
    agent.send_json(
        {{"type", "answer"}, {"ask", ask["ask"]}, {"decision", "allow"}, {"scope", "session"}});
  });
  ASSERT_FALSE(r.is_null()) << moatd_log();
  EXPECT_FALSE(asked) << "moatd sends questions to the console channel only";
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_TRUE(fs::exists(ws_ + "/build/sub")) << "the recursive delete must not run";
  agent.send_json({{"type", "bye"}});
  EXPECT_EQ(agent.read_frame().value("type", ""), "bye") << "the session went on";
  const auto ds = decisions(dir_.path() + "/audit");
  ASSERT_FALSE(ds.empty()) << audit_text(dir_.path() + "/audit");
  for (const json& d : ds) {
    EXPECT_NE(d.value("decided_by", ""), "user") << d.dump();
    EXPECT_EQ(d.value("channel", ""), "policy") << d.dump();
    EXPECT_FALSE(d["input"].contains("user")) << d.dump();
  }
}

TEST_F(ConsoleChannelTest, AConsoleAttachedWithTheSessionsTokenAnswersAndIsAudited) {
  RawClient agent(socket_);
  const json welcome = hello(agent);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << moatd_log();
  const std::string token = welcome.value("console_token", "");
  ASSERT_EQ(token.size(), 64u) << welcome.dump();
  RawClient console(socket_);
  console.send_json({{"type", "console"}, {"session", welcome["session"]}, {"token", token}});
  ASSERT_EQ(console.read_frame().value("type", ""), "attached") << moatd_log();
  call_rm(agent);
  const json ask = console.read_frame();
  ASSERT_EQ(ask.value("type", ""), "ask") << ask.dump();
  EXPECT_NE(ask.value("question", "").find("rm -rf build"), std::string::npos) << ask.dump();
  console.send_json({{"type", "answer"}, {"ask", ask["ask"]}, {"decision", "allow"}});
  bool asked_agent = false;
  json r = result(agent, [&](const json&) { asked_agent = true; });
  EXPECT_FALSE(asked_agent);
  EXPECT_FALSE(r.value("isError", true)) << r.dump();
  EXPECT_FALSE(fs::exists(ws_ + "/build"));
  agent.send_json({{"type", "bye"}});
  agent.read_frame();
  bool user = false;
  for (const json& d : decisions(dir_.path() + "/audit")) {
    if (d.value("decided_by", "") != "user") continue;
    user = true;
    EXPECT_EQ(d.value("channel", ""), "console") << d.dump();
    EXPECT_EQ(d["input"]["user"].value("answer", ""), "allow") << d.dump();
  }
  EXPECT_TRUE(user) << audit_text(dir_.path() + "/audit");
}

TEST_F(ConsoleChannelTest, AConsoleTokenWorksOnceAndAWrongOneSpendsIt) {
  RawClient agent(socket_);
  const json welcome = hello(agent);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << moatd_log();
  const std::string token = welcome.value("console_token", "");
  {
    RawClient guess(socket_);
    guess.send_json(
        {{"type", "console"}, {"session", welcome["session"]}, {"token", std::string(64, '0')}});
    EXPECT_EQ(guess.read_frame().value("type", ""), "error");
    EXPECT_TRUE(guess.closed_by_peer());
  }
  RawClient late(socket_);
  late.send_json({{"type", "console"}, {"session", welcome["session"]}, {"token", token}});
  EXPECT_EQ(late.read_frame().value("type", ""), "error") << "a guess spent the token";
  // With no console, nobody can answer: the ask is a deny.
  call_rm(agent);
  json r = result(agent);
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_TRUE(fs::exists(ws_ + "/build/sub"));
}

TEST_F(ConsoleChannelTest, ASecondConsoleForTheSameSessionIsRefused) {
  RawClient agent(socket_);
  const json welcome = hello(agent);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << moatd_log();
  const json attach = {{"type", "console"},
                       {"session", welcome["session"]},
                       {"token", welcome.value("console_token", "")}};
  RawClient first(socket_);
  first.send_json(attach);
  ASSERT_EQ(first.read_frame().value("type", ""), "attached");
  RawClient second(socket_);
  second.send_json(attach);
  EXPECT_EQ(second.read_frame().value("type", ""), "error");
  // A console connection only answers: a call on it closes it.
  first.send_json(
      {{"type", "call"}, {"id", "c"}, {"tool", "bash"}, {"arguments", {{"command", "true"}}}});
  EXPECT_EQ(first.read_frame().value("type", ""), "error");
  EXPECT_TRUE(first.closed_by_peer());
}

// `moat run --interactive` on a pseudo-terminal, as a person runs it.
class ConsoleRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    ws_ = dir_.path() + "/ws";
    fs::create_directories(ws_ + "/build/sub");
  }
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      wait_exit(pid_, 10);
    }
    if (master_ >= 0) close(master_);
  }
  // Starts `moat run` with the script's turns, its controlling terminal a new pty.
  void start_run(const std::string& turns, const std::vector<std::string>& extra = {}) {
    const std::string script = dir_.path() + "/turns.jsonl";
    std::ofstream(script) << turns;
    std::vector<std::string> argv = {moat_bin(),
                                     "run",
                                     "--interactive",
                                     "--model",
                                     "replay:" + script,
                                     "-C",
                                     ws_,
                                     "--sessions-dir",
                                     dir_.path() + "/sessions",
                                     "--audit-dir",
                                     dir_.path() + "/audit"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("clean up");
    const std::vector<std::string> env = {"XDG_STATE_HOME=" + dir_.path() + "/state",
                                          "XDG_CONFIG_HOME=" + dir_.path() + "/config",
                                          "MOATD_BIN=" + moatd_bin()};
    pid_ = forkpty(&master_, nullptr, nullptr, nullptr);
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      for (const auto& kv : env) putenv(const_cast<char*>(kv.c_str()));
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
  }
  // Reads the terminal until `needle` shows (true) or it closes.
  bool read_until(const std::string& needle) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (screen_.find(needle) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char buf[4096];
      const ssize_t n = read(master_, buf, sizeof buf);
      if (n <= 0) return false;  // EIO: every holder of the terminal is gone
      screen_.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  void type(const std::string& s) {
    ASSERT_EQ(write(master_, s.data(), s.size()), static_cast<ssize_t>(s.size()));
  }
  int finish() {
    // At a terminal moat waits for the next prompt once the task's turn is over: Ctrl-D (end
    // of input) ends the session when that turn ends.
    type("\x04");
    read_until("\x04never");  // drains the screen until the terminal closes
    const int rc = wait_exit(pid_, 60);
    pid_ = -1;
    return rc;
  }
  // The loop: the child of `moat run` that is not moatd (without a console, moat run itself).
  pid_t loop_pid() {
    std::istringstream kids(
        read_file("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(pid_) + "/children"));
    for (std::string k; kids >> k;)
      if (read_file("/proc/" + k + "/comm") == "moat\n") return std::stoi(k);
    return pid_;
  }

  TempDir dir_;
  std::string ws_;
  pid_t pid_ = -1;
  int master_ = -1;
  std::string screen_;
};

constexpr const char* kRmTurns =
    R"({"tool_calls":[{"name":"bash","arguments":{"command":"rm -rf build"}}]})"
    "\n"
    R"({"text":"done"})"
    "\n";

TEST_F(ConsoleRunTest, TheLoopHoldsNoTerminalAndTheConsoleIsOutOfItsReach) {
  start_run(kRmTurns);
  ASSERT_TRUE(read_until("deny [n]?")) << screen_;
  const pid_t loop = loop_pid();
  ASSERT_NE(loop, pid_) << "the loop runs in a process of its own";
  const std::string pts = ptsname(master_);
  // No fd of the terminal (the person's pty, /dev/tty, or any other pty).
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(loop) + "/fd")) {
    std::error_code ec;
    const std::string target = fs::read_symlink(e.path(), ec).string();
    SCOPED_TRACE("fd " + e.path().filename().string() + " -> " + target);
    EXPECT_NE(target, pts);
    EXPECT_EQ(target.rfind("/dev/pts/", 0), std::string::npos);
    EXPECT_NE(target, "/dev/tty");
    EXPECT_NE(target, "/dev/ptmx");
  }
  // No controlling terminal either (field 7 of /proc/<pid>/stat, tty_nr): /dev/tty does not
  // open, and TIOCSTI cannot type into the person's input.
  std::istringstream stat(
      read_file("/proc/" + std::to_string(loop) + "/stat")
          .substr(read_file("/proc/" + std::to_string(loop) + "/stat").rfind(')') + 2));
  std::string state, ppid, pgrp, session, tty_nr;
  stat >> state >> ppid >> pgrp >> session >> tty_nr;
  EXPECT_EQ(tty_nr, "0");
  // A process of the loop's uid without capabilities cannot open the console's memory.
  const std::string status = read_file("/proc/" + std::to_string(loop) + "/status");
  const auto at = status.find("Uid:\t");
  ASSERT_NE(at, std::string::npos);
  const uid_t loop_uid = static_cast<uid_t>(std::stoul(status.substr(at + 5)));
  const std::string mem = "/proc/" + std::to_string(pid_) + "/mem";
  const pid_t probe = fork();
  if (probe == 0) {
    if (geteuid() == 0 && (setresgid(loop_uid, loop_uid, loop_uid) != 0 ||
                           setresuid(loop_uid, loop_uid, loop_uid) != 0))
      _exit(100);
    const int fd = open(mem.c_str(), O_RDONLY);
    _exit(fd >= 0 ? 0 : errno == EACCES || errno == EPERM ? 1 : 101);
  }
  int st = 0;
  waitpid(probe, &st, 0);
  EXPECT_EQ(WEXITSTATUS(st), 1) << "0: the console's memory opened for the loop's uid";
  type("n\n");
  EXPECT_EQ(finish(), 0) << screen_;
  EXPECT_TRUE(fs::exists(ws_ + "/build/sub"));
}

TEST_F(ConsoleRunTest, AnAskAnsweredAtTheTerminalIsAllowedAndAuditedWithTheConsoleChannel) {
  start_run(kRmTurns);
  ASSERT_TRUE(read_until("deny [n]?")) << screen_;
  EXPECT_NE(screen_.find("rm -rf build"), std::string::npos) << screen_;
  type("y\n");
  EXPECT_EQ(finish(), 0) << screen_;
  EXPECT_FALSE(fs::exists(ws_ + "/build")) << screen_;
  bool user = false;
  for (const json& d : decisions(dir_.path() + "/audit")) {
    if (d.value("decided_by", "") != "user") continue;
    user = true;
    EXPECT_EQ(d.value("channel", ""), "console") << d.dump();
  }
  EXPECT_TRUE(user) << audit_text(dir_.path() + "/audit");
}

TEST_F(ConsoleRunTest, ASharedMoatdsSessionAsksThroughTheConsoleThatMoatRunAttached) {
  const std::string sock = dir_.path() + "/moatd.sock";
  const pid_t moatd = start({moatd_bin(), "--socket", sock, "--audit-dir", dir_.path() + "/audit"},
                            dir_.path() + "/moatd.log");
  for (int i = 0; i < 100 && !fs::exists(sock); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  start_run(kRmTurns, {"--connect", sock});
  const bool asked = read_until("deny [n]?");
  if (asked) type("y\n");
  const int rc = finish();
  kill(moatd, SIGTERM);
  wait_exit(moatd, 10);
  ASSERT_TRUE(asked) << screen_ << read_file(dir_.path() + "/moatd.log");
  EXPECT_EQ(rc, 0) << screen_;
  EXPECT_FALSE(fs::exists(ws_ + "/build")) << screen_;
  EXPECT_NE(audit_text(dir_.path() + "/audit").find("\"channel\":\"console\""), std::string::npos);
}

// Steering, the other half of --interactive: a line typed while the agent works reaches the
// model after the current step, through the console and the loop's stdin pipe.
TEST_F(ConsoleRunTest, ALineTypedWhileTheAgentWorksSteersIt) {
  start_run(
      std::string(
          R"({"tool_calls":[{"name":"bash","arguments":{"command":"while [ ! -e go ]; do sleep 0.1; done"}}]})") +
      "\n" + R"({"text":"done"})" + "\n");
  // The loop's condition cannot be judged statically, so it is asked about first.
  ASSERT_TRUE(read_until("deny [n]?")) << screen_;
  type("y\n");
  ASSERT_TRUE(read_until("allowed once")) << screen_;
  type("please also update the changelog\n");
  ASSERT_TRUE(read_until("message queued")) << screen_;
  std::ofstream(ws_ + "/go") << "";
  EXPECT_EQ(finish(), 0) << screen_;
  std::string sessions;
  for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/sessions"))
    if (e.is_regular_file()) sessions += read_file(e.path());
  EXPECT_NE(sessions.find("please also update the changelog"), std::string::npos) << sessions;
}

}  // namespace
}  // namespace moat::e2e

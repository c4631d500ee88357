// tests/unit/agent/console_front_end_test.cc: the console's seam to its front end
// (agent/console_front_end.h): the console hands a real loop process's output and moatd's
// question to whichever front end it serves, and each mode (agent/run_mode.h) gets its own
// front end (agent/console_modes.h), told apart by what it does with the same events.
#include "agent/console.h"
#include "agent/console_modes.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/sys.h"
#include "sandbox/protocol.h"

namespace moat::agent {
namespace {

// What a front end asked of the console, one line per call.
class RecordingLink : public ConsoleLink {
 public:
  bool loop_reads() const override { return true; }
  bool write_to_loop(std::string_view bytes) override {
    calls.push_back("write " + std::string(bytes));
    return true;
  }
  void end_loop_input() override { calls.push_back("end input"); }
  void send_answer(const std::string& ask, bool allow, bool for_session) override {
    calls.push_back("answer " + ask + (allow ? " allow" : " deny") + (for_session ? " session" : ""));
  }
  void drain_loop_output() override { calls.push_back("drain"); }
  void signal_loop(int sig) override { calls.push_back("signal " + std::to_string(sig)); }
  std::vector<std::string> calls;
};

// stdin is /dev/null while a test runs: the terminal front end asks a person only at a
// terminal, and these tests play a script.
class ConsoleModesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = ::dup(STDIN_FILENO);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(null, 0);
    ASSERT_EQ(::dup2(null, STDIN_FILENO), STDIN_FILENO);
    ::close(null);
  }
  void TearDown() override {
    ::dup2(saved_, STDIN_FILENO);
    ::close(saved_);
  }
  // One front end through the same events: started, moatd asks, the loop writes, a line is
  // typed ("y" or --rpc's answer command), Ctrl-C.
  std::vector<std::string> drive(RunMode mode, const std::string& typed, std::string* out) {
    RecordingLink link;
    auto front = make_console_front_end(mode, link, "hi");
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    front->start();
    front->ask("a1", "run make?");
    front->loop_output("{\"type\":\"turn_start\",\"turn\":1}\n");
    if (front->wants_stdin()) front->input(typed);
    front->interrupt();
    *out = testing::internal::GetCapturedStdout();
    (void)testing::internal::GetCapturedStderr();
    return link.calls;
  }

 private:
  int saved_ = -1;
};

TEST_F(ConsoleModesTest, EachModeChoosesItsFrontEnd) {
  const std::string rpc_answer =
      R"({"type":"answer","id":"x","ask":"a1","decision":"allow_once"})" "\n";
  const std::string sigint = "signal " + std::to_string(SIGINT);
  struct Row {
    RunMode mode;
    std::string typed;
    std::vector<std::string> calls;  // what the front end asked of the console
    std::string out_has;             // what it wrote on stdout (the loop's event, drawn or not)
  };
  const Row rows[] = {
      // Plain: nobody is asked, so moatd's question is declined at once; the loop's output
      // is passed on as it is; stdin is not read.
      {RunMode::kPrint, "y\n", {"answer a1 deny", sigint}, "\"turn_start\""},
      {RunMode::kJson, "y\n", {"answer a1 deny", sigint}, "\"turn_start\""},
      // RPC: the question is an `ask` event, answered by the client's `answer` command.
      {RunMode::kRpc, rpc_answer, {"answer a1 allow", sigint}, "\"type\":\"ask\""},
      // Typed lines: the question is drawn (the loop's output drained first), "y" answers it;
      // the loop's event is drawn by the view, not passed on as JSON.
      {RunMode::kLines, "y\n", {"drain", "answer a1 allow", sigint}, ""},
  };
  for (const Row& row : rows) {
    std::string out;
    EXPECT_EQ(drive(row.mode, row.typed, &out), row.calls) << static_cast<int>(row.mode);
    EXPECT_NE(out.find(row.out_has), std::string::npos) << static_cast<int>(row.mode) << out;
    if (row.mode == RunMode::kLines) {
      EXPECT_EQ(out.find("turn_start"), std::string::npos) << out;
    }
  }
}

TEST_F(ConsoleModesTest, ATerminalSessionStartsWithItsFirstPromptForTheLoop) {
  std::string out;
  const std::vector<std::string> calls = drive(RunMode::kTerminal, "y\n", &out);
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].rfind("write ", 0), 0u);
  EXPECT_NE(calls[0].find(R"("type":"prompt")"), std::string::npos) << calls[0];
  EXPECT_NE(calls[0].find(R"("message":"hi")"), std::string::npos) << calls[0];
  // A turn runs (the first prompt's): Ctrl-C cancels it, as in a run of typed lines.
  EXPECT_EQ(std::vector<std::string>(calls.begin() + 1, calls.end()),
            (std::vector<std::string>{"drain", "answer a1 allow",
                                      "signal " + std::to_string(SIGINT)}));
}

// A front end of the test's own: it records what the console hands it, and answers moatd's
// question by letting the loop go on.
class RecordingFrontEnd : public ConsoleFrontEnd {
 public:
  RecordingFrontEnd(ConsoleLink& link, std::vector<std::string>& calls)
      : ConsoleFrontEnd(link), calls_(calls) {}
  void start() override { calls_.push_back("start"); }
  void ask(const std::string& ask, const std::string& question) override {
    calls_.push_back("ask " + ask + " " + question);
    link_.send_answer(ask, true, false);
    (void)link_.write_to_loop("go\n");
  }
  void loop_output(std::string_view bytes) override { calls_.push_back("out " + std::string(bytes)); }
  void loop_ended() override { calls_.push_back("ended"); }
  void interrupt() override { calls_.push_back("interrupt"); }

 private:
  std::vector<std::string>& calls_;
};

// The loop: a real child process that writes a line, waits for the console's line on its stdin
// (at most 5 s), writes another and exits 3.
pid_t fork_loop(sys::FdPair& in, sys::FdPair& out) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  (void)!::write(out.second.get(), "hello\n", 6);
  pollfd p{in.first.get(), POLLIN, 0};
  char c;
  if (::poll(&p, 1, 5000) != 1 || ::read(in.first.get(), &c, 1) != 1) ::_exit(4);
  (void)!::write(out.second.get(), "bye\n", 4);
  ::_exit(3);
}

TEST(ServeConsole, HandsTheLoopsOutputMoatdsQuestionAndCtrlCToItsFrontEnd) {
  auto in = sys::make_pipe();
  auto out = sys::make_pipe();
  auto err = sys::make_pipe();
  auto sigs = sys::make_pipe();
  int channel[2];
  ASSERT_TRUE(in && out && err && sigs);
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel), 0);
  UniqueFd moatd_end(channel[0]);
  ASSERT_TRUE(sandbox::send_message(moatd_end.get(),
                                    sandbox::AskMsg{"c1", "a1", "run make?", nullptr}));
  const unsigned char sigint = SIGINT;
  ASSERT_EQ(::write(sigs->second.get(), &sigint, 1), 1);
  const pid_t loop = fork_loop(*in, *out);
  ASSERT_GT(loop, 0);
  out->second.reset();
  err->second.reset();
  // What split_console_and_loop sets up around serve_console (console.cc): SIGPIPE ignored (the
  // loop reads one byte and exits; the rest of the console's line meets a closed pipe: EPIPE,
  // not a dead test process, rc 141), and, as its SIGCHLD handler does, a byte on the signal
  // pipe once the loop has exited. Without it the console may see the loop's output end, find the loop not yet
  // reapable, and poll fds that never wake (the kernel closes a process's files before its
  // parent can wait for it): the test hung once in CI that way.
  const auto old_sigpipe = ::signal(SIGPIPE, SIG_IGN);
  std::thread chld([loop, fd = sigs->second.get()] {
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(loop), &info, WEXITED | WNOWAIT) != 0 &&
           errno == EINTR) {
    }
    const unsigned char c = SIGCHLD;
    (void)!::write(fd, &c, 1);
  });
  std::vector<std::string> calls;
  const int status = serve_console(
      ConsoleWires{loop, -1, std::move(in->second), std::move(out->first), std::move(err->first),
                   UniqueFd(channel[1]), std::move(sigs->first)},
      [&calls](ConsoleLink& link) { return std::make_unique<RecordingFrontEnd>(link, calls); });
  chld.join();
  ::signal(SIGPIPE, old_sigpipe);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);  // 4: the console's line never reached the loop
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.front(), "start");
  EXPECT_EQ(calls.back(), "ended");
  std::string output;
  for (const std::string& c : calls)
    if (c.rfind("out ", 0) == 0) output += c.substr(4);
  EXPECT_EQ(output, "hello\nbye\n");
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "ask a1 run make?"), 1);
  EXPECT_EQ(std::count(calls.begin(), calls.end(), "interrupt"), 1);
  // The front end's answer went to moatd over the channel.
  sandbox::FrameReader reader(moatd_end.get());
  auto frame = reader.read();
  ASSERT_TRUE(frame && frame->has_value());
  EXPECT_EQ((**frame).value("type", ""), "answer");
  EXPECT_EQ((**frame).value("ask", ""), "a1");
}

}  // namespace
}  // namespace moat::agent

// tests/integration/e2e/terminal_view_test.cc: `moat run` at a real terminal (tmux), against
// the mock model server: an ask answered with a key, a call's output seen live before the
// call ends, a status line after each answer, Ctrl-C cancelling the turn, the session
// continued afterwards, and an audit log that verifies.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/shell_words.h"
#include "mocked_run.h"
#include "tmux_session.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

class TerminalViewTest : public MockedRun {
 protected:
  void SetUp() override {
    if (!Tmux::installed())
      GTEST_SKIP() << "tmux is not installed (it stands in for a person at a terminal)";
    start(agent::providers::Api::kOpenAiChat);
    if (::testing::Test::IsSkipped()) return;
    fs::create_directories(ws_ + "/build/sub");  // `rm -rf build` is asked (default policy)
  }

  // The moat run command line as the person types it (the test's environment in front). A
  // person's interactive shell is not in the terminal's foreground group while moat runs;
  // this one is, so it traps Ctrl-C to outlive it and report moat's exit.
  std::string command_line(const std::string& task) const {
    std::string line = "trap : INT; env";
    for (const std::string& e : env()) line += " " + shell_quote(e);
    for (const std::string& a :
         {moat_bin(), std::string("run"), std::string("--model"), std::string("mock/any"),
          std::string("-C"), ws_, std::string("--sessions-dir"), dir_.path() + "/sessions",
          std::string("--audit-dir"), dir_.path() + "/audit", task})
      line += " " + shell_quote(a);
    return line + "; echo EXIT=$?; sleep 60";
  }
};

TEST_F(TerminalViewTest, AnAskALiveCallACtrlCAndAContinuedSessionAtARealTerminal) {
  server_->push_turn(call_turn("c1", "rm -rf build"));
  // Its output comes a line a second: seen on the screen while it runs. The title sequence
  // in it must show as text, not act.
  server_->push_turn(
      call_turn("c2",
                "printf 'title \\033]0;pwned\\007 set\\n'; for i in $(seq 1 40); do echo tick$i; "
                "sleep 1; done"));
  Tmux t("moat-view-" + std::to_string(getpid()));
  ASSERT_EQ(t.tmux("new-session -d -s t -x 120 -y 40 " + shell_quote(command_line("clean up"))), 0);
  ASSERT_TRUE(t.shows("deny [n]?", 60)) << t.pane();
  t.keys("y Enter");
  ASSERT_TRUE(t.shows("allowed once")) << t.pane();
  EXPECT_TRUE(t.shows("so far")) << "a status line after the answer:\n" << t.pane();
  EXPECT_TRUE(t.shows("cache hit")) << t.pane();
  EXPECT_TRUE(t.shows("[ok] bash")) << "the finished call, folded:\n" << t.pane();

  // Live: the output's second line is on the screen while the call still runs (its spinner
  // line shows its time; no folded [ok] for it yet).
  ASSERT_TRUE(t.shows("tick2", 60)) << t.pane();
  const std::string live = t.pane();
  EXPECT_EQ(live.find("tick40"), std::string::npos) << "the call has not ended:\n" << live;
  EXPECT_NE(live.find(" bash "), std::string::npos) << live;
  EXPECT_NE(live.find("s: printf"), std::string::npos) << "spinner, time, summary:\n" << live;
  EXPECT_NE(live.find("^[]0;pwned^G"), std::string::npos) << "shown as cat -v shows it:\n" << live;
  ASSERT_TRUE(t.shows("tick3")) << "redrawn as output comes:\n" << t.pane();
  // A slash command is answered by the view, not sent to the model.
  t.keys("/cost Enter");
  EXPECT_TRUE(t.shows("moat: 2 answers:")) << t.pane();
  EXPECT_EQ(t.pane().find("message queued"), std::string::npos) << t.pane();

  // The first Ctrl-C cancels the turn; the run ends cleanly and says how to go on.
  t.keys("C-c");
  EXPECT_TRUE(t.shows("moat: cancelled after 2 turns", 60)) << t.pane();
  EXPECT_TRUE(t.shows("moat run --continue")) << t.pane();
  EXPECT_TRUE(t.shows("EXIT=1")) << t.pane();
  EXPECT_EQ(t.pane().find("tick40"), std::string::npos) << "the call was cut short";

  // The session goes on.
  server_->push_turn(text_turn("Continued."));
  auto next = moat({"-p", "--continue"}, "go on");
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(next.out, "Continued.\n") << next.err;
  const auto requests = server_->requests();
  ASSERT_FALSE(requests.empty());
  EXPECT_NE(requests.back().body.find("clean up"), std::string::npos) << "the same session";

  int logs = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/audit")) {
    if (e.path().extension() != ".jsonl") continue;
    ++logs;
    auto v = run({moat_bin(), "audit", "verify", e.path().string()});
    EXPECT_EQ(v.exit_code, 0) << e.path() << ": " << v.out;
  }
  EXPECT_EQ(logs, 2) << "one audit log per run";
}

}  // namespace
}  // namespace moat::e2e

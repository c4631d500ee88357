// tests/integration/e2e/terminal_view_test.cc: `moat run` at a real terminal (tmux), against
// the mock model server: an ask answered with a key, a call's output seen live before the
// call ends, a status line after each answer, Ctrl-C cancelling the turn, the session
// continued afterwards, and an audit log that verifies.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/shell_words.h"
#include "mocked_run.h"
#include "tmux_session.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

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
  std::string command_line(const std::string& task,
                           const std::vector<std::string>& flags = {}) const {
    std::string line = "trap : INT; env";
    for (const std::string& e : env()) line += " " + shell_quote(e);
    std::vector<std::string> argv = run_argv(flags);
    if (!task.empty()) argv.push_back(task);
    for (const std::string& a : argv) line += " " + shell_quote(a);
    return line + "; echo EXIT=$?; sleep 60";
  }

  // moat at a terminal of the test's own (120x50).
  std::unique_ptr<Tmux> start_moat(const std::string& task,
                                   const std::vector<std::string>& flags = {}) {
    auto t = std::make_unique<Tmux>("moat-view-" + std::to_string(getpid()));
    EXPECT_EQ(t->tmux("new-session -d -s t -x 120 -y 50 " + shell_quote(command_line(task, flags))),
              0);
    return t;
  }

  // The session files moat wrote, each as its entries (header first).
  std::vector<std::vector<json>> session_files() const {
    std::vector<std::vector<json>> files;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/sessions")) {
      if (e.path().extension() != ".jsonl") continue;
      files.emplace_back();
      std::istringstream in(read_file(e.path().string()));
      for (std::string l; std::getline(in, l);) files.back().push_back(json::parse(l));
    }
    return files;
  }

  // Every audit log verifies; how many there are.
  int verified_audit_logs() const {
    int logs = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/audit")) {
      if (e.path().extension() != ".jsonl") continue;
      ++logs;
      auto v = run({moat_bin(), "audit", "verify", e.path().string()});
      EXPECT_EQ(v.exit_code, 0) << e.path() << ": " << v.out;
    }
    return logs;
  }
};

// moat waits at its prompt: the screen's last line that is not blank is "> " (the turn's
// result is in, so the next line typed is a prompt, not a message steering the turn).
bool at_prompt(const Tmux& t) {
  return eventually(
      [&] {
        std::string pane = t.pane();
        while (!pane.empty() && (pane.back() == '\n' || pane.back() == ' ')) pane.pop_back();
        const std::size_t nl = pane.rfind('\n');
        return pane.substr(nl == std::string::npos ? 0 : nl + 1) == ">";
      },
      std::chrono::seconds(60));
}

// The user message entries of a session file whose text is `text`.
std::vector<json> user_entries(const std::vector<json>& file, const std::string& text) {
  std::vector<json> found;
  for (const json& e : file)
    if (e.value("type", "") == "message" && e["message"].value("role", "") == "user" &&
        e["message"].dump().find("\"" + text + "\"") != std::string::npos)
      found.push_back(e);
  return found;
}

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

  // The first Ctrl-C cancels the turn and the prompt is back; /exit ends the session
  // cleanly and says how to go on.
  t.keys("C-c");
  EXPECT_TRUE(t.shows("moat: cancelled after 2 turns", 60)) << t.pane();
  t.keys("/exit Enter");
  EXPECT_TRUE(t.shows("moat run --resume")) << t.pane();
  EXPECT_TRUE(t.shows("EXIT=1")) << "the last turn's code:\n" << t.pane();
  EXPECT_EQ(t.pane().find("tick40"), std::string::npos) << "the call was cut short";

  // The session goes on.
  server_->push_turn(text_turn("Continued."));
  auto next = moat({"-p", "--continue"}, "go on");
  EXPECT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(next.out, "Continued.\n") << next.err;
  const auto requests = server_->requests();
  ASSERT_FALSE(requests.empty());
  EXPECT_NE(requests.back().body.find("clean up"), std::string::npos) << "the same session";

  EXPECT_EQ(verified_audit_logs(), 2) << "one audit log per run";
}

}  // namespace
}  // namespace moat::e2e

namespace moat::e2e {
namespace {

// The terminal session stays open: after an answer the next line is the next prompt of the
// same session; Ctrl-C cancels a turn and returns to the prompt, and the session goes on;
// /exit ends it with the summary, one session file and one audit log that verifies.
TEST_F(TerminalViewTest, PromptsOneAfterAnotherAndACtrlCReturnsToThePromptInOneSession) {
  auto t = start_moat("");
  ASSERT_TRUE(t->shows("type a prompt", 60)) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  server_->push_turn(text_turn("First answer."));
  t->keys("'hello there' Enter");
  ASSERT_TRUE(t->shows("First answer.")) << t->pane();
  EXPECT_TRUE(t->shows("moat: done after 1 turn")) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();

  server_->push_turn(call_turn("c1", "for i in $(seq 1 60); do echo tock$i; sleep 1; done"));
  t->keys("'run long' Enter");
  ASSERT_TRUE(t->shows("tock2", 60)) << t->pane();
  t->keys("C-c");
  ASSERT_TRUE(t->shows("moat: cancelled after 1 turn", 60)) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  EXPECT_EQ(t->pane().find("EXIT="), std::string::npos) << "moat is still running:\n" << t->pane();

  server_->push_turn(text_turn("Second answer."));
  t->keys("'go on' Enter");
  ASSERT_TRUE(t->shows("Second answer.", 60)) << t->pane();
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 3u);
  for (const char* said : {"hello there", "run long", "go on", "First answer."})
    EXPECT_NE(requests.back().body.find(said), std::string::npos) << "the same session: " << said;
  EXPECT_EQ(requests.back().body.find("tock60"), std::string::npos) << "the call was cut short";

  t->keys("/exit Enter");
  ASSERT_TRUE(t->shows("EXIT=", 60)) << t->pane();
  EXPECT_TRUE(t->shows("moat run --resume")) << t->pane();
  EXPECT_TRUE(t->shows("3 answers")) << t->pane();
  const auto files = session_files();
  ASSERT_EQ(files.size(), 1u) << "one session";
  EXPECT_EQ(user_entries(files[0], "go on").size(), 1u);
  EXPECT_EQ(verified_audit_logs(), 1);
}

// /tree, /fork and /compact between turns; /help and an unknown command list the commands;
// two Ctrl-C at the prompt end the session.
TEST_F(TerminalViewTest, TreeForkAndCompactActOnTheSessionBetweenTurns) {
  server_->push_turn(text_turn("One: " + std::string(8000, 'x') + " end of one."));
  auto t = start_moat("zebra1", {"--keep-recent", "1"});
  ASSERT_TRUE(t->shows("end of one.", 60)) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  server_->push_turn(text_turn("Two."));
  t->keys("zebra2 Enter");
  ASSERT_TRUE(t->shows("Two.")) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();

  t->keys("/tree Enter");
  ASSERT_TRUE(t->shows("user: zebra2")) << t->pane();
  EXPECT_TRUE(t->shows("<- leaf")) << t->pane();
  EXPECT_NE(t->pane().find("* "), std::string::npos) << "the path marked:\n" << t->pane();

  // Back to before zebra2: the next prompt is a new branch beside it.
  t->keys("/fork Enter");
  ASSERT_TRUE(t->shows("a new branch")) << t->pane();
  server_->push_turn(text_turn("Three."));
  t->keys("zebra3 Enter");
  ASSERT_TRUE(t->shows("Three.")) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  const std::string body = server_->requests().back().body;
  EXPECT_NE(body.find("zebra1"), std::string::npos) << body;
  EXPECT_EQ(body.find("zebra2"), std::string::npos) << "the branch leaves it out: " << body;
  auto files = session_files();
  ASSERT_EQ(files.size(), 1u);
  const auto second = user_entries(files[0], "zebra2"), third = user_entries(files[0], "zebra3");
  ASSERT_EQ(second.size(), 1u);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(second[0]["parentId"], third[0]["parentId"]) << "two branches from one entry";
  t->keys("/tree Enter");
  EXPECT_TRUE(t->shows("├─")) << t->pane();
  t->keys("'/fork nosuchentry' Enter");
  EXPECT_TRUE(t->shows("no entry or label \"nosuchentry\"")) << t->pane();

  // Compacted now, with the person's instructions for the summary.
  // (two summaries: the history, and the start of the turn the cut splits)
  server_->push_turn(text_turn("Summary: the person said zebra1 and zebra3."));
  server_->push_turn(text_turn("The turn asked for zebra3."));
  t->keys("'/compact keep the numbers' Enter");
  ASSERT_TRUE(t->shows("moat: compacted: the context went from about")) << t->pane();
  const std::string pane = t->pane();
  long from = 0, to = 0;
  ASSERT_EQ(std::sscanf(pane.c_str() + pane.find("went from about"),
                        "went from about %ld to about %ld", &from, &to),
            2)
      << pane;
  EXPECT_GT(from, 2000) << "the long answer was in the context";
  EXPECT_LT(to, 200) << "and is summarised away";
  const auto summaries = server_->requests();
  ASSERT_EQ(summaries.size(), 5u);
  EXPECT_NE(summaries[3].body.find("keep the numbers"), std::string::npos) << summaries[3].body;
  files = session_files();
  ASSERT_EQ(files.size(), 1u);
  const json& last = files[0].back();
  EXPECT_EQ(last.value("type", ""), "compaction") << last.dump();
  EXPECT_EQ(last.value("summary", "").rfind("Summary: the person said zebra1 and zebra3.", 0), 0u)
      << last.dump();

  t->keys("/bogus Enter");
  EXPECT_TRUE(t->shows("unknown command /bogus")) << t->pane();
  EXPECT_TRUE(t->shows("/compact [TEXT]")) << t->pane();
  EXPECT_EQ(server_->requests().size(), 5u) << "no command went to the model as a prompt";

  t->keys("C-c");
  ASSERT_TRUE(t->shows("Ctrl-C again")) << t->pane();
  t->keys("C-c");
  ASSERT_TRUE(t->shows("EXIT=", 60)) << t->pane();
  EXPECT_TRUE(t->shows("moat run --resume")) << t->pane();
  EXPECT_EQ(verified_audit_logs(), 1);
}

// Two calls of one answer run together: the quick one is folded ([ok], its output) as soon as
// it ends, while the slow one still runs with its spinner.
TEST_F(TerminalViewTest, AFinishedCallIsFoldedWhileItsSiblingStillRuns) {
  testing::ScriptedTurn both;
  both.text = "Running both.";
  both.calls.push_back({"q1", "bash", {{"command", "echo quick-one-done"}}});
  both.calls.push_back(
      {"s1", "bash", {{"command", "for i in $(seq 1 60); do echo slow$i; sleep 1; done"}}});
  server_->push_turn(both);
  auto t = start_moat("both at once");
  ASSERT_TRUE(t->shows("slow3", 60)) << t->pane();
  const std::string pane = t->pane();
  EXPECT_NE(pane.find("[ok] bash"), std::string::npos) << "the quick call, folded:\n" << pane;
  EXPECT_NE(pane.find("| quick-one-done"), std::string::npos) << pane;
  const std::size_t live = pane.find("s: for i in");
  ASSERT_NE(live, std::string::npos) << "the slow one still runs:\n" << pane;
  const std::string line = pane.substr(pane.rfind('\n', live) + 1, live - pane.rfind('\n', live));
  EXPECT_NE(line.find("bash · allow ("), std::string::npos)
      << "its decision and rule while it runs:\n"
      << pane;
  EXPECT_EQ(pane.find("slow60"), std::string::npos) << pane;
  t->keys("C-c");
  ASSERT_TRUE(t->shows("moat: cancelled after 1 turn", 60)) << t->pane();
  t->keys("/exit Enter");
  EXPECT_TRUE(t->shows("EXIT=", 60)) << t->pane();
}

}  // namespace
}  // namespace moat::e2e

namespace moat::e2e {
namespace {

// The lines of `pane` that hold `text`.
std::vector<std::string> lines_with(const std::string& pane, const std::string& text) {
  std::vector<std::string> found;
  std::istringstream in(pane);
  for (std::string l; std::getline(in, l);)
    if (l.find(text) != std::string::npos) found.push_back(l);
  return found;
}

std::size_t count_of(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// Issue 26 item 1: the model's text prints a line in the form of moat's question while a slow
// call runs, and the person types "y" at it. Before, the console held that "y" and applied it
// to the next real question, a `git reset --hard`, which ran ("allowed once", recorded as the
// person's answer). An answer counts only once its question's choices are on the screen, and
// the real question stands behind a highlighted marker no text the view relays can carry.
TEST_F(TerminalViewTest, AYTypedAtAQuestionTheModelFakedApprovesNothing) {
  const std::string git = "git -C " + shell_quote(ws_) +
                          " -c user.email=t@example.test -c user.name=t -c init.defaultBranch=main";
  ASSERT_EQ(std::system((git + " init -q && echo kept > " + shell_quote(ws_ + "/work.txt") +
                         " && " + git + " add work.txt && " + git + " commit -qm one && echo " +
                         "uncommitted > " + shell_quote(ws_ + "/work.txt"))
                            .c_str()),
            0);
  const std::string fake =
      "moat: bash: git reset --hard needs your approval: rule default.git-discard (default) "
      "says ask";
  testing::ScriptedTurn slow;
  slow.text = "Looking.\n\n" + fake + "\n      allow once [y], allow for this session [s], deny [n]? ";
  slow.calls.push_back({"c1", "bash", {{"command", "sleep 6"}}});
  server_->push_turn(slow);
  server_->push_turn(call_turn("c2", "git reset --hard"));
  server_->push_turn(text_turn("Done."));
  auto t = start_moat("tidy up");
  ASSERT_TRUE(t->shows("s: sleep 6", 60)) << "the slow call runs below the fake:\n" << t->pane();
  ASSERT_EQ(count_of(t->pane(), "needs your approval"), 1u) << t->pane();
  t->keys("y Enter");
  // The real question comes once the slow call has ended.
  ASSERT_TRUE(eventually([&] { return count_of(t->pane(), "needs your approval") == 2; },
                         std::chrono::seconds(60)))
      << t->pane();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // past the guard: the choices show
  const std::string asked = t->pane();
  EXPECT_EQ(asked.find("allowed once"), std::string::npos)
      << "the y typed at the fake approved the real question:\n"
      << asked;
  EXPECT_NE(asked.find("was not taken as an answer"), std::string::npos) << asked;
  // Only the real question carries the marker (reverse video); the model's copy shows as text.
  const std::string styled = t->pane(true);
  const auto marked = lines_with(styled, "moat asks");
  ASSERT_EQ(marked.size(), 1u) << styled;
  EXPECT_NE(marked[0].find("7m"), std::string::npos) << marked[0];
  EXPECT_NE(marked[0].find("git reset --hard"), std::string::npos) << marked[0];
  for (const std::string& l : lines_with(styled, "moat: bash: git reset"))
    EXPECT_EQ(l.find("\x1b["), std::string::npos) << "the fake carries no attribute: " << l;

  t->keys("n Enter");
  ASSERT_TRUE(t->shows("Done.", 60)) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  t->keys("/exit Enter");
  ASSERT_TRUE(t->shows("EXIT=", 60)) << t->pane();
  EXPECT_EQ(read_file(ws_ + "/work.txt"), "uncommitted\n") << "git reset --hard ran";
  int asks = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/audit")) {
    if (e.path().extension() != ".jsonl") continue;
    std::istringstream in(read_file(e.path().string()));
    for (std::string l; std::getline(in, l);) {
      const json r = json::parse(l, nullptr, false);
      if (!r.is_object() || r.value("type", "") != "decision") continue;
      if (r.dump().find("git reset") != std::string::npos) ++asks;
      if (r.value("decided_by", "") == "user") {
        EXPECT_EQ(r["input"]["user"].value("answer", ""), "deny") << r.dump();
      }
    }
  }
  EXPECT_GE(asks, 1) << "the real question was decided";
  EXPECT_EQ(verified_audit_logs(), 1);
}

}  // namespace
}  // namespace moat::e2e

namespace moat::e2e {
namespace {

// Issue 27 item 18: an ask is answered with one key, no Enter; a key other than y, s or n is
// not an answer (it neither denies nor approves).
TEST_F(TerminalViewTest, AnAskIsAnsweredWithOneKeyWithoutEnter) {
  server_->push_turn(call_turn("c1", "rm -rf build"));
  server_->push_turn(text_turn("Cleaned."));
  auto t = start_moat("clean up");
  ASSERT_TRUE(t->shows("deny [n]?", 60)) << t->pane();
  t->keys("x");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(t->pane().find("denied"), std::string::npos) << "x is no answer:\n" << t->pane();
  t->keys("y");
  ASSERT_TRUE(t->shows("allowed once")) << "y alone answers:\n" << t->pane();
  ASSERT_TRUE(t->shows("Cleaned.")) << t->pane();
  EXPECT_FALSE(fs::exists(ws_ + "/build")) << "the approved call ran";
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  t->keys("/exit Enter");
  EXPECT_TRUE(t->shows("EXIT=", 60)) << t->pane();
}

// Issue 27 item 18: the question comes below the model's text and the call line it is about
// (before, it could be drawn while they still waited in the loop's pipe). Three asks, each
// after its own text; a read call's line names its file, not its arguments as JSON.
TEST_F(TerminalViewTest, AQuestionComesAfterTheTextAndTheCallLineItBelongsTo) {
  ASSERT_EQ(std::system(("mkdir -p " + shell_quote(ws_ + "/calc") + " && echo 'x = 1' > " +
                         shell_quote(ws_ + "/calc/core.py"))
                            .c_str()),
            0);
  testing::ScriptedTurn reading;
  reading.text = "Reading first.";
  reading.calls.push_back({"r1", "read", {{"path", "calc/core.py"}}});
  server_->push_turn(reading);
  for (int i = 1; i <= 3; ++i) {
    fs::create_directories(ws_ + "/build" + std::to_string(i));
    testing::ScriptedTurn ask =
        call_turn("c" + std::to_string(i), "rm -rf build" + std::to_string(i));
    ask.text = "Step number " + std::to_string(i) + ".";
    server_->push_turn(ask);
  }
  server_->push_turn(text_turn("All clean."));
  auto t = start_moat("clean up");
  for (int i = 1; i <= 3; ++i) {
    const std::string n = std::to_string(i);
    ASSERT_TRUE(
        eventually([&] { return count_of(t->pane(), "deny [n]?") == static_cast<std::size_t>(i); },
                   std::chrono::seconds(60)))
        << t->pane();
    const std::string pane = t->pane();
    const std::size_t text = pane.find("Step number " + n + ".");
    const std::size_t call = pane.find("> bash: rm -rf build" + n);
    const std::size_t asked = pane.find("'rm -rf build" + n + "' needs your approval");
    ASSERT_NE(asked, std::string::npos) << pane;
    EXPECT_LT(text, asked) << "the text first:\n" << pane;
    EXPECT_LT(call, asked) << "the call line first:\n" << pane;
    t->keys("y Enter");
    ASSERT_TRUE(eventually(
        [&] { return count_of(t->pane(), "allowed once") == static_cast<std::size_t>(i); },
        std::chrono::seconds(30)))
        << t->pane();
  }
  ASSERT_TRUE(t->shows("All clean.", 60)) << t->pane();
  const std::string pane = t->pane();
  EXPECT_NE(pane.find("> read: calc/core.py"), std::string::npos) << pane;
  EXPECT_EQ(pane.find("{\"path\""), std::string::npos) << "no JSON on the call line:\n" << pane;
  t->keys("/exit Enter");
  EXPECT_TRUE(t->shows("EXIT=", 60)) << t->pane();
}

// Issue 27 item 18: a Ctrl-C at the prompt (a turn just ended, say) does not end the session
// alone: it asks for a second, and a line typed in between starts the count again.
TEST_F(TerminalViewTest, CtrlCAtThePromptAsksForASecondBeforeEnding) {
  auto t = start_moat("");
  ASSERT_TRUE(t->shows("type a prompt", 60)) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  t->keys("C-c");
  ASSERT_TRUE(t->shows("Ctrl-C again to end the session")) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  t->keys("/model Enter");
  ASSERT_TRUE(t->shows("moat: model mock/any")) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  t->keys("C-c");
  ASSERT_TRUE(eventually([&] { return count_of(t->pane(), "Ctrl-C again") == 2; },
                         std::chrono::seconds(20)))
      << "a line in between: the count starts again\n"
      << t->pane();
  EXPECT_EQ(t->pane().find("EXIT="), std::string::npos) << t->pane();
  t->keys("C-c");
  ASSERT_TRUE(t->shows("EXIT=", 60)) << t->pane();
  EXPECT_TRUE(t->shows("moat run --resume")) << t->pane();
}

// Issue 27 item 18: after the view answers /cost, /diff, /policy or /model, the prompt is
// drawn again below its answer.
TEST_F(TerminalViewTest, ThePromptIsDrawnAgainAfterTheViewsCommands) {
  auto t = start_moat("");
  ASSERT_TRUE(t->shows("type a prompt", 60)) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  const std::vector<std::pair<std::string, std::string>> said = {
      {"/cost", "moat: 0 answers"},
      {"/diff", "moat: no file changed"},
      {"/policy", "moat: policy "},
      {"/model", "moat: model mock/any"}};
  for (const auto& [command, answer] : said) {
    t->keys(command + " Enter");
    ASSERT_TRUE(t->shows(answer)) << t->pane();
    EXPECT_TRUE(at_prompt(*t)) << command << ":\n" << t->pane();
  }
  t->keys("/exit Enter");
  EXPECT_TRUE(t->shows("EXIT=", 60)) << t->pane();
}

// Issue 27 item 18: /diff shows what an edit changed, as a unified diff from the edit tool
// (through moatd), and for a file a command wrote says its contents are not tracked.
TEST_F(TerminalViewTest, DiffShowsAnEditsUnifiedDiffNotOnlyTheName) {
  ASSERT_EQ(std::system(("mkdir -p " + shell_quote(ws_ + "/calc") +
                         " && printf 'a = 0\\nx = 1\\n' > " + shell_quote(ws_ + "/calc/core.py"))
                            .c_str()),
            0);
  testing::ScriptedTurn editing;
  editing.calls.push_back(
      {"e1",
       "edit",
       {{"path", "calc/core.py"}, {"edits", {{{"oldText", "x = 1"}, {"newText", "x = 2"}}}}}});
  server_->push_turn(editing);
  server_->push_turn(call_turn("b1", "echo made > made.txt"));
  server_->push_turn(text_turn("Edited."));
  auto t = start_moat("change x");
  ASSERT_TRUE(t->shows("Edited.", 60)) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  t->keys("/diff Enter");
  ASSERT_TRUE(t->shows("each with its diff")) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  const std::string pane = t->pane();
  EXPECT_NE(pane.find("--- a/calc/core.py"), std::string::npos) << pane;
  EXPECT_NE(pane.find("\n a = 0\n-x = 1\n+x = 2\n"), std::string::npos) << pane;
  EXPECT_NE(pane.find("made.txt\n  (changed by a command; its contents are not tracked)"),
            std::string::npos)
      << pane;
  t->keys("/exit Enter");
  EXPECT_TRUE(t->shows("EXIT=", 60)) << t->pane();
}

// Issue 27 item 18: the model's long lines wrap at spaces at the terminal's width (120
// columns here), not where the terminal runs out of columns mid-word; only a word longer
// than the width is broken.
TEST_F(TerminalViewTest, LongLinesWrapAtWordBoundaries) {
  std::string text = "Start.";
  for (int i = 10; i < 70; ++i) text += " alpha" + std::to_string(i);
  text += " " + std::string(150, 'y') + " end.";
  server_->push_turn(text_turn(text));
  auto t = start_moat("talk");
  ASSERT_TRUE(t->shows("end.", 60)) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  std::istringstream lines(t->pane());
  int alphas = 0;
  std::size_t ys = 0;
  for (std::string l; std::getline(lines, l);) {
    if (l.find("alpha") == std::string::npos && l.find("yyy") == std::string::npos) continue;
    EXPECT_LT(l.find_last_not_of(' '), 119u) << "within the width: " << l;
    std::istringstream words(l);
    for (std::string w; words >> w;) {
      if (w[0] == 'y') {
        ys += w.size();
        continue;
      }
      EXPECT_TRUE(w == "Start." || w == "end." || (w.size() == 7 && w.starts_with("alpha")))
          << "a word cut at the line's end: " << w << "\n"
          << t->pane();
      alphas += w.starts_with("alpha") ? 1 : 0;
    }
  }
  EXPECT_EQ(alphas, 60) << t->pane();
  EXPECT_EQ(ys, 150u) << "the long word broken, nothing lost:\n" << t->pane();
  t->keys("/exit Enter");
  EXPECT_TRUE(t->shows("EXIT=", 60)) << t->pane();
}

// Issue 27 item 18: the prompt's line is edited in place (left, Ctrl-A, Ctrl-W) and up brings
// back this session's earlier line; what is sent is the edited text, no escape sequence in it.
TEST_F(TerminalViewTest, ThePromptHasALineEditorWithHistory) {
  server_->push_turn(text_turn("One."));
  server_->push_turn(text_turn("Two."));
  auto t = start_moat("");
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  t->keys("'count the fils' Left e Enter");
  ASSERT_TRUE(t->shows("One.", 60)) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  t->keys("Up C-a 'now ' C-e ' twice' C-w again");
  ASSERT_TRUE(t->shows("> now count the files again")) << t->pane();
  t->keys("Enter");
  ASSERT_TRUE(t->shows("Two.", 60)) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  t->keys("/exit Enter");
  EXPECT_TRUE(t->shows("EXIT=", 60)) << t->pane();
  const auto files = session_files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(user_entries(files[0], "count the files").size(), 1u) << t->pane();
  EXPECT_EQ(user_entries(files[0], "now count the files again").size(), 1u) << t->pane();
}

// Issue 27 item 18: /compact with nothing to summarise names the flag that sets what is kept,
// not an internal key.
TEST_F(TerminalViewTest, CompactWithNothingToSummariseNamesTheKeepRecentFlag) {
  server_->push_turn(text_turn("Short."));
  auto t = start_moat("hi");
  ASSERT_TRUE(t->shows("Short.", 60)) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  t->keys("/compact Enter");
  ASSERT_TRUE(t->shows("nothing to summarise")) << t->pane();
  const std::string pane = t->pane();
  EXPECT_NE(pane.find("--keep-recent"), std::string::npos) << pane;
  EXPECT_EQ(pane.find("keep_recent_tokens"), std::string::npos) << pane;
  EXPECT_TRUE(at_prompt(*t)) << t->pane();
  t->keys("/exit Enter");
  EXPECT_TRUE(t->shows("EXIT=", 60)) << t->pane();
}

}  // namespace
}  // namespace moat::e2e

namespace moat::e2e {
namespace {

// Issue 27 item 18: a provider error that ends the turn is printed once (before, its error
// line and then the result's detail said it twice), at a terminal and in print mode.
TEST_F(TerminalViewTest, AProviderErrorIsPrintedOnce) {
  server_->inject(testing::Fault::kBadRequest, 2);
  auto t = start_moat("hi");
  ASSERT_TRUE(t->shows("provider error after", 60)) << t->pane();
  ASSERT_TRUE(at_prompt(*t)) << t->pane();
  std::string pane = t->pane();
  EXPECT_EQ(count_of(pane, "invalid_request_error"), 1u) << pane;
  t->keys("/exit Enter");
  EXPECT_TRUE(t->shows("EXIT=", 60)) << t->pane();
  auto printed = moat({"-p"}, "hi again");
  EXPECT_NE(printed.err.find("provider error after"), std::string::npos) << printed.err;
  EXPECT_EQ(count_of(printed.err, "invalid_request_error"), 1u) << printed.err;
}

// Issue 27 item 18: a replayed answer's usage is the file's, not a provider cache's: no
// cache-miss note (before: "cache miss: 9000 tokens not read from the cache (prefix changed)").
TEST(TerminalText, AReplayRunPrintsNoCacheMissNote) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  TempDir dir;
  const std::string ws = dir.path() + "/ws", script = dir.path() + "/two.replay.jsonl";
  fs::create_directories(ws);
  std::ofstream(script)
      << R"({"text": "Looking.", "tool_calls": [{"name": "bash", "arguments": {"command": "true"}}], "usage": {"input": 9000, "output": 40}})"
      << "\n"
      << R"({"text": "Done.", "usage": {"input": 9500, "output": 30}})"
      << "\n";
  auto r = run_split({moat_bin(), "run", "--model", "replay:" + script, "-C", ws, "--sessions-dir",
                      dir.path() + "/sessions", "--audit-dir", dir.path() + "/audit", "-p", "go"},
                     {"XDG_STATE_HOME=" + dir.path() + "/state",
                      "XDG_CONFIG_HOME=" + dir.path() + "/config", "MOATD_BIN=" + moatd_bin()},
                     60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Done.\n") << r.err;
  EXPECT_EQ(r.err.find("cache miss"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace moat::e2e

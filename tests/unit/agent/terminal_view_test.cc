// tests/unit/agent/terminal_view_test.cc: the terminal view drawn from events: calls folded
// with their decision, live redraws of a running call, the status line after an answer, and
// nothing from an event that could act on the terminal.
#include "agent/terminal_view.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>

#include "base/ticks.h"

namespace moat::agent {
namespace {

using nlohmann::json;

// A view writing into two temporary files, read back whole.
class Screen {
 public:
  explicit Screen(bool live) : out_(std::tmpfile()), err_(std::tmpfile()), view(out_, err_, live) {}
  ~Screen() {
    std::fclose(out_);
    std::fclose(err_);
  }
  std::string out() { return all(out_); }
  std::string err() { return all(err_); }

 private:
  static std::string all(FILE* f) {
    std::fflush(f);
    std::rewind(f);
    std::string s;
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
    return s;
  }
  FILE* out_;
  FILE* err_;

 public:
  TerminalView view;
};

json start(const std::string& summary) {
  return {{"type", "tool_call_start"}, {"id", "c1"}, {"tool", "bash"}, {"summary", summary}};
}

TEST(TerminalView, AFinishedCallIsFoldedToItsLastLinesWithItsDecision) {
  Screen s(false);
  s.view.event(start("make test"));
  std::string output;
  for (int i = 1; i <= 10; ++i) output += "line" + std::to_string(i) + "\n";
  s.view.event({{"type", "tool_output"}, {"id", "c1"}, {"chunk", output}});
  s.view.event({{"type", "tool_call_end"},
                {"id", "c1"},
                {"tool", "bash"},
                {"is_error", false},
                {"decision", "allow"},
                {"rule", {{"id", "default.make"}, {"layer", "default"}}},  // as moatd sends it
                {"exit_code", 0},
                {"duration_ms", 1500},
                {"output", output}});
  const std::string err = s.err();
  EXPECT_NE(err.find("  > bash: make test\n"), std::string::npos) << err;
  EXPECT_NE(err.find("    [ok] bash · allow (default.make) · exit 0 · 1.5s\n"
                     "    | ... 7 more line(s) above\n"
                     "    | line8\n    | line9\n    | line10\n"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("line7"), std::string::npos) << err;
  EXPECT_EQ(err.find('\x1b'), std::string::npos) << "nothing is redrawn when not live";
}

TEST(TerminalView, ACallsDecisionShowsOnItsLiveLineWhileItRuns) {
  Screen s(true);
  s.view.event(start("make test"));
  s.view.event({{"type", "tool_call_decision"},
                {"id", "c1"},
                {"decision", "ask"},
                {"rule", {{"id", "ask.make"}}},
                {"decided_by", "user"}});
  const std::string err = s.err();
  const std::size_t last = err.rfind("bash");
  ASSERT_NE(last, std::string::npos) << err;
  EXPECT_EQ(err.substr(last, 31), "bash · ask (ask.make, by you) ") << err;
  EXPECT_EQ(err.find("[ok]"), std::string::npos) << "it still runs";
}

TEST(TerminalView, ARunningCallIsRedrawnInPlaceWithItsLastLines) {
  Screen s(true);
  s.view.event(start("for i in 1 2 3 4 5 6"));
  for (int i = 1; i <= 6; ++i)
    s.view.event(
        {{"type", "tool_output"}, {"id", "c1"}, {"chunk", "tick" + std::to_string(i) + "\n"}});
  std::this_thread::sleep_for(ticks::kViewRedraw);  // a burst is drawn at the next tick
  s.view.tick();
  const std::string err = s.err();
  // The last drawing: the call's line with its time, then its last four lines.
  const std::size_t last = err.rfind("\x1b[J");
  ASSERT_NE(last, std::string::npos) << err;
  const std::string shown = err.substr(last + 3);
  EXPECT_NE(shown.find(" bash 0."), std::string::npos) << shown;
  EXPECT_NE(
      shown.find("s: for i in 1 2 3 4 5 6\n    | tick3\n    | tick4\n    | tick5\n    | tick6\n"),
      std::string::npos)
      << shown;
  EXPECT_EQ(shown.find("tick2"), std::string::npos) << shown;
}

// An MCP server's progress (a line per notification, sandbox/mcp_call.cc) is one line under
// its call, replaced by the next; a burst of them is drawn once, then at the next tick.
TEST(TerminalView, AnMcpCallsProgressIsOneLineRedrawnAtMostEveryTick) {
  Screen s(true);
  s.view.event({{"type", "tool_call_start"}, {"id", "c1"}, {"tool", "mcp__t__slow"},
                {"summary", "{}"}});
  const std::size_t before = s.err().size();
  for (int i = 1; i <= 200; ++i)
    s.view.event({{"type", "tool_output"}, {"id", "c1"},
                  {"chunk", "progress " + std::to_string(i) + "/200 step\x1b[2J\n"}});
  const std::string burst = s.err().substr(before);
  std::size_t draws = 0;
  for (std::size_t at = 0; (at = burst.find("mcp__t__slow", at)) != std::string::npos; ++at)
    ++draws;
  EXPECT_LE(draws, 1u) << "200 notifications at once redrew the call " << draws << " times";
  std::this_thread::sleep_for(ticks::kViewRedraw);
  s.view.tick();
  const std::string err = s.err();
  const std::string shown = err.substr(err.rfind("mcp__t__slow"));
  EXPECT_NE(shown.find("\n    | progress 200/200 step^[[2J\n"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("progress 199/200"), std::string::npos) << shown;
}

TEST(TerminalView, AStatusLineFollowsEachAnswer) {
  Screen s(false);
  s.view.event({{"type", "answer"},
                {"usage", {{"input", 100}, {"cacheRead", 900}, {"cacheWrite", 0}, {"output", 50}}},
                {"totals", {{"cost", {{"total", 0.0123}}}}}});
  EXPECT_NE(s.err().find("tokens: 100 in, 900 cache read, 0 cache write, 50 out · $0.0123 so far · "
                         "cache hit 90%"),
            std::string::npos)
      << s.err();
}

// The only escapes on the screen are the view's own (cursor up N, clear below).
TEST(TerminalView, NothingFromAnEventCanActOnTheTerminal) {
  const std::string hostile =
      "\x1b]0;pwned\x07\x1b[2J\xc2\x9b"
      "2J\r";
  Screen s(true);
  s.view.feed(R"({"type":"text_delta","text":"said )" + std::string("\\u001b]52;c;eA==\\u0007") +
              "\"}\n");
  s.view.event(start("echo " + hostile));
  s.view.event({{"type", "tool_output"}, {"id", "c1"}, {"chunk", hostile + "\n"}});
  s.view.event({{"type", "tool_call_end"}, {"id", "c1"}, {"tool", "bash"}, {"output", hostile}});
  s.view.event({{"type", "note"}, {"message", hostile}});
  const std::string all = s.out() + s.err();
  EXPECT_NE(s.out().find("said ^[]52;c;eA==^G"), std::string::npos) << s.out();
  EXPECT_NE(all.find("^[]0;pwned^G^[[2JM-^[2J^M"), std::string::npos) << all;
  for (std::size_t at = all.find('\x1b'); at != std::string::npos; at = all.find('\x1b', at + 1)) {
    std::size_t end = at + 2;
    while (end < all.size() && std::isdigit(static_cast<unsigned char>(all[end]))) ++end;
    ASSERT_LT(end, all.size());
    EXPECT_TRUE(all[at + 1] == '[' && (all[end] == 'A' || all[end] == 'J'))
        << "an escape that is not the view's: " << all.substr(at, 12);
  }
  EXPECT_EQ(all.find("\xc2\x9b"), std::string::npos);
  EXPECT_EQ(all.find('\x07'), std::string::npos);
}

}  // namespace
}  // namespace moat::agent

namespace moat::agent {
namespace {

TEST(TerminalView, SlashCommandsAnswerFromTheEventsSeenAndOtherLinesAreNotTheirs) {
  Screen s(false);
  s.view.event(
      {{"type", "session"},
       {"model", "mock/any"},
       {"provider", "mock"},
       {"policy_hash", "sha256:ab"},
       {"policy_layers",
        {{{"layer", "builtin"}, {"name", "moat-default"}, {"file", "builtin:default.toml"}}}}});
  s.view.event({{"type", "answer"},
                {"usage", {{"input", 10}, {"output", 5}}},
                {"totals",
                 {{"answers", 2},
                  {"usage", {{"input", 30}, {"cacheRead", 7}, {"cacheWrite", 1}, {"output", 9}}},
                  {"cost", {{"total", 0.5}}}}}});
  s.view.event({{"type", "tool_call_end"},
                {"id", "c1"},
                {"tool", "write"},
                {"output", ""},
                {"files_changed", {{{"path", "src/a.c"}, {"op", "modified"}}}}});
  for (const char* c : {"/cost", " /diff ", "/policy", "/model"})
    EXPECT_TRUE(s.view.command(c)) << c;
  EXPECT_FALSE(s.view.command("/usr/bin is wrong, look again"));
  EXPECT_FALSE(s.view.command("fix the tests"));
  const std::string err = s.err();
  EXPECT_NE(err.find("moat: 2 answers: 30 in, 7 cache read, 1 cache write, 9 out; $0.5000"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("moat: files changed so far, each with its diff:\nmodified src/a.c\n"),
            std::string::npos)
      << err;
  EXPECT_NE(
      err.find("moat: policy sha256:ab, layers:\n  builtin moat-default (builtin:default.toml)"),
      std::string::npos)
      << err;
  EXPECT_NE(err.find("moat: model mock/any (provider mock)"), std::string::npos) << err;
}

// Issue 27 item 18: /diff shows each file's diff, not only its name: an edit's own diff, a
// created file's content from the write's arguments; a command's change and a write's
// replacement say their contents are not tracked; escapes from the model show as text, and a
// long answer is cut, saying how much was left out.
TEST(TerminalView, DiffShowsEachFilesDiffAndSaysWhatIsNotTracked) {
  Screen s(false);
  auto call = [&](const std::string& id, const std::string& tool, const json& args,
                  const json& changed, const json& extra) {
    s.view.event({{"type", "tool_call_start"}, {"id", id}, {"tool", tool}, {"arguments", args}});
    json end = {{"type", "tool_call_end"}, {"id", id},     {"tool", tool},
                {"is_error", false},       {"output", ""}, {"files_changed", changed}};
    end.update(extra);
    s.view.event(end);
  };
  const std::string edit_diff = "--- a/src/a.c\n+++ b/src/a.c\n@@ -1 +1 @@\n-int x;\n+int y;\n";
  call("c1", "edit", {{"path", "./src/a.c"}}, {{{"path", "/ws/src/a.c"}, {"op", "modify"}}},
       {{"diff", edit_diff}});
  call("c2", "write", {{"path", "notes.txt"}, {"content", "one\n\x1b]0;title\x07two\n"}},
       {{{"path", "/ws/notes.txt"}, {"op", "create"}}}, json::object());
  call("c3", "write", {{"path", "/ws/src/a.c"}, {"content", "int z;\n"}},
       {{{"path", "/ws/src/a.c"}, {"op", "modify"}}}, json::object());
  call("c4", "bash", {{"command", "make"}},
       {{{"path", "/ws/out.o"}, {"op", "create"}}, {{"path", "/ws/old.o"}, {"op", "delete"}}},
       json::object());
  ASSERT_TRUE(s.view.command("/diff"));
  const std::string err = s.err();
  EXPECT_NE(err.find("modify /ws/src/a.c\n" + edit_diff), std::string::npos) << err;
  EXPECT_NE(err.find("create /ws/notes.txt\n--- a/notes.txt\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n"
                     "+one\n+^[]0;title^Gtwo\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("modify /ws/src/a.c\n  (replaced whole by write; the earlier contents are "
                     "not tracked)\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("create /ws/out.o\n  (changed by a command; its contents are not tracked)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("delete /ws/old.o\n  (deleted; its contents are not tracked)"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find('\x1b'), std::string::npos) << err;

  Screen big(false);
  std::string content;
  for (int i = 0; i < 1000; ++i) content += "line " + std::to_string(i) + "\n";
  big.view.event({{"type", "tool_call_start"},
                  {"id", "c1"},
                  {"tool", "write"},
                  {"arguments", {{"path", "big.txt"}, {"content", content}}}});
  big.view.event({{"type", "tool_call_end"},
                  {"id", "c1"},
                  {"tool", "write"},
                  {"output", ""},
                  {"files_changed", {{{"path", "/ws/big.txt"}, {"op", "create"}}}}});
  ASSERT_TRUE(big.view.command("/diff"));
  const std::string cut = big.err();
  EXPECT_NE(cut.find("+line 395\n"), std::string::npos) << cut.substr(0, 400);
  EXPECT_EQ(cut.find("+line 396\n"), std::string::npos) << "400 lines in all";
  EXPECT_NE(cut.find("moat: /diff is cut at 400 lines; 604 more are not shown"), std::string::npos)
      << cut.substr(cut.size() > 300 ? cut.size() - 300 : 0);
}

// Issue 27 item 18: at a terminal the model's text is wrapped, its last word held until a
// space or the line's end; erase() (the console's, before it draws a question) writes the
// held word first, so the question never comes before the text it follows. A real pty.
TEST(TerminalView, AWordHeldForWrappingIsWrittenBeforeAQuestion) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  ASSERT_GE(master, 0);
  ASSERT_EQ(::grantpt(master), 0);
  ASSERT_EQ(::unlockpt(master), 0);
  FILE* out = std::fopen(::ptsname(master), "w");
  ASSERT_NE(out, nullptr);
  FILE* err = std::tmpfile();
  {
    TerminalView view(out, err, false);
    view.event({{"type", "text_delta"}, {"text", "Shall I run wor"}});
    view.erase();
  }
  std::fclose(out);
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  std::string shown;
  char buf[256];
  for (ssize_t n; (n = ::read(master, buf, sizeof buf)) > 0;) shown.append(buf, n);
  EXPECT_EQ(shown, "Shall I run wor");
  std::fclose(err);
  ::close(master);
}

}  // namespace
}  // namespace moat::agent

// tests/integration/e2e/host_files_test.cc: at a session's end, `moat run` names the files the
// session created or changed that a program on the host runs code from (issue 26 item 13): in
// the --json result, in -p's summary and at a real terminal (tmux), against the mock model server.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "base/shell_words.h"
#include "mocked_run.h"
#include "tmux_session.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A call that writes a VS Code task and an .envrc (host-executed), an ordinary file, an .envrc
// it then deletes (gone: it runs nothing) and a .devcontainer.json it renames away. Below the
// root: the "**/" rows hold at any depth.
constexpr const char* kWrites =
    "mkdir -p app/.vscode sub lib && echo '{}' > app/.vscode/tasks.json && "
    "echo 'echo hi' > sub/.envrc && echo plain > notes.txt && echo x > lib/.envrc && "
    "rm lib/.envrc && echo '{}' > lib/.devcontainer.json && "
    "mv lib/.devcontainer.json lib/devcontainer.txt";

class HostFilesTest : public MockedRun {
 protected:
  void SetUp() override { start(agent::providers::Api::kOpenAiChat); }

  std::string at(const std::string& rel) const { return fs::canonical(ws_).string() + "/" + rel; }
};

TEST_F(HostFilesTest, TheJsonResultNamesTheHostExecutedFilesTheSessionCreatedOrChanged) {
  server_->push_turn(call_turn("c1", kWrites));
  server_->push_turn(text_turn("Done."));
  auto r = moat({"--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json result;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);)
    if (json e = json::parse(l, nullptr, false); e.value("type", "") == "result") result = e;
  ASSERT_TRUE(result.contains("host_executed")) << r.out;
  std::vector<std::string> paths;
  for (const json& f : result["host_executed"]) {
    paths.push_back(f.value("path", ""));
    EXPECT_FALSE(f.value("why", "").empty()) << f.dump();
  }
  EXPECT_EQ(paths, (std::vector<std::string>{at("app/.vscode/tasks.json"), at("sub/.envrc")}))
      << result.dump();
  EXPECT_FALSE(result.contains("host_executed_unknown")) << result.dump();
}

TEST_F(HostFilesTest, PrintModesSummaryNamesEachFileAndWhyAndASessionWithoutNamesNone) {
  server_->push_turn(call_turn("c1", kWrites));
  server_->push_turn(text_turn("Done."));
  auto r = moat({"-p"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Done.\n") << "the summary is on stderr";
  EXPECT_NE(r.err.find("runs code from; read them before one opens this folder"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("moat:   " + at("app/.vscode/tasks.json") + " (VS Code: tasks with runOn"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("moat:   " + at("sub/.envrc") + " (direnv:"), std::string::npos) << r.err;
  // The files named (the call's command line is on stderr too): these two and no other.
  std::vector<std::string> named;
  std::istringstream lines(r.err);
  for (std::string l; std::getline(lines, l);)
    if (l.rfind("moat:   /", 0) == 0) named.push_back(l.substr(8, l.find(" (") - 8));
  EXPECT_EQ(named, (std::vector<std::string>{at("app/.vscode/tasks.json"), at("sub/.envrc")}))
      << r.err;

  server_->push_turn(call_turn("c2", "echo more > notes.txt"));
  server_->push_turn(text_turn("Again."));
  auto next = moat({"-p"});
  ASSERT_EQ(next.exit_code, 0) << next.err;
  EXPECT_EQ(next.err.find("runs code from"), std::string::npos) << next.err;
}

TEST_F(HostFilesTest, TheTerminalsEndOfSessionSummaryNamesThem) {
  if (!Tmux::installed())
    GTEST_SKIP() << "tmux is not installed (it stands in for a person at a terminal)";
  if (::testing::Test::IsSkipped()) return;
  server_->push_turn(call_turn("c1", kWrites));
  server_->push_turn(text_turn("Done."));
  std::string line = "env";
  for (const std::string& e : env()) line += " " + shell_quote(e);
  std::vector<std::string> argv = run_argv();
  argv.push_back("write the files");
  for (const std::string& a : argv) line += " " + shell_quote(a);
  Tmux t("moat-hostfiles-" + std::to_string(getpid()));
  ASSERT_EQ(t.tmux("new-session -d -s t -x 200 -y 50 " + shell_quote(line + "; sleep 60")), 0);
  ASSERT_TRUE(t.shows("moat: done after 2 turns", 60)) << t.pane();
  // At the prompt again (the screen's last line that is not blank is "> "), the person ends the
  // session: its summary names the files.
  ASSERT_TRUE(eventually(
      [&] {
        std::string pane = t.pane();
        while (!pane.empty() && (pane.back() == '\n' || pane.back() == ' ')) pane.pop_back();
        const std::size_t nl = pane.rfind('\n');
        return pane.substr(nl == std::string::npos ? 0 : nl + 1) == ">";
      },
      std::chrono::seconds(60)))
      << t.pane();
  t.keys("/exit Enter");
  ASSERT_TRUE(t.shows("moat run --resume", 60)) << t.pane();
  EXPECT_TRUE(t.shows("read them before one opens this folder")) << t.pane();
  EXPECT_TRUE(t.shows(at("app/.vscode/tasks.json") + " (VS Code:")) << t.pane();
  EXPECT_TRUE(t.shows(at("sub/.envrc") + " (direnv:")) << t.pane();
}

}  // namespace
}  // namespace moat::e2e

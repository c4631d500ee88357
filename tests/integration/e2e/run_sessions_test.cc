// tests/integration/e2e/run_sessions_test.cc: `moat run --resume` and `--fork` as a new user
// meets them (issue 16, item 7): a resume goes on in the session's own workspace, and a fork
// from before a call's result says so without claiming moat stopped.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "workspace_test.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

class RunSessionsTest : public WorkspaceTest {
 protected:
  // A replay script of these lines (each one answer).
  std::string script(const std::string& name, const std::vector<std::string>& lines) const {
    const std::string path = dir_.path() + "/" + name + ".jsonl";
    std::ofstream out(path);
    for (const auto& l : lines) out << l << "\n";
    return path;
  }
  // `moat run --headless` with the test's sessions and audit directories; `cwd` is where the
  // run starts (the workspace is left to moat unless `extra` names one).
  e2e::Run moat_run(const std::string& replay, std::vector<std::string> extra,
                    const std::string& cwd) const {
    std::vector<std::string> argv = {"/bin/sh",
                                     "-c",
                                     "cd \"$0\" && exec \"$@\"",
                                     cwd,
                                     moat_bin(),
                                     "run",
                                     "--headless",
                                     "--model",
                                     "replay:" + replay,
                                     "--sessions-dir",
                                     sessions(),
                                     "--audit-dir",
                                     dir_.path() + "/audit"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run(argv, env());
  }
  std::string sessions() const { return dir_.path() + "/sessions"; }
  // The one session file holding `needle` and not `except`.
  std::string session_file_with(const std::string& needle, const std::string& except = "") const {
    for (const auto& e : fs::recursive_directory_iterator(sessions())) {
      if (!e.is_regular_file()) continue;
      const std::string text = read_file(e.path());
      if (text.find(needle) != std::string::npos &&
          (except.empty() || text.find(except) == std::string::npos))
        return e.path();
    }
    return "";
  }
  // The session id in a session file's name: <time>_<id>.jsonl.
  static std::string id_of(const std::string& file) {
    const std::string name = fs::path(file).stem();
    return name.substr(name.rfind('_') + 1);
  }
};

// The old moat resumed in the current directory: the session's calls went on in another
// repository than the one its history is about.
TEST_F(RunSessionsTest, ResumeRunsInTheSessionsOwnWorkspaceOrRefusesWhenItIsGone) {
  const std::string first = script(
      "first", {R"({"tool_calls":[{"name":"bash","arguments":{"command":"echo one > f.txt"}}]})",
                R"({"text":"first done"})"});
  e2e::Run r = moat_run(first, {"-C", ws_, "write one"}, dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string file = session_file_with("write one");
  ASSERT_FALSE(file.empty());
  const std::string id = id_of(file);

  const std::string elsewhere = dir_.path() + "/elsewhere";
  fs::create_directories(elsewhere);
  const std::string second = script(
      "second", {R"({"tool_calls":[{"name":"bash","arguments":{"command":"echo two > g.txt"}}]})",
                 R"({"text":"second done"})"});
  r = moat_run(second, {"--resume", id, "write two"}, elsewhere);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(read_file(ws_ + "/g.txt"), "two\n") << r.out;
  EXPECT_FALSE(fs::exists(elsewhere + "/g.txt")) << "the resume ran in the current directory";

  // Another workspace named with -C is refused, pointing at --fork.
  r = moat_run(second, {"--resume", id, "-C", elsewhere, "write two"}, elsewhere);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--fork"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(elsewhere + "/g.txt"));

  // A workspace that is gone is refused, naming it.
  fs::rename(ws_, dir_.path() + "/moved");
  r = moat_run(second, {"--resume", id, "write two"}, elsewhere);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(ws_), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gone"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(elsewhere + "/g.txt"));
}

// The old moat answered the call with "moat stopped before it finished" although the call
// had finished in the source session: the fork only began before its result.
TEST_F(RunSessionsTest, AForkFromAnEntryWithAnUnansweredCallGetsANeutralNote) {
  const std::string first = script(
      "first",
      {R"({"tool_calls":[{"id":"call_one","name":"bash","arguments":{"command":"echo one"}}]})",
       R"({"text":"first done"})"});
  e2e::Run r = moat_run(first, {"-C", ws_, "say one"}, ws_);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string file = session_file_with("say one");
  ASSERT_FALSE(file.empty());
  // The entry of the answer that holds the call (its result is the next entry).
  std::string entry;
  std::istringstream lines(read_file(file));
  for (std::string line; std::getline(lines, line);) {
    const auto e = nlohmann::json::parse(line);
    if (e.value("type", "") == "message" && e["message"].value("role", "") == "assistant" &&
        line.find("call_one") != std::string::npos)
      entry = e["id"];
  }
  ASSERT_FALSE(entry.empty()) << read_file(file);

  const std::string after = script("after", {R"({"text":"forked and done"})"});
  for (const char* how : {"--fork", "--resume"}) {
    r = moat_run(after, {how, id_of(file) + "@" + entry, "go on"}, ws_);
    ASSERT_EQ(r.exit_code, 0) << how << "\n" << r.out;
  }
  // The fork is a file of its own; the branch is in the source file, after its first end.
  const std::string fork_text = read_file(session_file_with("parentSession\":\"" + id_of(file)));
  const std::string source_text = read_file(file);
  const std::string branch_text = source_text.substr(source_text.find("first done"));
  for (const std::string& text : {fork_text, branch_text}) {
    const auto note = text.find("is not part of it");
    EXPECT_NE(note, std::string::npos) << text;
    EXPECT_EQ(text.find("moat stopped"), std::string::npos) << text;
    EXPECT_NE(text.find("forked and done", note), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace moat::e2e

// tests/integration/e2e/run_sessions_test.cc: `moat run --resume` and `--fork` as a new user
// meets them (issue 16, item 7): a resume goes on in the session's own workspace, and a fork
// from before a call's result says so without claiming moat stopped. Issue 27: the model a
// session goes on with, short session ids, and the links between a session and its audit logs.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <ctime>
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
  // `moat ARGS...` started in `cwd`, with the test's sessions directory for `sessions`.
  e2e::Run moat(std::vector<std::string> args, const std::string& cwd) const {
    std::vector<std::string> argv = {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", cwd,
                                     moat_bin()};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> e = env();
    e.push_back("MOAT_SESSIONS_DIR=" + sessions());
    return run(argv, e);
  }
  // `moat run --headless` without --model.
  e2e::Run moat_run_unnamed(std::vector<std::string> extra, const std::string& cwd) const {
    std::vector<std::string> args = {"run", "--headless", "--sessions-dir", sessions(),
                                     "--audit-dir", audit()};
    args.insert(args.end(), extra.begin(), extra.end());
    return moat(args, cwd);
  }
  std::string audit() const { return dir_.path() + "/audit"; }
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

// Issue 27 item 15: --continue and --resume needed --model again; they go on with the model
// the session ran with (its newest model_change), and -m is --model's short form.
TEST_F(RunSessionsTest, ContinueAndResumeRunWithTheSessionsOwnModel) {
  const std::string first = script(
      "first", {R"({"tool_calls":[{"name":"bash","arguments":{"command":"echo hi >> f.txt"}}]})",
                R"({"text":"done"})"});
  e2e::Run r = moat_run_unnamed({"-m", "replay:" + first, "-C", ws_, "write hi"}, dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string file = session_file_with("write hi");
  ASSERT_FALSE(file.empty());

  r = moat_run_unnamed({"--continue", "-C", ws_, "again"}, dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  r = moat_run_unnamed({"--resume", id_of(file), "once more"}, dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(read_file(ws_ + "/f.txt"), "hi\nhi\nhi\n") << r.out;
  // Each run wrote the model it ran with: the session's own, three times.
  int changes = 0;
  std::istringstream lines(read_file(file));
  for (std::string line; std::getline(lines, line);) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.value("type", "") != "model_change") continue;
    ++changes;
    EXPECT_EQ(e.value("model", ""), first) << line;
  }
  EXPECT_EQ(changes, 3) << read_file(file);

  // A new session has no model of its own to go on with.
  r = moat_run_unnamed({"-C", ws_, "new"}, dir_.path());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--model"), std::string::npos) << r.out;
}

// The sessions of `dir` as `moat sessions list --json` gives them, newest first.
std::vector<nlohmann::json> listed(const e2e::Run& r) {
  std::vector<nlohmann::json> out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_object()) out.push_back(std::move(e));
  }
  return out;
}

// Issue 27 item 19: a UUIDv7 begins with its time, so sessions made within a minute shared
// their first 8+ characters, and the ids a person could type named none of them. `list`
// prints the random tail, every command takes it, `show` and `tree` default to the newest
// session, and `list` shows the time it sorts by (the file's last write).
TEST_F(RunSessionsTest, ShortIdsNameOneSessionAndShowDefaultsToTheNewest) {
  const std::string answer = script("answer", {R"({"text":"done"})"});
  for (const char* task : {"task one", "task two"})
    ASSERT_EQ(moat_run(answer, {"-C", ws_, task}, dir_.path()).exit_code, 0);
  const std::string one = session_file_with("task one"), two = session_file_with("task two");
  const std::string id_one = id_of(one), id_two = id_of(two);

  e2e::Run r = moat({"sessions", "list", "--json", "-C", ws_}, dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::vector<nlohmann::json> list = listed(r);
  ASSERT_EQ(list.size(), 2u) << r.out;
  const std::string short_two = list[0].value("short_id", ""), short_one = list[1].value("short_id", "");
  EXPECT_EQ(list[0].value("id", ""), id_two);
  EXPECT_EQ(short_one, id_one.substr(id_one.size() - 8));
  EXPECT_EQ(short_two, id_two.substr(id_two.size() - 8));

  // The text listing: the short id and the file's last write, which it sorts by.
  r = moat({"sessions", "list", "-C", ws_}, dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  struct stat st {};
  ASSERT_EQ(::stat(two.c_str(), &st), 0);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&st.st_mtim.tv_sec));
  EXPECT_EQ(r.out.rfind(short_two + "  " + when, 0), 0u) << r.out;

  // Each short id names its own session, for show, tree and --resume alike.
  r = moat({"sessions", "show", short_one}, dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("session " + id_one), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("task one"), std::string::npos) << r.out;
  r = moat({"sessions", "tree", short_two}, dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  // Without an id: the newest session of the workspace the command runs in.
  r = moat({"sessions", "show"}, ws_);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("session " + id_two), std::string::npos) << r.out;
  EXPECT_EQ(moat({"sessions", "tree"}, ws_).exit_code, 0);
  r = moat_run(answer, {"--resume", short_one, "go on"}, dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(read_file(one).find("go on"), std::string::npos);
  // The ids' shared time prefix names both: refused as ambiguous, listing them.
  if (id_one.compare(0, 8, id_two, 0, 8) == 0) {
    r = moat({"sessions", "show", id_one.substr(0, 8)}, dir_.path());
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find("ambiguous"), std::string::npos) << r.out;
  }
}

// Issue 27 item 19: the audit log's id and the session's were not linked: `audit show
// --session` took only the audit log's id, and `audit show` only files. `sessions show` names
// the audit logs of the session's runs; `audit show --session` takes the session's id (or
// short form) and an audit directory.
TEST_F(RunSessionsTest, AuditShowTakesTheSessionIdAndAnAuditDirectory) {
  const std::string one = script(
      "one", {R"({"tool_calls":[{"name":"bash","arguments":{"command":"echo first-call"}}]})",
              R"({"text":"done"})"});
  const std::string two = script(
      "two", {R"({"tool_calls":[{"name":"bash","arguments":{"command":"echo second-call"}}]})",
              R"({"text":"done"})"});
  ASSERT_EQ(moat_run(one, {"-C", ws_, "task one"}, dir_.path()).exit_code, 0);
  ASSERT_EQ(moat_run(two, {"-C", ws_, "task two"}, dir_.path()).exit_code, 0);
  const std::string id_one = id_of(session_file_with("task one"));

  e2e::Run r = moat({"sessions", "show", id_one}, dir_.path());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const size_t at = r.out.find("\naudit ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string audit_id = r.out.substr(at + 7, r.out.find('\n', at + 1) - at - 7);

  for (const std::string& named : {id_one, id_one.substr(id_one.size() - 8)}) {
    r = moat({"audit", "show", "--session", named, audit()}, dir_.path());
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("first-call"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("second-call"), std::string::npos) << r.out;
  }
  // The audit log's own id still works, and the directory alone shows every session.
  r = moat({"audit", "show", "--session", audit_id, audit()}, dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("first-call"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("second-call"), std::string::npos) << r.out;
  r = moat({"audit", "show", audit()}, dir_.path());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("first-call"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("second-call"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace moat::e2e

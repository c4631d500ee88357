// tests/integration/e2e/escapes_test.cc: untrusted text never reaches the terminal raw. The
// model's text, a tool's output and a file name carry OSC 52 (clipboard), OSC 8 (hyperlink),
// a title, a screen clear, cursor moves and a C1 CSI; every view a person reads (`moat run`,
// `sessions show`, `sessions list`, `audit show`, `audit verify`, `policy explain`) shows them
// as `cat -v` does, and `--json` escapes them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "mocked_run.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using agent::providers::Api;
using nlohmann::json;
using testing::MockModelServer;
using testing::ScriptedTurn;

// OSC 52 writes the clipboard, OSC 8 a link, OSC 0 the title; then clear, home, cursor up,
// cursor to 10;20, and CSI as the C1 control U+009B.
const std::string kHostile =
    "\x1b]52;c;ZXZpbA==\x07"
    "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
    "\x1b]0;pwned\x07"
    "\x1b[2J\x1b[H\x1b[5A\x1b[10;20H"
    "\xc2\x9b"
    "2J";
// The first byte a terminal would act on, described; "" when there is none.
std::string raw_control(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const bool c1 = c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(s[i + 1]) <= 0x9f;
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c1)
      return "byte " + std::to_string(c) + " at " + std::to_string(i) +
             " in: " + s.substr(i > 40 ? i - 40 : 0, 80);
  }
  return "";
}

class EscapesTest : public MockedRun {
 protected:
  void SetUp() override { start(Api::kOpenAiChat); }

  // A run whose model text, tool output and a file name carry the sequences.
  SplitRun hostile_run(const std::string& flag) {
    ScriptedTurn call;
    call.text = "Listing " + kHostile;
    // The call's output carries the bytes, and `ls` prints a file name made of them. (A
    // command line with control characters is refused by the default policy before it runs.)
    std::ofstream(ws_ + "/name\x1b]0;pwned\x07\x1b[2J\xc2\x9b" + "2J") << "";  // no '/'

    std::ofstream(ws_ + "/out.txt") << "output " << kHostile << "\n";
    call.calls.push_back({"call_x", "bash", {{"command", "cat out.txt; ls"}}});
    server_->push_turn(call);
    ScriptedTurn done;
    done.text = "Done " + kHostile;
    server_->push_turn(done);
    return run_split(
        {moat_bin(), "run", flag, "--model", "mock/any", "-C", ws_, "--sessions-dir",
         dir_.path() + "/sessions", "--audit-dir", dir_.path() + "/audit", "task " + kHostile},
        env(), 120);
  }

  SplitRun command(const std::vector<std::string>& args) {
    std::vector<std::string> a = {moat_bin()};
    a.insert(a.end(), args.begin(), args.end());
    return run_split(a, env(), 60);
  }

  std::string audit_file() const {
    for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/audit"))
      if (e.path().extension() == ".jsonl") return e.path();
    return "";
  }
};

void expect_shown_not_acted_on(const SplitRun& r, const std::string& view) {
  SCOPED_TRACE(view);
  EXPECT_EQ(raw_control(r.out), "") << "stdout";
  EXPECT_EQ(raw_control(r.err), "") << "stderr";
  // Shown as cat -v shows it, or as the view's own escape (sessions show writes \x1b).
  const std::string all = r.out + r.err;
  EXPECT_TRUE(all.find("^[]52;c;ZXZpbA==^G") != std::string::npos ||
              all.find("\\x1b]52;c;ZXZpbA==\\x07") != std::string::npos)
      << "OSC 52, visible:\n"
      << all;
}

TEST_F(EscapesTest, EveryViewShowsTheSequencesAsCatVDoes) {
  auto run = hostile_run("-p");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  expect_shown_not_acted_on(run, "moat run -p");
  for (const char* shown :
       {"^[]8;;http://evil.example/^[\\click", "^[]0;pwned^G", "^[[2J^[[H^[[5A^[[10;20H", "M-^[2J"})
    EXPECT_NE((run.out + run.err).find(shown), std::string::npos) << shown << "\n" << run.err;
  EXPECT_NE(run.out.find("Done ^[]52;"), std::string::npos) << "the final answer: " << run.out;
  EXPECT_NE(run.err.find("output ^[]52;"), std::string::npos) << "the call's output: " << run.err;
  EXPECT_NE(run.err.find("name^[]0;pwned^G^[[2JM-^[2J"), std::string::npos)
      << "the file name in ls: " << run.err;

  const std::string sessions = "--dir=" + dir_.path() + "/sessions";
  auto list = command({"sessions", sessions, "list", "--all"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(raw_control(list.out + list.err), "") << "sessions list";
  std::stringstream ids(list.out);
  std::string id;
  ids >> id;
  auto show = command({"sessions", sessions, "show", id});
  EXPECT_EQ(show.exit_code, 0) << show.err;
  expect_shown_not_acted_on(show, "sessions show");

  const std::string audit = audit_file();
  ASSERT_FALSE(audit.empty());
  auto audit_show = command({"audit", "show", audit});
  EXPECT_EQ(audit_show.exit_code, 0) << audit_show.err;
  EXPECT_EQ(raw_control(audit_show.out + audit_show.err), "") << "audit show";
  // The audit log holds the task's and the model's bytes only through the session's path
  // names; its rows are checked for raw bytes above.
  auto verify = command({"audit", "verify", audit});
  EXPECT_EQ(raw_control(verify.out + verify.err), "") << "audit verify";

  auto explain = command({"policy", "explain", "--", "printf '" + kHostile + "'"});
  EXPECT_EQ(raw_control(explain.out + explain.err), "") << "policy explain";
  EXPECT_NE(explain.out.find("^[]52;c;ZXZpbA==^G"), std::string::npos) << explain.out;
}

TEST_F(EscapesTest, JsonOutputEscapesTheSequencesAndKeepsThemExact) {
  auto run = hostile_run("--json");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(raw_control(run.out), "") << "moat run --json";
  bool exact = false;
  std::stringstream lines(run.out);
  for (std::string line; std::getline(lines, line);) {
    const json e = json::parse(line, nullptr, false);
    ASSERT_FALSE(e.is_discarded()) << line;
    if (e.value("type", "") == "result") exact = e.value("answer", "") == "Done " + kHostile;
  }
  EXPECT_TRUE(exact) << "the answer, unescaped, is the model's text byte for byte";
  const std::string sessions = "--dir=" + dir_.path() + "/sessions";
  auto list = command({"sessions", sessions, "list", "--all", "--json"});
  EXPECT_EQ(raw_control(list.out), "") << "sessions list --json";
  const json first = json::parse(list.out.substr(0, list.out.find('\n')), nullptr, false);
  ASSERT_TRUE(first.is_object()) << list.out;
  auto show = command({"sessions", sessions, "show", "--json", first.value("id", "")});
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(raw_control(show.out), "") << "sessions show --json";
  EXPECT_NE(show.out.find("\\u001b]52;"), std::string::npos) << show.out;
  auto audit_show = command({"audit", "show", "--json", audit_file()});
  EXPECT_EQ(raw_control(audit_show.out), "") << "audit show --json";
}

}  // namespace
}  // namespace moat::e2e

// tests/integration/e2e/cli_usage_test.cc: the `moat` command line as a person meets it (issue
// 27 items 16 and 20): --version, doctor's moatd check and verdict, errors that name the option
// to fix, help that lists the real exit codes, -C in every command, shell completion.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace moat::e2e {
namespace {

// The last non-empty line of `text`.
std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t.substr(t.rfind('\n') == std::string::npos ? 0 : t.rfind('\n') + 1);
}

TEST(CliUsage, VersionFlagPrintsMoatsVersion) {
  const SplitRun r = run_split({moat_bin(), "--version"}, {}, 30);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("moat ") + MOAT_VERSION + "\n");
  const SplitRun d = run_split({moatd_bin(), "--version"}, {}, 30);
  EXPECT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out, std::string("moatd ") + MOAT_VERSION + "\n");
}

// Issue 27 item 16: doctor checked the kernel's layers but not the one thing a fresh install
// gets wrong (where moatd is), and ended without a verdict.
TEST(CliUsage, DoctorChecksMoatdStartsAndEndsWithOneVerdictLine) {
  std::string why;
  const bool layers = sandbox_available(&why);
  SplitRun r = run_split({moat_bin(), "doctor"}, {"MOATD_BIN=" + moatd_bin()}, 60);
  EXPECT_NE(r.out.find("moatd              yes  " + moatd_bin() + " starts"), std::string::npos)
      << r.out;
  if (layers) {
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(last_line(r.out).rfind("ready: ", 0), 0u) << r.out;
  }
  TempDir dir;
  const std::string missing = dir.path() + "/no-moatd";
  r = run_split({moat_bin(), "doctor"}, {"MOATD_BIN=" + missing}, 60);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.out.find("moatd              NO   cannot start " + missing), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("MOATD_BIN"), std::string::npos) << r.out;
  EXPECT_EQ(last_line(r.out).rfind("NOT READY: ", 0), 0u) << r.out;
  EXPECT_NE(last_line(r.out).find("moatd"), std::string::npos) << r.out;
  // A moatd that is not moat's own version (here: a program that prints another).
  const std::string other = dir.path() + "/old-moatd";
  std::ofstream(other) << "#!/bin/sh\necho 'moatd 0.0.1'\n";
  std::filesystem::permissions(other, std::filesystem::perms::owner_all);
  r = run_split({moat_bin(), "doctor"}, {"MOATD_BIN=" + other}, 60);
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("is another version"), std::string::npos) << r.out;
}

// Issue 27 item 20: a bad -C or --bind printed "realpath(/x): No such file or directory"; an
// error names the option to fix, never a syscall or a source location.
TEST(CliUsage, ErrorsNameTheOptionNotASyscallOrASourceLocation) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  TempDir dir;
  const std::string gone = dir.path() + "/gone";
  struct Case {
    std::vector<std::string> argv;
    int exit_code;
    std::string names;
  };
  const std::vector<Case> cases = {
      {{moat_bin(), "run", "-m", "replay:x", "-C", gone, "a task"}, 2, "-C: workspace '" + gone},
      {{moat_bin(), "sandbox", "exec", "-C", gone, "--", "true"}, 125, "workspace '" + gone},
      {{moat_bin(), "sandbox", "exec", "--bind", gone, "/x", "--", "true"},
       125,
       "--bind '" + gone + "': cannot be resolved: No such file or directory"},
      {{moat_bin(), "sandbox", "exec", "--ro-bind", gone, "/x", "--", "true"},
       125,
       "--ro-bind '" + gone + "'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.argv[1] + " " + c.argv[2] + " " + c.argv[3]);
    const SplitRun r = run_split(c.argv, {"MOATD_BIN=" + moatd_bin()}, 60);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(".cc:"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("realpath"), std::string::npos) << r.err;
  }
}

// Issue 27 item 20: `sandbox --help` said "0 done, 2 usage" for a command that passes its
// program's status through, and `audit verify --help` called 1 "the task failed".
TEST(CliUsage, HelpListsTheExitCodesTheCommandReallyReturns) {
  SplitRun r = run_split({moat_bin(), "sandbox", "--help"}, {}, 30);
  EXPECT_EQ(r.exit_code, 0);
  for (const char* code :
       {"124 timed out", "125 moat failed", "126 refused by the policy", "127 not found", "128+N"})
    EXPECT_NE(r.out.find(code), std::string::npos) << code << "\n" << r.out;
  r = run_split({moat_bin(), "audit", "verify", "--help"}, {}, 30);
  EXPECT_NE(r.out.find("1 a file does not verify"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("the task failed"), std::string::npos) << r.out;
  // And 1 is what a broken file gets.
  TempDir dir;
  std::ofstream(dir.path() + "/a.jsonl") << "{\"not\":\"an audit record\"}\n";
  r = run_split({moat_bin(), "audit", "verify", dir.path() + "/a.jsonl"}, {}, 30);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
}

// Issue 27 item 20: -C meant the workspace in `run` and `sandbox exec` only.
TEST(CliUsage, DashCIsTheWorkspaceInEveryCommandThatTakesOne) {
  for (const std::vector<std::string>& cmd : {std::vector<std::string>{"run"},
                                              {"sandbox", "exec"},
                                              {"sessions", "list"},
                                              {"policy", "lint"},
                                              {"policy", "explain"},
                                              {"policy", "trust"},
                                              {"prompt", "show"}}) {
    std::vector<std::string> argv = {moat_bin()};
    argv.insert(argv.end(), cmd.begin(), cmd.end());
    argv.push_back("--help");
    const SplitRun r = run_split(argv, {}, 30);
    EXPECT_NE(r.out.find("-C,--workspace"), std::string::npos) << cmd[0] << "\n" << r.out;
  }
}

// The words bash offers after `line` (its last word is the one completed).
std::string completions(const std::string& script, const std::string& line) {
  TempDir dir;
  std::ofstream(dir.path() + "/moat.bash") << script;
  const std::string code = "source '" + dir.path() + "/moat.bash'; COMP_WORDS=(" + line +
                           "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _moat; "
                           "for w in \"${COMPREPLY[@]}\"; do echo \"$w\"; done";
  return run_split({"/bin/bash", "--norc", "-c", code}, {}, 30).out;
}

// Issue 27 item 20: no shell completion. The script is generated from the CLI's own options,
// so every option --help lists is offered where it belongs.
TEST(CliUsage, BashCompletionOffersEachCommandsOwnSubcommandsAndOptions) {
  const SplitRun s = run_split({moat_bin(), "completion", "bash"}, {}, 30);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(completions(s.out, "moat se"), "sessions\n");
  EXPECT_EQ(completions(s.out, "moat sessions s"), "show\n");
  EXPECT_EQ(completions(s.out, "moat run --mo"), "--model\n");
  EXPECT_EQ(completions(s.out, "moat sandbox exec --ro"), "--ro-bind\n");
  // An option of another command is not offered here, and values do not reset the command.
  EXPECT_EQ(completions(s.out, "moat run --ro"), "");
  EXPECT_EQ(completions(s.out, "moat run -C /tmp --max-tu"), "--max-turns\n");
  // Every long option `moat run --help` lists is offered after `moat run`.
  const std::string help = run_split({moat_bin(), "run", "--help"}, {}, 30).out;
  const std::string offered = completions(s.out, "moat run --");
  for (size_t at = help.find("--"); at != std::string::npos; at = help.find("--", at + 2)) {
    const size_t end = help.find_first_not_of("abcdefghijklmnopqrstuvwxyz-", at + 2);
    const std::string opt = help.substr(at, end - at);
    if (opt.size() > 2) {
      EXPECT_NE(offered.find(opt + "\n"), std::string::npos) << opt;
    }
  }
  const SplitRun zsh = run_split({moat_bin(), "completion", "zsh"}, {}, 30);
  EXPECT_EQ(zsh.exit_code, 0);
  EXPECT_NE(zsh.out.find("bashcompinit"), std::string::npos);
  EXPECT_EQ(run_split({moat_bin(), "completion", "fish"}, {}, 30).exit_code, 2);
}

}  // namespace
}  // namespace moat::e2e

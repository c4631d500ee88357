// tests/unit/policy/code_env_test.cc: assignments of variables that load code or choose the
// executable make the unit ask, whatever the program's rule says (policy/code_env.cc), under
// an organisation policy that allows the programs by name and has no rule of its own about
// variables. Every row of the table, in every way a line can set it.
#include <gtest/gtest.h>

#include <string>

#include "policy/code_env.h"
#include "policy/explain.h"
#include "policy/policy.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using testing::PolicyWorld;
using testing::write_file;

class CodeEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w_.options.use_builtin_default = false;
    write_file(w_.options.user_dir + "/org.toml",
               "schema = 1\ndefaults = { command = \"deny\", write = \"deny\" }\n"
               "[[command]]\nid = \"org.tools\"\ndecision = \"allow\"\n"
               "program = [\"ls\", \"git\", \"npm\", \"python3\", \"node\", \"perl\", \"ruby\", "
               "\"bash\", \"env\", \"make\","
               " \"export\", \"read\", \"printf\", \"declare\", \"local\", \"readonly\", "
               "\"typeset\", \"mapfile\", \"cat\","
               " \"timeout\", \"echo\", \"let\", \"getopts\", \"wait\", \"unset\", \"true\", "
               "\"cargo\", \"go\", \"zsh\"]\n");
    p_ = w_.load();
    ASSERT_TRUE(p_);
  }

  Decision decide(const std::string& line) { return p_->decide_command(line, w_.workspace); }

  void expect_ask(const std::string& line, const std::string& variable) {
    SCOPED_TRACE(line);
    Decision d = decide(line);
    EXPECT_EQ(d.verdict, Verdict::kAsk) << d.reason << "\n" << d.detail().dump(1);
    EXPECT_EQ(d.deciding.id, "builtin.code-env") << d.reason;
    EXPECT_NE(d.reason.find(variable), std::string::npos) << d.reason;
  }

  void expect_allow(const std::string& line) {
    SCOPED_TRACE(line);
    Decision d = decide(line);
    EXPECT_EQ(d.verdict, Verdict::kAllow) << d.reason << "\n" << d.detail().dump(1);
    EXPECT_EQ(d.deciding.id, "org.tools") << d.reason;
  }

  PolicyWorld w_;
  std::unique_ptr<Policy> p_;
};

// The lines of issue 12, item 15: each was allowed because the program is.
TEST_F(CodeEnvTest, AssignmentsThatChangeWhatRunsAsk) {
  expect_ask("LD_PRELOAD=./x.so ls", "LD_PRELOAD");
  expect_ask("PATH=./tools ls", "PATH");
  expect_ask("env PATH=./tools ls", "PATH");
  expect_ask("GIT_PAGER='sh -c id' git log", "GIT_PAGER");
  expect_ask("GIT_SSH_COMMAND='sh -c id' git log", "GIT_SSH_COMMAND");
  expect_ask("GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=id git log",
             "GIT_CONFIG_COUNT");
  expect_ask("NODE_OPTIONS='--require ./x.js' npm test", "NODE_OPTIONS");
  expect_ask("PYTHONPATH=. python3 -m json.tool x", "PYTHONPATH");
  expect_ask("BASH_ENV=./x.sh bash run_tests.sh", "BASH_ENV");
  expect_ask("LD_LIBRARY_PATH=. ls", "LD_LIBRARY_PATH");
  expect_ask("JAVA_TOOL_OPTIONS=-javaagent:x.jar make", "JAVA_TOOL_OPTIONS");
  expect_ask("PERL5OPT=-Mx perl run.pl", "PERL5OPT");
  expect_ask("RUBYOPT=-rx ruby run.rb", "RUBYOPT");
}

// Every way a line sets a variable for what runs after it.
TEST_F(CodeEnvTest, EveryFormOfAssignmentCounts) {
  expect_ask("export LD_PRELOAD=./x.so; ls", "LD_PRELOAD");
  expect_ask("LD_PRELOAD=./x.so; export LD_PRELOAD; ls", "LD_PRELOAD");
  expect_ask("declare -x PATH=./bin && ls", "PATH");
  expect_ask("readonly PATH=\"$PWD/bin\"; ls", "PATH");
  expect_ask("env -i PATH=./bin ls", "PATH");
  expect_ask("env -S 'PATH=./bin ls'", "PATH");
  expect_ask("timeout 5 env GIT_PAGER=./pager git log", "GIT_PAGER");
  expect_ask("read PATH < paths.txt; ls", "PATH");
  expect_ask("printf -v PATH %s ./bin; ls", "PATH");
  expect_ask("mapfile -t PATH < x; ls", "PATH");
  expect_ask("for PATH in ./bin; do ls; done", "PATH");
  expect_ask("export $X; ls", "a variable");
  expect_ask("declare -n P=PATH; P=./bin; ls", "a variable");
  expect_ask("let PATH=1; ls", "PATH");
  expect_ask("(PATH=./bin; ls)", "PATH");
  expect_ask("echo $(LD_PRELOAD=./x.so ls)", "LD_PRELOAD");
  expect_ask("env 'BASH_FUNC_ls%%=() { id; }' bash -c ls", "BASH_FUNC_ls%%");
}

// Forms of assignment the parser missed, each found by attacking the table (a second review of
// issue 12, item 15): an append through a builtin, an option value attached to its letter,
// getopts, wait -p, unset PATH (bash then runs ./ls), ${NAME:=v}, arithmetic anywhere (a
// number is a relative directory for PATH) and a {NAME} redirection word.
TEST_F(CodeEnvTest, AssignmentsHiddenInBuiltinsAndExpansionsAsk) {
  expect_ask("export LD_PRELOAD+=./x.so; ls", "LD_PRELOAD");
  expect_ask("declare -x LD_PRELOAD+=./x.so; ls", "LD_PRELOAD");
  expect_ask("export PATH+=./bin; ls", "PATH");  // $PATH./bin: the last entry is ./bin
  expect_ask("printf -vLD_PRELOAD %s ./x.so; export LD_PRELOAD; ls", "LD_PRELOAD");
  expect_ask("read -aPATH < paths.txt; ls", "PATH");
  expect_ask("getopts x PATH -x; ls", "PATH");
  expect_ask("getopts \"$opts\" $N; ls", "a variable");
  expect_ask("wait -n -p PATH; ls", "PATH");
  expect_ask("unset PATH; ls", "PATH");
  expect_ask("echo ${LD_PRELOAD:=./x.so}; export LD_PRELOAD; ls", "LD_PRELOAD");
  expect_ask("echo ${PATH=.}; ls", "PATH");
  expect_ask("true $((PATH=1)); ls", "PATH");
  expect_ask("echo \"$((PATH+=1))\"; ls", "PATH");
  expect_ask("echo ${a[PATH=1]}; ls", "PATH");
  expect_ask("let PATH++; ls", "PATH");
  expect_ask("true {PATH}</dev/null; ls", "PATH");
}

// Search path entries whose text says nothing of where they lead: the sandbox's HOME is /tmp
// (writable), whatever home the policy's path rules use, and /proc/self/cwd or /dev/fd/N are
// links to the working directory or to any directory a descriptor names.
TEST_F(CodeEnvTest, HomeProcAndDevEntriesAsk) {
  expect_ask("PATH=~/bin:$PATH ls", "PATH");
  expect_ask("PATH=$HOME/.local/bin:$PATH ls", "PATH");
  expect_ask("PATH=/proc/self/cwd ls", "PATH");
  expect_ask("PATH=/dev/fd/3 ls 3<.", "PATH");
  expect_ask("LD_LIBRARY_PATH=/proc/self/cwd/lib ls", "LD_LIBRARY_PATH");
}

// Variables the first table did not have: each loads code or names a program for a tool the
// table's readers already cover (git, npm, python, make, compilers, cargo, go, zsh).
TEST_F(CodeEnvTest, ConfigurationAndToolVariablesAsk) {
  expect_ask("GIT_COMMON_DIR=./evil git log", "GIT_COMMON_DIR");
  expect_ask("XDG_CONFIG_HOME=./cfg git log", "XDG_CONFIG_HOME");
  expect_ask("HOME=. git log", "HOME");
  expect_ask("PYTHONUSERBASE=. python3 x.py", "PYTHONUSERBASE");
  expect_ask("PYTHONWARNINGS=ignore::evil.W python3 x.py", "PYTHONWARNINGS");
  expect_ask("npm_config_script_shell=./evil npm test", "npm_config_script_shell");
  expect_ask("NPM_CONFIG_NODE_OPTIONS='--require ./x.js' npm test", "NPM_CONFIG_NODE_OPTIONS");
  expect_ask("MAKEFLAGS='SHELL=./evil' make", "MAKEFLAGS");
  expect_ask("MAKEFILES=./evil.mk make", "MAKEFILES");
  expect_ask("CC=./evil make", "CC");
  expect_ask("CC='gcc -B./evil' make", "CC");
  expect_ask("RUSTC_WRAPPER=./evil cargo build", "RUSTC_WRAPPER");
  expect_ask("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=./evil cargo test", "CARGO_TARGET_");
  expect_ask("GOFLAGS=-toolexec=./evil go build", "GOFLAGS");
  expect_ask("ZDOTDIR=. zsh -c true", "ZDOTDIR");
  expect_ask("NODE_REPL_EXTERNAL_MODULE=./x.js node", "NODE_REPL_EXTERNAL_MODULE");
  expect_ask("BUNDLE_GEMFILE=./G ruby x.rb", "BUNDLE_GEMFILE");
}

// Values that run nothing new stay allowed, and a '$PATH' in quotes is a directory of that
// name, not the old value.
TEST_F(CodeEnvTest, HarmlessValuesStayAllowed) {
  expect_allow("GIT_PAGER=cat git log");
  expect_allow("PAGER= git log");
  expect_allow("GIT_EDITOR=true git log");
  expect_allow("PATH=/usr/bin:$PATH ls");
  expect_allow("export PATH=\"/usr/local/bin:${PATH}\"; ls");
  expect_allow("LD_LIBRARY_PATH=/usr/lib ls");
  expect_allow("IFS= read -r line < x; echo $line");
  expect_allow("for f in a b; do echo $f; done");
  expect_allow("CI=1 LANG=C make test");
  expect_allow("printf '%s\\n' PATH=./bin");
  expect_allow("export PATH+=:/usr/local/bin; ls");
  expect_allow("unset FOO; ls");
  expect_allow("read -rd '' X < x; ls");
  expect_allow("echo ${x:-a} $((1 + 2)) $((a == 1)) $((a <= 2)) ${#x}; ls");
  expect_allow("CC=clang make");
  expect_allow("CC=/usr/bin/gcc-12 make");
  expect_allow("MAKEFLAGS='-j4 --no-print-directory' make");
  expect_allow("PYTHONWARNINGS=ignore::DeprecationWarning python3 -m json.tool x");
  expect_allow("RUSTFLAGS=-Dwarnings cargo build");
  expect_ask("PATH='$PATH' ls", "PATH");
  expect_ask("PATH=/usr/bin:$OTHER ls", "PATH");
  expect_ask("PATH=:/usr/bin ls", "PATH");  // an empty entry is the working directory
  expect_ask("PATH=" + w_.root + "/tmp/bin:$PATH ls", "PATH");
  expect_ask("LD_LIBRARY_PATH=/usr/lib:$LD_LIBRARY_PATH ls", "LD_LIBRARY_PATH");  // may end in ':'
  expect_ask("GIT_PAGER=less git log", "GIT_PAGER");
}

// Every row of the table, by a prefix, by env and by export earlier in the line, with a value
// that runs a file in the workspace.
TEST_F(CodeEnvTest, EveryRowOfTheTableMakesTheUnitAsk) {
  int rows = 0;
  for (const CodeEnvRow& row : code_env_table()) {
    std::string name(row.name);
    if (auto star = name.find('*'); star != std::string::npos) name.replace(star, 1, "_X");
    SCOPED_TRACE(name + ": " + std::string(row.reason));
    expect_ask(name + "=./x ls", name);
    expect_ask("env " + name + "=./x ls", name);
    expect_ask("export " + name + "=./x; ls", name);
    ++rows;
  }
  EXPECT_GE(rows, 40);
}

// The reason quotes the value, shortened without cutting a character in two: it goes into
// the audit record, whose canonical JSON refuses invalid UTF-8.
TEST_F(CodeEnvTest, ALongValueIsShortenedOnACharacterBoundary) {
  std::string value;
  for (int i = 0; i < 40; ++i) value += "\xc3\xa9";       // é, two bytes each
  Decision d = decide("LD_PRELOAD=./x" + value + " ls");  // byte 64 falls inside an é
  EXPECT_EQ(d.deciding.id, "builtin.code-env");
  const std::string& r = d.reason;
  auto at = r.find("LD_PRELOAD=./x");
  ASSERT_NE(at, std::string::npos) << r;
  std::string shown = r.substr(at + 14, r.find(" (prefix)") - at - 14);
  EXPECT_EQ(shown, value.substr(0, 60) + "\xe2\x80\xa6");
}

TEST_F(CodeEnvTest, HeadlessTurnsTheAskIntoDenyAndExplainNamesTheRule) {
  w_.options.headless = true;
  auto headless = w_.load();
  ASSERT_TRUE(headless);
  Decision d =
      headless->decide_command("ls; NODE_OPTIONS='--require ./x.js' npm test", w_.workspace);
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_TRUE(d.headless_downgraded);
  EXPECT_EQ(d.deciding.id, "builtin.code-env");
  const std::string text =
      explain_text(d, *headless, "ls; NODE_OPTIONS='--require ./x.js' npm test");
  EXPECT_NE(text.find("deciding=builtin.code-env"), std::string::npos) << text;
  EXPECT_NE(text.find("NODE_OPTIONS"), std::string::npos) << text;
}

}  // namespace
}  // namespace moat::policy

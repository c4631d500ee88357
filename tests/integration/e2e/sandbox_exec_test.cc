// tests/integration/e2e/sandbox_exec_test.cc: `moat sandbox exec` as a drop-in for running a
// command (issue 15): its bytes, streams, stdin and exit statuses compared with the same
// command run directly; moatd's checks of the fds an exec frame carries; a terminal (tmux).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "base/shell_words.h"
#include "base/sys.h"
#include "e2e_support.h"
#include "sandbox/protocol.h"
#include "moatd_fixture.h"
#include "tmux_session.h"
#include "workspace_test.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Every command allowed but curl: the tests compare what runs, not what a policy allows.
std::string policy_dir() { return source_root() + "/tests/integration/e2e/sandbox_exec_policy"; }

struct Ran {
  std::string out, err;
  int status = -1;
};

class SandboxExecTest : public WorkspaceTest {
 protected:
  // `moat sandbox exec OPTS --`, as the start of a shell line.
  std::string moat(const std::string& opts = "", const std::string& system_dir = "") const {
    return shell_quote(moat_bin()) + " sandbox exec --system-policy-dir " +
           shell_quote(system_dir.empty() ? policy_dir() : system_dir) + " --audit-dir " +
           shell_quote(dir_.path() + "/audit") + " -C " + shell_quote(ws_) + " " + opts + " --";
  }
  // The same with the built-in default policy (no system layer).
  std::string moat_builtin(const std::string& opts = "") const {
    return moat(opts, dir_.path() + "/no-system-layer");
  }
  // Runs `line` with sh in the workspace; its stdout and stderr go to files, and its status
  // is what sh saw ($?: 128+N for a signal).
  Ran sh(const std::string& line) {
    const std::string o = dir_.path() + "/out", e = dir_.path() + "/err";
    const std::string script = "cd " + shell_quote(ws_) + " && { " + line + "; } > " +
                               shell_quote(o) + " 2> " + shell_quote(e) + "; echo $?";
    auto r = run({"/bin/sh", "-c", script}, env(), 300);
    Ran ran;
    ran.status = r.out.empty() ? -1 : std::atoi(r.out.c_str());
    ran.out = read_file(o);
    ran.err = read_file(e);
    return ran;
  }
  // `line` with "RUN" replaced by nothing, and by the moat prefix: the same bytes, the same
  // status.
  void expect_same(const std::string& line, const std::string& opts = "") {
    auto with = [&](const std::string& prefix) {
      std::string l = line;
      for (std::size_t at; (at = l.find("RUN ")) != std::string::npos;)
        l.replace(at, 4, prefix.empty() ? "" : prefix + " ");
      return sh(l);
    };
    const Ran direct = with(""), sandboxed = with(moat(opts));
    EXPECT_EQ(sandboxed.status, direct.status) << line << "\nstderr: " << sandboxed.err;
    EXPECT_EQ(sandboxed.out.size(), direct.out.size()) << line;
    EXPECT_TRUE(sandboxed.out == direct.out) << line << ": stdout differs";
    EXPECT_EQ(sandboxed.err, direct.err) << line;
  }
  void write_file(const std::string& name, const std::string& bytes) {
    std::ofstream(ws_ + "/" + name, std::ios::binary) << bytes;
  }
  std::string binary_bytes(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 7919 + i / 256) & 0xff);
    return s;
  }
};

TEST_F(SandboxExecTest, EmptyOutputStaysEmptyAndMoatSaysNothing) {
  const Ran r = sh(moat() + " true");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "") << "the bash tool's '(no output)' must not appear";
  EXPECT_EQ(r.err, "");
  expect_same("RUN true");
}

TEST_F(SandboxExecTest, HundredMegabytesOfOutputArriveWholeToAFileAndAPipe) {
  ASSERT_EQ(sh("head -c 100000000 /dev/urandom > big").status, 0);
  expect_same("RUN cat big");
  expect_same("RUN cat big | cksum");
  expect_same("RUN seq 1 20000");  // the 108,894 bytes that came out as 59,392
}

TEST_F(SandboxExecTest, BinaryOutputThatIsNotUtf8IsByteExact) {
  write_file("bin", binary_bytes(1 << 20));
  expect_same("RUN cat bin");
  expect_same("RUN head -c 4096 /dev/zero");
}

TEST_F(SandboxExecTest, InterleavedStdoutAndStderrGoToTheirOwnFiles) {
  expect_same(
      "RUN sh -c 'i=0; while [ $i -lt 500 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done'");
  const Ran r = sh(moat() + " sh -c 'echo to-out; echo to-err >&2'");
  EXPECT_EQ(r.out, "to-out\n");
  EXPECT_EQ(r.err, "to-err\n");
}

TEST_F(SandboxExecTest, StdinFromAPipeAndFromAFileReachTheCommand) {
  write_file("bin", binary_bytes(300000));
  expect_same("printf 'one\\ntwo\\0three' | RUN cat");
  expect_same("cat bin | RUN cksum");
  expect_same("RUN cat < bin");
  expect_same("RUN sh -c 'read first; echo \"[$first]\"; wc -c' < bin");
  const Ran r = sh("echo hi | " + moat() + " cat");
  EXPECT_EQ(r.out, "hi\n") << "stdin was /dev/null before";
}

TEST_F(SandboxExecTest, EveryExitCodeFrom0To255IsTheCommandsOwn) {
  const Ran r = sh("for i in $(seq 0 255); do " + moat() + " sh -c \"exit $i\"; echo $?; done");
  std::string want;
  for (int i = 0; i <= 255; ++i) want += std::to_string(i) + "\n";
  EXPECT_EQ(r.out, want);
  EXPECT_EQ(r.err, "");
}

TEST_F(SandboxExecTest, DeathBySignalNIs128PlusN) {
  // The direct run must die of each signal too: a shell keeps ignoring what was ignored when it
  // started (POSIX), and a test runner started as a background job of a script ignores SIGINT
  // and SIGQUIT. The sandboxed command starts from default dispositions whatever its caller
  // ignored (Session.NothingAPreviousCallChangedReachesTheNextOne), so both start from them.
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGALRM, SIGTERM}) ::signal(sig, SIG_DFL);
  for (int sig : {1, 2, 3, 6, 9, 13, 14, 15}) {
    SCOPED_TRACE("signal " + std::to_string(sig));
    expect_same("RUN sh -c 'kill -" + std::to_string(sig) + " $$'");
    EXPECT_EQ(sh(moat() + " sh -c 'kill -" + std::to_string(sig) + " $$'").status, 128 + sig);
  }
}

TEST_F(SandboxExecTest, APolicyRefusalIs126WithTheRuleOnStderrAndNothingOnStdout) {
  const Ran r = sh(moat() + " curl http://example.invalid/");
  EXPECT_EQ(r.status, 126);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("test.no-curl"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No downloads in this test."), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
}

TEST_F(SandboxExecTest, AMissingCommandIs127AsInAShell) {
  const Ran r = sh(moat() + " no-such-command-15");
  EXPECT_EQ(r.status, 127);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("command not found"), std::string::npos) << r.err;
  EXPECT_EQ(sh("no-such-command-15").status, 127) << "the shell's own status for it";
}

TEST_F(SandboxExecTest, ATimeoutIs124AsWithTimeout1) {
  const auto t0 = std::chrono::steady_clock::now();
  const Ran r = sh(moat("--timeout 1") + " sleep 30");
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(sh("timeout 1 sleep 30").status, 124) << "timeout(1)'s status for the same";
}

// Issue 27 item 7: moat says which limit ended the command: its own --timeout ...
TEST_F(SandboxExecTest, ATimeoutThatFiresIsNamedAsTimeout) {
  const Ran r = sh(moat("--timeout 1") + " sleep 30");
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_NE(r.err.find("timed out after 1s (--timeout)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("capped"), std::string::npos) << r.err;
}

// ... or the policy's resources.wall_time, named with the layer and file that set it, and a
// --timeout above that ceiling is said to be capped before the command runs.
TEST_F(SandboxExecTest, AWallTimeThatFiresIsNamedWithItsLayerAndCapsALongerTimeout) {
  fs::create_directories(dir_.path() + "/user");
  const std::string file = dir_.path() + "/user/10.toml";
  std::ofstream(file) << "schema = 1\n[resources]\nwall_time = 1\n";
  const std::string user = "--user-policy-dir " + shell_quote(dir_.path() + "/user") + " ";
  Ran r = sh(moat_builtin(user) + " sleep 30");
  EXPECT_EQ(r.status, 124) << r.err;
  const std::string named = "resources.wall_time = 1s (user layer, " + file + ")";
  EXPECT_NE(r.err.find("timed out at " + named), std::string::npos) << r.err;
  r = sh(moat_builtin(user + "--timeout 3600") + " sleep 30");
  EXPECT_EQ(r.status, 124) << r.err;
  EXPECT_NE(r.err.find("--timeout 3600s capped to 1s by " + named), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("timed out at " + named), std::string::npos) << r.err;
}

// The built-in default's ceiling caps --timeout too, and the note names that layer; a command
// that ends in time is not a timeout.
TEST_F(SandboxExecTest, ATimeoutAboveTheBuiltinWallTimeIsSaidToBeCapped) {
  const Ran r = sh(moat_builtin("--timeout 3600") + " true");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("--timeout 3600s capped to 10m by resources.wall_time = 10m (builtin layer"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("timed out"), std::string::npos) << r.err;
  EXPECT_EQ(sh(moat_builtin("--timeout 600") + " true").err, "") << "600 s is not above 10m";
}

TEST_F(SandboxExecTest, BadOptionsAre125WithOneLineOnStderr) {
  const Ran r = sh(moat("--timeout soon") + " true");
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--timeout"), std::string::npos) << r.err;
}

// --timeout -1 was refused with CLI::NonNegativeNumber's range, the largest double spelled out
// (309 digits); it now says what is accepted in a few words, as `moat run`'s numbers do.
TEST_F(SandboxExecTest, ABadTimeoutSaysWhatIsAcceptedInFewWords) {
  for (const std::string value : {"-1", "soon"}) {
    const Ran r = sh(moat("--timeout " + value) + " true");
    EXPECT_EQ(r.status, 125) << r.err;
    EXPECT_NE(r.err.find("--timeout: " + value + " is not a number, 0 or more"), std::string::npos)
        << r.err;
    EXPECT_LT(r.err.size(), 200u) << r.err;
  }
}

TEST_F(SandboxExecTest, ArgvIsExecdWithoutAShell) {
  // Through bash the words would have been re-split or expanded; as argv they arrive as given.
  expect_same("RUN printf '%s|' 'a b' '$HOME' '*' \"it's\"");
  const Ran r = sh(moat() + " env");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out.find("SHLVL="), std::string::npos) << "a bash ran first:\n" << r.out;
  EXPECT_EQ(("\n" + r.out).find("\n_="), std::string::npos) << "a bash ran first:\n" << r.out;
}

// --- options --------------------------------------------------------------------------------

// What the person typed runs anyway (issue 25); --permissive also lets what it starts past the
// built-in, user and project rules at exec time (here the person's own deny of tar, met by a
// script the command runs).
TEST_F(SandboxExecTest, PermissiveAllowsWhatTheDefaultPolicyRefusesAndKeepsThePathRules) {
  fs::create_directories(ws_ + "/.git/hooks");
  fs::create_directories(dir_.path() + "/user");
  std::ofstream(dir_.path() + "/user/10.toml")
      << "schema = 1\n[[command]]\nid = \"user.no-tar\"\ndecision = \"deny\"\nprogram = \"tar\"\n";
  write_file("pack.sh", "tar --version > /dev/null && echo packed\n");
  const std::string user = "--user-policy-dir " + shell_quote(dir_.path() + "/user") + " ";
  Ran r = sh(moat_builtin(user) + " sh ./pack.sh");
  EXPECT_NE(r.status, 0) << "the user layer denies tar at exec time: " << r.err;
  EXPECT_NE(r.err.find("user.no-tar"), std::string::npos) << r.err;
  r = sh(moat_builtin(user + "--permissive") + " sh ./pack.sh");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "packed\n");
  r = sh(moat_builtin("--permissive") + " sh -c 'echo run > .git/hooks/post-checkout'");
  EXPECT_NE(r.status, 0) << "git's hooks stay read-only";
  EXPECT_FALSE(fs::exists(ws_ + "/.git/hooks/post-checkout"));
  r = sh(moat("--permissive") + " curl http://example.invalid/");
  EXPECT_EQ(r.status, 126) << "the system layer's deny holds: " << r.err;
  EXPECT_NE(r.err.find("test.no-curl"), std::string::npos) << r.err;
  r = sh(moat("--permissive --connect " + shell_quote(dir_.path() + "/no.sock")) + " true");
  EXPECT_EQ(r.status, 125) << "a shared moatd's policy is its operator's";
}

TEST_F(SandboxExecTest, NoDefaultPolicyLeavesOutTheBuiltinLayerAndPolicyFileNarrows) {
  fs::create_directories(dir_.path() + "/user");
  std::ofstream(dir_.path() + "/user/10.toml")
      << "schema = 1\ndefaults = { tool = \"allow\", command = \"deny\" }\n"
         "[[command]]\nid = \"user.printf\"\ndecision = \"allow\"\nprogram = \"printf\"\n";
  const std::string base = moat_builtin();
  const std::string user = "--user-policy-dir " + shell_quote(dir_.path() + "/user") + " ";
  EXPECT_EQ(sh(base + " true").status, 0) << "the built-in default allows true";
  const std::string without = moat_builtin(user + "--no-default-policy");
  Ran r = sh(without + " true");
  EXPECT_EQ(r.status, 0) << "the person's own line is theirs whatever their layer says: " << r.err;
  r = sh(without + " printf 'ok\\n'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
  // What the command starts: the built-in default asks about curl (run, flagged headless, said
  // with -v); without that layer nothing asks about it.
  write_file("fetch.sh", "curl --version > /dev/null && echo fetched\n");
  r = sh(moat_builtin("-v") + " sh ./fetch.sh");
  EXPECT_EQ(r.out, "fetched\n") << r.err;
  EXPECT_NE(r.err.find("default.network-tools"), std::string::npos) << r.err;
  r = sh(moat_builtin(user + "--no-default-policy -v") + " sh ./fetch.sh");
  EXPECT_EQ(r.out, "fetched\n") << r.err;
  EXPECT_EQ(r.err.find("default.network-tools"), std::string::npos) << r.err;
  std::ofstream(dir_.path() + "/narrow.toml")
      << "schema = 1\n[[command]]\nid = \"cli.no-true\"\ndecision = \"deny\"\n"
         "program = \"true\"\nreason = \"Not today.\"\n";
  r = sh(moat("--policy " + shell_quote(dir_.path() + "/narrow.toml")) + " true");
  EXPECT_EQ(r.status, 126);
  EXPECT_NE(r.err.find("cli.no-true"), std::string::npos) << r.err;
}

TEST_F(SandboxExecTest, SetenvAndEnvPassExactlyTheVariablesNamedAndTheyAreJudged) {
  const Ran r = sh("BAR=from-caller SECRET=canary " + moat("--setenv FOO 'a b' --env BAR") +
                   " sh -c 'echo \"$FOO|$BAR|${SECRET:-unset}\"'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "a b|from-caller|unset\n");
  // A code-loading variable the person set is theirs, like the command (issue 25): judged as
  // part of the typed line, where only the organisation's and --policy rules bind.
  const Ran preload = sh(moat_builtin("--setenv LD_PRELOAD /tmp/x.so") + " true");
  EXPECT_EQ(preload.status, 0) << preload.err;
  std::ofstream(dir_.path() + "/no-preload.toml")
      << "schema = 1\n[[command]]\nid = \"cli.no-true\"\ndecision = \"deny\"\n"
         "program = \"true\"\n";
  const Ran narrowed = sh(moat_builtin("--policy " + shell_quote(dir_.path() + "/no-preload.toml") +
                                       " --setenv LD_PRELOAD /tmp/x.so") +
                          " true");
  EXPECT_EQ(narrowed.status, 126) << narrowed.err;
}

TEST_F(SandboxExecTest, CwdStartsInsideTheWorkspaceAndNowhereElse) {
  fs::create_directories(ws_ + "/sub/dir");
  Ran r = sh(moat("--cwd " + shell_quote(ws_ + "/sub/dir")) + " pwd");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, ws_ + "/sub/dir\n");
  r = sh(moat("--cwd /tmp") + " pwd");
  EXPECT_EQ(r.status, 125);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("not inside the workspace"), std::string::npos) << r.err;
}

// Issue 27 item 5: a relative --cwd is inside the workspace, as the help says, whatever the
// caller's directory; the line is judged in that directory, where the command runs (a relative
// path in it is the directory's file, not the workspace root's, which has one of that name).
TEST_F(SandboxExecTest, ARelativeCwdIsInTheWorkspaceAndTheLineIsJudgedThere) {
  fs::create_directories(ws_ + "/sub");
  fs::create_directories(dir_.path() + "/elsewhere");
  write_file("sub/secret.txt", "sub's\n");
  write_file("secret.txt", "root's\n");
  Ran r = sh("cd " + shell_quote(dir_.path() + "/elsewhere") + " && " + moat("--cwd sub") + " pwd");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, ws_ + "/sub\n");
  const std::string narrow = dir_.path() + "/no-sub-secret.toml";
  std::ofstream(narrow) << "schema = 1\n[[path]]\nid = \"cli.no-sub-secret\"\ndecision = \"deny\"\n"
                           "access = [\"read\"]\npaths = [\"**/sub/secret.txt\"]\n";
  // An input redirection is a read the path rules judge (docs/policy.md).
  r = sh(moat("--policy " + shell_quote(narrow) + " --cwd sub") + " sh -c 'cat < secret.txt'");
  EXPECT_EQ(r.status, 126) << "judged as sub/secret.txt, which the rule denies: " << r.err;
  EXPECT_NE(r.err.find("cli.no-sub-secret"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
  r = sh(moat("--policy " + shell_quote(narrow)) + " sh -c 'cat < secret.txt'");
  EXPECT_EQ(r.status, 0) << "the root's secret.txt is not the rule's: " << r.err;
  EXPECT_EQ(r.out, "root's\n");
  r = sh(moat("--cwd sub/nope") + " true");
  EXPECT_EQ(r.status, 125);
  EXPECT_NE(r.err.find("--cwd 'sub/nope'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("taken from the workspace"), std::string::npos) << r.err;
}

// Issue 27 item 6: an option that did not get its words is a usage error naming it (bwrap's
// too), never a command run without what was asked for.
TEST_F(SandboxExecTest, AnOptionMissingAWordIsAUsageErrorNamingIt) {
  const std::string src = dir_.path() + "/src";
  fs::create_directories(src);
  struct Case {
    std::string opts, named;
  };
  const std::vector<Case> cases = {
      {"--setenv FOO=bar", "--setenv 'FOO=bar'"},
      {"--setenv FOO", "--setenv 'FOO'"},
      {"--setenv A --setenv B C", "--setenv 'A'"},
      {"--setenv 1X y", "--setenv '1X'"},
      {"--ro-bind " + shell_quote(src), "--ro-bind '" + src + "'"},
      {"--bind " + shell_quote(src), "--bind '" + src + "'"},
      {"--env", "--env '--'"},  // moat() ends with "--", which CLI11 gives --env as its NAME
  };
  for (const Case& c : cases) {
    const Ran r = sh(moat(c.opts) + " sh -c 'echo ran'");
    EXPECT_EQ(r.status, 125) << c.opts << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.opts;
    EXPECT_NE(r.err.find(c.named), std::string::npos) << c.opts << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  const Ran r = sh(moat("--setenv A 'x y' --setenv B ''") + " sh -c 'echo \"[$A][${B-unset}]\"'");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[x y][]\n");
}

// Issue 27 item 12: a connected unix stream socket as stdio (systemd's StandardOutput=journal,
// a socketpair from Python) passes through as with bwrap: the bytes arrive both ways.
TEST_F(SandboxExecTest, ConnectedUnixStreamSocketsAsStdioPassThrough) {
  int in[2], out[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out), 0);
  ASSERT_TRUE(sys::write_all(in[0], "through a socket\n", 17));
  shutdown(in[0], SHUT_WR);
  const std::string line = moat() + " sh -c 'cat; echo to-stderr >&2'";
  const pid_t pid = start_with_stdio({"/bin/sh", "-c", line}, env(), in[1], out[1], out[1]);
  close(in[1]);
  close(out[1]);
  auto got = sys::read_to_end(out[0], 1 << 20);
  EXPECT_EQ(wait_exit(pid, 120), 0) << (got ? *got : "");
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, "through a socket\nto-stderr\n");
  close(in[0]);
  close(out[0]);
}

// Issue 27 item 12: a closed stdin (or stdout) is neither refused as "a socket" (moat's own
// connection to moatd took its number) nor handed over closed: the command gets /dev/null.
TEST_F(SandboxExecTest, AClosedStdinOrStdoutIsDevNullNotMoatsOwnSocket) {
  Ran r = sh(moat() + " sh -c 'readlink /proc/self/fd/0; cat; echo rc=$?' <&-");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "/dev/null\nrc=0\n");
  EXPECT_EQ(r.err, "");
  // A write to it succeeds (to a closed fd, echo would fail with EBADF) and shows nowhere.
  r = sh(moat("-v") + " sh -c 'echo hidden; echo rc=$? >&2' >&-");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("\nrc=0\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("hidden"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stdout closed: the command gets /dev/null"), std::string::npos) << r.err;
}

// Issue 27 item 11: a program refused inside the command is named on stderr with the rule, its
// file:line and what would allow it (the command's own stderr says only "Operation not
// permitted"); one the exec watch itself refuses is said to be the watch's, not a rule's.
TEST_F(SandboxExecTest, AProgramRefusedInsideIsNamedWithItsRuleFileLineAndWhatAllowsIt) {
  fs::create_directories(dir_.path() + "/user");
  const std::string user = dir_.path() + "/user/10.toml";
  std::ofstream(user) << "schema = 1\n[[command]]\nid = \"user.no-yes\"\ndecision = \"deny\"\n"
                         "program = \"yes\"\nreason = \"No yes here.\"\n";
  Ran r = sh(moat_builtin("--user-policy-dir " + shell_quote(dir_.path() + "/user")) +
             " sh -c 'yes; echo rc=$?'");
  EXPECT_EQ(r.out, "rc=126\n") << r.err;
  for (const std::string& said :
       {std::string("Operation not permitted"), std::string("running '/usr/bin/yes'"),
        std::string("rule user.no-yes (user, ") + user + ":2)", std::string("No yes here."),
        std::string("To allow it: change or remove rule user.no-yes in your user layer")})
    EXPECT_NE(r.err.find(said), std::string::npos) << said << "\n" << r.err;
  r = sh(moat() + " sh -c 'set -- $(seq 70000); /bin/true \"$@\"; echo rc=$?'");
  EXPECT_EQ(r.out, "rc=126\n") << r.err;
  EXPECT_NE(r.err.find("by moat's exec watch, whatever the policy says"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("65536 words"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("rule exec-watch"), std::string::npos) << "no such rule: " << r.err;
}

// moat sends the exec frame behind its hello without waiting for the welcome (issue 30 point
// 4): a refused hello is what it reports, alone, and the command never runs.
TEST_F(SandboxExecTest, ARefusedHelloIsWhatIsReportedAndTheCommandNeverRuns) {
  const Ran r = sh(moat("--network") + " sh -c 'echo ran > marker; echo ran'");
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err.rfind("moat sandbox exec: policy: the network was asked for", 0), 0) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  EXPECT_FALSE(fs::exists(ws_ + "/marker"));
}

TEST_F(SandboxExecTest, HelpDocumentsEveryOptionWithAnExample) {
  auto r = run({moat_bin(), "sandbox", "exec", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt :
       {"--cwd", "--timeout", "--setenv", "--env", "--permissive", "--no-default-policy",
        "--policy", "e.g. --timeout 30", "e.g. --setenv CI 1", "e.g. --env TERM", "e.g. --cwd src",
        "e.g. --network", "e.g. --ro-bind ~/datasets /data", "e.g. --bind /tmp/cache /tmp/cache",
        "124", "125", "126", "127"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt << "\n" << r.out;
}

// --- moatd's side: what an exec frame may carry --------------------------------------------

class SandboxExecFdsTest : public MoatdFixture {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    MoatdFixture::SetUp();
  }
  void hello(RawClient& c) {
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    json w = c.read_frame();
    ASSERT_EQ(w.value("type", ""), "welcome") << w.dump() << moatd_log();
  }
  // Sends `frame` with `fds` on it (in one message: a connection moatd closes must not hold
  // unread bytes, or the close is a reset instead of an end of file).
  void send_with_fds(RawClient& c, const json& frame, const std::vector<int>& fds) {
    send_frames_with_fds(c, {frame}, fds);
  }
  // `frames` one after another in ONE sendmsg, with `fds` on it: what moatd reads when a
  // client's hello and the exec it pipelines behind it arrive in one read.
  void send_frames_with_fds(RawClient& c, const std::vector<json>& frames,
                            const std::vector<int>& fds) {
    std::string bytes;
    for (const json& f : frames) bytes += sandbox::encode_frame(f);
    ASSERT_TRUE(sys::send_with_fds(c.fd(), bytes.data(), bytes.size(), fds.data(), fds.size()));
  }
  json hello_frame(const std::string& workspace) {
    return {{"type", "hello"}, {"version", 1}, {"workspace", workspace}, {"headless", true}};
  }
  json exec_frame(const std::vector<std::string>& argv) {
    return {{"type", "exec"}, {"id", "x1"}, {"argv", argv}};
  }
  // True when the pipe's read end `fd` reaches end of file within 5 s: every write end (moatd's
  // copies included) is closed.
  static bool sees_eof(int fd) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1) return false;
    char b;
    return read(fd, &b, 1) == 0;
  }
  std::size_t moatd_fd_count() {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid_) + "/fd")) {
      (void)e;
      ++n;
    }
    return n;
  }
};

TEST_F(SandboxExecFdsTest, AnExecFrameWithoutItsFdsIsAnsweredWithAnErrorResult) {
  RawClient c(socket_);
  hello(c);
  c.send_json(exec_frame({"true"}));
  json r = c.read_frame();
  EXPECT_EQ(r.value("type", ""), "result") << r.dump();
  EXPECT_TRUE(r.value("isError", false));
  EXPECT_EQ(r["details"].value("failed", ""), "sandbox");
  EXPECT_NE(r.dump().find("3 file descriptors"), std::string::npos) << r.dump();
}

TEST_F(SandboxExecFdsTest, FdsOnTheHelloOrMoreThanThreeCloseTheConnection) {
  auto pipe = sys::make_pipe();
  ASSERT_TRUE(pipe);
  const int p = pipe->first.get();
  {
    RawClient c(socket_);
    send_with_fds(c, {{"type", "hello"}, {"version", 1}, {"workspace", ws_}}, {p, p, p});
    json e = expect_error_then_close(c);
    EXPECT_NE(e.value("message", "").find("came with a 'hello' frame"), std::string::npos)
        << e.dump();
  }
  {
    RawClient c(socket_);
    hello(c);
    send_with_fds(c, exec_frame({"true"}), {p, p, p, p});
    json e = expect_error_then_close(c);
    EXPECT_NE(e.value("message", "").find("4 file descriptors"), std::string::npos) << e.dump();
  }
  EXPECT_TRUE(moatd_alive());
}

// Issue 30 point 4: moat sends its exec frame right behind its hello, not waiting for the
// welcome, so one read can bring the hello's bytes, the exec frame and its fds together.
TEST_F(SandboxExecFdsTest, AnExecSentWithItsHelloInOneMessageRunsWithItsFds) {
  RawClient c(socket_);
  auto in = sys::make_pipe();
  auto out = sys::make_pipe();
  ASSERT_TRUE(in && out);
  ASSERT_TRUE(sys::write_all(in->second.get(), "pipelined\n", 10));
  in->second.reset();
  send_frames_with_fds(c, {hello_frame(ws_), exec_frame({"cat"})},
                       {in->first.get(), out->second.get(), out->second.get()});
  out->second.reset();
  json w = c.read_frame();
  ASSERT_EQ(w.value("type", ""), "welcome") << w.dump() << moatd_log();
  json r = c.read_result();
  EXPECT_FALSE(r.value("isError", true)) << r.dump();
  EXPECT_EQ(r["details"].value("exitCode", -1), 0) << r.dump();
  auto got = sys::read_to_end(out->first.get(), 1 << 20);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, "pipelined\n");
}

// The hello's refusal is the answer (not an error about the fds or the exec), and the fds that
// came behind it are closed: the caller's pipe sees end of file.
TEST_F(SandboxExecFdsTest, ARefusedHelloClosesTheFdsOfTheExecBehindIt) {
  RawClient c(socket_);
  auto out = sys::make_pipe();
  ASSERT_TRUE(out);
  const int w = out->second.get();
  send_frames_with_fds(c, {hello_frame(ws_ + "/missing"), exec_frame({"true"})}, {w, w, w});
  out->second.reset();
  json e = expect_error_then_close(c);
  EXPECT_EQ(e.value("code", ""), "workspace") << e.dump();
  EXPECT_EQ(e.value("message", "").find("file descriptors"), std::string::npos) << e.dump();
  EXPECT_TRUE(sees_eof(out->first.get())) << "moatd still holds the exec's stdout";
  EXPECT_TRUE(moatd_alive());
}

// A client that has not said a whole hello cannot park fds in moatd: fds in a read that does not
// complete its first frame close the connection at once (they used to wait for the hello's 10 s
// deadline, so one local user's 64 unauthenticated connections made moatd hold 192 of its fds).
TEST_F(SandboxExecFdsTest, FdsBeforeAWholeHelloCloseTheConnectionAtOnce) {
  RawClient c(socket_);
  auto out = sys::make_pipe();
  ASSERT_TRUE(out);
  const int w = out->second.get();
  const std::string hello = sandbox::encode_frame(hello_frame(ws_));
  ASSERT_TRUE(sys::send_with_fds(c.fd(), hello.data(), 10, std::vector<int>{w, w, w}.data(), 3));
  out->second.reset();
  const auto sent = std::chrono::steady_clock::now();
  EXPECT_TRUE(sees_eof(out->first.get())) << "moatd holds an unauthenticated client's fds";
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(2));
  json e = expect_error_then_close(c);
  EXPECT_NE(e.value("message", "").find("before a whole 'hello'"), std::string::npos) << e.dump();
  EXPECT_TRUE(moatd_alive());
}

// fds belong to the frame they came with: a call frame carrying them is refused, naming it,
// whether it came in one message with the hello or after the welcome (before, the fds waited
// for the next exec frame, which then ran on fds another frame had brought).
TEST_F(SandboxExecFdsTest, ANonExecFrameWithFdsIsRefusedNamingIt) {
  auto pipe = sys::make_pipe();
  ASSERT_TRUE(pipe);
  const int p = pipe->second.get();
  const json call = {{"type", "call"},
                     {"id", "c1"},
                     {"tool", "bash"},
                     {"arguments", {{"command", "true"}}}};
  {
    RawClient c(socket_);
    send_frames_with_fds(c, {hello_frame(ws_), call}, {p, p, p});
    json w = c.read_frame();
    ASSERT_EQ(w.value("type", ""), "welcome") << w.dump() << moatd_log();
    json e = expect_error_then_close(c);
    EXPECT_NE(e.value("message", "").find("came with a 'call' frame"), std::string::npos)
        << e.dump();
  }
  {
    RawClient c(socket_);
    hello(c);
    send_with_fds(c, call, {p, p, p});
    json e = expect_error_then_close(c);
    EXPECT_NE(e.value("message", "").find("came with a 'call' frame"), std::string::npos)
        << e.dump();
  }
  EXPECT_TRUE(moatd_alive());
}

// A socket that could reach past the sandbox's network namespace: a datagram one (sendto()
// names any address; an abstract one is looked up in the host's namespace, where the socket was
// made), a listening one (accept() takes the host's connections), an AF_INET one.
TEST_F(SandboxExecFdsTest, ADatagramListeningOrInetSocketAsStdoutIsRefusedAndMoatdKeepsNoFds) {
  RawClient c(socket_);
  hello(c);
  const std::size_t before = moatd_fd_count();
  auto pipe = sys::make_pipe();
  ASSERT_TRUE(pipe);
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair), 0);
  auto listening = sys::make_socket(AF_UNIX, SOCK_STREAM);
  auto inet = sys::make_socket(AF_INET, SOCK_STREAM);
  ASSERT_TRUE(listening && inet);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = dir_.path() + "/listening.sock";
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(bind(listening->get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listening->get(), 1), 0);
  const std::pair<int, const char*> cases[] = {{pair[0], "stdout is a unix datagram socket"},
                                               {listening->get(), "stdout is a listening unix"},
                                               {inet->get(), "stdout is a socket of family 2"}};
  for (const auto& [fd, said] : cases) {
    send_with_fds(c, exec_frame({"true"}), {pipe->first.get(), fd, pipe->second.get()});
    json r = c.read_frame();
    EXPECT_TRUE(r.value("isError", false)) << r.dump();
    EXPECT_NE(r.dump().find(said), std::string::npos) << r.dump();
  }
  EXPECT_TRUE(eventually([&] { return moatd_fd_count() <= before; }, std::chrono::seconds(5)))
      << "moatd still holds " << moatd_fd_count() - before << " of the client's fds";
  close(pair[0]);
  close(pair[1]);
}

TEST_F(SandboxExecFdsTest, TheCommandWritesToThePassedFdsAndReadsItsStdin) {
  RawClient c(socket_);
  hello(c);
  auto in = sys::make_pipe();
  auto out = sys::make_pipe();
  ASSERT_TRUE(in && out);
  ASSERT_TRUE(sys::write_all(in->second.get(), "through\n", 8));
  in->second.reset();
  send_with_fds(c, exec_frame({"cat"}), {in->first.get(), out->second.get(), out->second.get()});
  out->second.reset();
  json r = c.read_frame();
  EXPECT_FALSE(r.value("isError", true)) << r.dump();
  EXPECT_EQ(r["details"].value("exitCode", -1), 0) << r.dump();
  auto got = sys::read_to_end(out->first.get(), 1 << 20);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, "through\n") << "EOF came once moatd and the sandbox let go of the pipe";
}

// --- a terminal ----------------------------------------------------------------------------

TEST_F(SandboxExecTest, Python3AtATerminalAnswersAndRunsItsOwnCtrlCHandler) {
  if (!Tmux::installed())
    GTEST_SKIP() << "tmux is not installed (it stands in for a person at a terminal)";
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 for the sandbox";
  Tmux t("moat-sbx-" + std::to_string(getpid()));
  std::string envs;
  for (const std::string& e : env()) envs += shell_quote(e) + " ";
  const std::string line = "env " + envs + moat() + " python3 -q; echo EXIT=$?; sleep 60";
  ASSERT_EQ(t.tmux("new-session -d -s t -x 100 -y 30 " + shell_quote(line)), 0);
  ASSERT_TRUE(t.shows(">>>")) << t.pane();
  t.keys("'6*7' Enter");
  EXPECT_TRUE(t.shows("\n42\n")) << t.pane();
  t.keys("'import time' Enter");
  t.keys("'try:' Enter '  time.sleep(60)' Enter 'except KeyboardInterrupt:' Enter");
  t.keys("'  print(\"handler\" + \"-ran\")' Enter Enter");
  ASSERT_TRUE(t.shows("...")) << t.pane();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // into time.sleep
  t.keys("C-c");
  EXPECT_TRUE(t.shows("handler-ran")) << "the program's own SIGINT handler ran:\n" << t.pane();
  t.keys("'exit()' Enter");
  EXPECT_TRUE(t.shows("EXIT=0")) << t.pane();
}

}  // namespace
}  // namespace moat::e2e

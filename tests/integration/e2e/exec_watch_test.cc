// tests/integration/e2e/exec_watch_test.cc: every program a call starts is judged and
// recorded at exec time (issue 14, items 1-3 and 5), through the real moatd: what no static
// parse of the command line can see (an interpreter's os.system, a symlinked binary, a
// script's children) is refused or recorded, with the exec tree, exit codes and the rule.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include "e2e_support.h"
#include "moatd_fixture.h"
#include "tests/unit/sessions/audit_page.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;


std::string base_of(const std::string& path) { return fs::path(path).filename().string(); }

void expect_each_in(const std::string& text, std::initializer_list<const char*> parts) {
  for (const char* part : parts)
    EXPECT_NE(text.find(part), std::string::npos) << part << " in " << text;
}

class ExecWatchTest : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    make_workspace();
    fs::create_directories(dir_.path() + "/no-policy");
    start_moatd(moatd_flags());
  }
  // The system layer (it replaces the built-in default) is a root-owned folder of the
  // source tree, so the uid 65534 pass can use it too.
  std::vector<std::string> moatd_flags() const {
    return {"--audit-dir",         dir_.path() + "/audit",
            "--system-policy-dir", source_root() + "/tests/integration/e2e/exec_watch_policy",
            "--user-policy-dir",   dir_.path() + "/no-policy"};
  }
  json hello(RawClient& c) {
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    return c.read_frame();
  }
  json call(RawClient& c, const std::string& id, const std::string& command, int timeout_ms = 300000) {
    c.send_json(
        {{"type", "call"}, {"id", id}, {"tool", "bash"}, {"arguments", {{"command", command}}}});
    return c.read_result(timeout_ms);
  }
  static std::string text_of(const json& result) {
    std::string out;
    if (result.contains("content"))
      for (const json& b : result["content"]) out += b.value("text", "");
    return out;
  }
  // One call in a fresh session; returns the tool result and fills log_ with the audit path.
  json session_running(const std::string& command, int timeout_ms = 300000) {
    RawClient c(socket_);
    json welcome = hello(c);
    EXPECT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
    log_ = welcome.value("audit", "");
    json r = call(c, "c1", command, timeout_ms);
    c.send_json({{"type", "bye"}});
    c.read_frame();
    return r;
  }
  // exec_probe's 200 rounds of `mode` (swapscript, swapself): its line of counts.
  std::string race_swapping(const std::string& mode) {
    const std::string probe =
        env_or("MOAT_BUILD_ROOT", "build") + "/tests/integration/e2e/exec_probe";
    EXPECT_TRUE(fs::exists(probe)) << probe;
    fs::copy_file(probe, ws_ + "/probe");
    const std::string text = text_of(session_running("./probe 200 " + mode));
    std::cout << "[ " << mode << " ] " << text.substr(0, text.find('\n')) << "\n";
    return text;
  }
  // The exec records of the file named `base`.
  std::vector<json> execs_of(const std::string& base) {
    std::vector<json> out;
    for (json& e : of_type("exec"))
      if (base_of(e.value("exe", "")) == base) out.push_back(std::move(e));
    return out;
  }
  std::vector<json> of_type(const std::string& type) {
    std::vector<json> out;
    for (json& r : records_of(log_))
      if (r.value("type", "") == type) out.push_back(std::move(r));
    return out;
  }

  std::string log_;
};

// The done-when of issue 14: a curl that only python's os.system starts is refused at its
// exec, and the tree shows bash -> python3 -> sh -> curl with the rule.
TEST_F(ExecWatchTest, ACurlStartedByAnInterpreterIsRefusedAtItsExec) {
  json r = session_running(
      "bash -c 'python3 -c \"import os; print(os.system(\\\"curl x.example\\\"))\"'");
  const std::string text = text_of(r);
  EXPECT_NE(text.find("test.no-curl"), std::string::npos) << r.dump();
  EXPECT_NE(text.find("/usr/bin/curl"), std::string::npos) << r.dump();
  std::map<std::string, json> by_id;
  const json* curl = nullptr;
  std::vector<json> execs = of_type("exec");
  for (const json& e : execs) by_id[e.value("exec_id", "")] = e;
  for (const json& e : execs)
    if (base_of(e.value("exe", "")) == "curl") curl = &by_id[e.value("exec_id", "")];
  ASSERT_NE(curl, nullptr) << read_file(log_);
  EXPECT_EQ(curl->value("result", ""), "deny") << curl->dump();
  EXPECT_EQ((*curl)["rule"].value("id", ""), "test.no-curl") << curl->dump();
  std::vector<std::string> chain;
  for (const json* e = curl; e != nullptr;) {
    chain.insert(chain.begin(), base_of(e->value("exe", "")));
    const json& parent = (*e)["parent_exec"];
    e = parent.is_string() && by_id.count(parent.get<std::string>())
            ? &by_id[parent.get<std::string>()]
            : nullptr;
  }
  std::string joined;
  for (const auto& c : chain) joined += c + " ";
  // dash is /bin/sh here; python3 resolves to python3.11.
  EXPECT_EQ(chain.front(), "bash") << joined;
  EXPECT_TRUE(std::any_of(chain.begin(), chain.end(),
                          [](const std::string& s) { return s.rfind("python3", 0) == 0; }))
      << joined;
  EXPECT_TRUE(std::any_of(chain.begin(), chain.end(),
                          [](const std::string& s) { return s == "dash" || s == "sh"; }))
      << joined;
  EXPECT_EQ(chain.back(), "curl") << joined;
  e2e::Run v = run({moat_bin(), "audit", "verify", log_});
  EXPECT_EQ(v.exit_code, 0) << v.out;
}

// A script's programs each get an exec record before they run and an exec.end with their
// exit code; the call's own record counts them.
TEST_F(ExecWatchTest, EveryProgramAScriptStartsIsRecordedWithItsExitCode) {
  json r = session_running("/bin/true; /bin/false; /bin/sh -c 'exit 7'; echo done");
  EXPECT_FALSE(r.value("isError", true)) << r.dump();
  std::map<std::string, json> ends;
  for (json& e : of_type("exec.end")) ends[e.value("exec_id", "")] = e;
  std::map<std::string, int> code_of;
  for (const json& e : of_type("exec")) {
    ASSERT_TRUE(ends.count(e.value("exec_id", ""))) << "no exec.end for " << e.dump();
    const json& exit = ends[e.value("exec_id", "")]["exit"];
    if (exit["code"].is_number()) code_of[base_of(e.value("exe", ""))] = exit["code"];
    EXPECT_EQ(e.value("result", ""), "allow") << e.dump();
  }
  EXPECT_EQ(code_of["true"], 0) << read_file(log_);
  EXPECT_EQ(code_of["false"], 1) << read_file(log_);
  EXPECT_EQ(code_of["dash"], 7) << read_file(log_);
  std::vector<json> calls = of_type("call");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].value("execs", 0), 4) << calls[0].dump();  // bash, true, false, sh
  EXPECT_EQ(calls[0].value("command", ""), "/bin/true; /bin/false; /bin/sh -c 'exit 7'; echo done");
  EXPECT_EQ(calls[0]["exit_code"], 0) << calls[0].dump();
}

// A symlink by another name is the file it names: the deny on curl holds (bypass class 10).
TEST_F(ExecWatchTest, ASymlinkToADeniedProgramIsRefusedByItsRealPath) {
  json r = session_running("ln -s /usr/bin/curl ./fetch && ./fetch --version; echo rc=$?");
  const std::string text = text_of(r);
  EXPECT_NE(text.find("rc=126"), std::string::npos) << text;  // bash: EPERM at exec
  EXPECT_NE(text.find("test.no-curl"), std::string::npos) << text;
}

// A multi-threaded caller can rewrite the path between moat's read and the kernel's. moat
// reads twice and refuses a difference, and checks /proc/<pid>/exe once the program runs:
// a `yes` that got through the window is killed, never left running.
TEST_F(ExecWatchTest, AThreadRewritingThePathCannotKeepADeniedProgramRunning) {
  const std::string flipper = env_or("MOAT_BUILD_ROOT", "build") + "/tests/integration/e2e/exec_probe";
  ASSERT_TRUE(fs::exists(flipper)) << flipper;
  fs::copy_file(flipper, ws_ + "/flipper");
  json r = session_running("./flipper 200 threads");
  const std::string text = text_of(r);
  std::cout << "[ exec race ] " << text.substr(0, text.find('\n')) << "\n";
  EXPECT_NE(text.find("rounds=200"), std::string::npos) << r.dump();
  EXPECT_NE(text.find("escaped=0"), std::string::npos) << text;
  // Every exec of yes that was let run was killed; none is recorded as allowed and ended
  // on its own.
  std::map<std::string, json> ends;
  for (json& e : of_type("exec.end")) ends[e.value("exec_id", "")] = e;
  int refused = 0, shared = 0;
  for (const json& e : of_type("exec")) {
    if (e.value("memory", "") != "exclusive") ++shared;
    if (base_of(e.value("exe", "")) != "yes") continue;
    if (e.value("result", "") == "deny") {
      ++refused;
      continue;
    }
    ADD_FAILURE() << "yes recorded as allowed: " << e.dump();
  }
  EXPECT_GT(shared, 0) << "no exec was seen as made from a shared memory";
  std::cout << "[ exec race ] yes refused by policy: " << refused << ", shared-memory execs "
            << shared << "\n";
}

// A caller with a second thread that touches nothing: its execs are checked as made from a
// shared memory (read twice, then /proc/<pid>/exe and cmdline compared once the program
// runs), and none is killed. The comparison used to read cmdline while the kernel was still
// between switching the memory and writing the new argv into it (an empty cmdline), and
// killed a program whose argv nobody had touched: the demo's `sh run_tests.sh` died so in
// about one run in two as uid 65534.
TEST_F(ExecWatchTest, AThreadedCallerWhoseArgvNobodyChangesIsNeverKilled) {
  const std::string probe = env_or("MOAT_BUILD_ROOT", "build") + "/tests/integration/e2e/exec_probe";
  ASSERT_TRUE(fs::exists(probe)) << probe;
  fs::copy_file(probe, ws_ + "/probe");
  json r = session_running("./probe 300 idle");
  EXPECT_NE(text_of(r).find("rounds=300 true=300 killed=0"), std::string::npos) << r.dump();
  int shared = 0;
  for (const json& e : of_type("exec"))
    if (base_of(e.value("exe", "")) == "true" && e.value("memory", "") == "shared") ++shared;
  EXPECT_EQ(shared, 300);
  for (const json& e : of_type("exec.end"))
    EXPECT_EQ(e.value("note", "").find("killed"), std::string::npos) << e.dump();
}

// What the kernel runs besides the file named is judged like the file: a #! script's
// interpreter and the program the dynamic loader is asked to load. Before, the script and
// the loader were judged and `yes`, which the policy denies, ran (timeout's 124).
TEST_F(ExecWatchTest, AnInterpreterOrAProgramTheLoaderLoadsIsJudgedLikeAnyExec) {
  std::ofstream(ws_ + "/script") << "#!/usr/bin/yes\n";
  fs::permissions(ws_ + "/script", fs::perms::owner_all | fs::perms::group_read |
                                       fs::perms::others_read | fs::perms::others_exec);
  std::string loader;
  for (const char* l : {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"})
    if (fs::exists(l)) loader = l;
  ASSERT_FALSE(loader.empty()) << "no dynamic loader found";
  json r = session_running("timeout 3 ./script >/dev/null; echo script=$?; timeout 3 " + loader +
                           " /usr/bin/yes >/dev/null; echo loader=$?");
  const std::string text = text_of(r);
  EXPECT_NE(text.find("script=126"), std::string::npos) << text;
  EXPECT_NE(text.find("loader=126"), std::string::npos) << text;
  int refused = 0;
  for (const json& e : of_type("exec")) {
    if (!e.contains("runs")) continue;
    EXPECT_EQ(e.value("result", ""), "deny") << e.dump();
    EXPECT_NE(e.value("reason", "").find("yes"), std::string::npos) << e.dump();
    ++refused;
  }
  EXPECT_EQ(refused, 2);
}

// A working directory deeper than PATH_MAX: its path cannot be read, and a relative path was
// resolved from / instead (usr/bin/true judged as /usr/bin/true while the kernel ran the
// symlink to yes beneath the deep directory). Now it is resolved beneath the directory
// itself, and refused when it leaves it.
TEST_F(ExecWatchTest, ARelativeExecFromADirectoryDeeperThanPathMaxIsResolvedThere) {
  json r = session_running(
      "n=$(printf 'd%.0s' $(seq 1 200)); for i in $(seq 1 25); do mkdir $n && cd $n || exit 9; "
      "done; mkdir -p usr/bin && ln -s /usr/bin/yes usr/bin/true && cp /usr/bin/true usr/bin/t "
      "&& usr/bin/t; echo copy=$?; timeout 3 usr/bin/true >/dev/null; echo link=$?");
  const std::string text = text_of(r);
  EXPECT_NE(text.find("copy=0"), std::string::npos) << text;
  EXPECT_NE(text.find("link=126"), std::string::npos) << text;
}

// /proc/self/exe and /dev/fd/N name the caller's own files (magic links openat2 does not
// follow from the sandbox's root): they failed with ENOENT; now they run, judged as the
// file they are.
TEST_F(ExecWatchTest, ProcSelfExeAndDevFdExecsRunAsTheFileTheyName) {
  json r = session_running(
      "exec 7</usr/bin/true; /dev/fd/7; echo devfd=$?; /proc/self/fd/7; echo procfd=$?; "
      "exec 8</usr/bin/yes; timeout 3 /dev/fd/8 >/dev/null; echo yes=$?");
  expect_each_in(text_of(r), {"devfd=0", "procfd=0", "yes=126"});
}

// Starts argv in a session of its own, as a private moatd (or a systemd service) runs.
pid_t start_session_leader(const std::vector<std::string>& argv, const std::string& log) {
  const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    setsid();
    dup2(out, 1);
    dup2(out, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out);
  return pid;
}

// moatd's controlling terminal: field 7 (tty_nr) of its /proc/<pid>/stat, 0 for none.
long tty_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  std::istringstream fields(line.substr(line.rfind(')') + 2));
  std::string f;
  for (int i = 3; fields >> f; ++i)
    if (i == 7) return std::stol(f);
  return -1;
}

// The watch opened the file an exec names for reading, whatever it was. A pty's slave made
// that way became moatd's controlling terminal (moatd is a session leader without one), and
// the sandbox, holding the master, typed Ctrl-\ into it: SIGQUIT killed moatd and every
// session it served. Now the name is opened O_PATH and only a regular file is read.
TEST_F(ExecWatchTest, AnExecOfAPtySlaveDoesNotGiveMoatdAControllingTerminal) {
  stop_moatd();
  std::vector<std::string> argv = {moatd_bin(), "--socket", socket_};
  for (const std::string& flag : moatd_flags()) argv.push_back(flag);
  pid_ = start_session_leader(argv, dir_.path() + "/moatd.log");
  RawClient(socket_).send_json({{"type", "bye"}});  // waits until it listens
  std::ofstream(ws_ + "/pty.py") << "import os, time\n"
                                    "m, s = os.openpty()\n"
                                    "n = os.ttyname(s)\n"
                                    "try:\n"
                                    "    os.execv(n, [n])\n"
                                    "except OSError as e:\n"
                                    "    print('exec errno', e.errno, flush=True)\n"
                                    "os.write(m, b'\\x1c\\x03')\n"
                                    "time.sleep(0.5)\n"
                                    "print('typed')\n";
  json r = session_running("python3 pty.py", 60000);
  ASSERT_TRUE(r.is_object()) << "no result: " << moatd_log();
  EXPECT_NE(text_of(r).find("exec errno 13"), std::string::npos) << r.dump();
  ASSERT_EQ(kill(pid_, 0), 0) << "moatd died: " << moatd_log();
  EXPECT_EQ(tty_of(pid_), 0) << "moatd has a controlling terminal";
  json again = session_running("echo alive", 60000);
  EXPECT_NE(text_of(again).find("alive"), std::string::npos) << again.dump();
}

// A FIFO named by an exec: the watch's open waited for a writer that never came, so the call
// never ended (its watch thread could not be joined). Now it fails as the kernel fails it.
TEST_F(ExecWatchTest, AnExecOfAFifoFailsAtOnceAndTheCallEnds) {
  json r = session_running("mkfifo f && chmod +x f && timeout 5 ./f; echo fifo=$?", 60000);
  ASSERT_TRUE(r.is_object()) << "no result within 60 s";
  EXPECT_NE(text_of(r).find("fifo=126"), std::string::npos) << r.dump();
}

// A script the sandbox made execute-only (mode 111): a moatd that is not root cannot read
// its #! line, and judged it as a file with no interpreter, so the interpreter (here yes,
// which the policy denies) ran until the after-the-fact check killed it. Now a file moat
// cannot read is refused unless it sits on a read-only mount. As root moatd reads it anyway.
TEST_F(ExecWatchTest, AnExecuteOnlyScriptIsRefusedNotRunUnjudged) {
  json r = session_running(
      "printf '#!/usr/bin/yes\\n' > s && chmod 111 s && timeout 3 ./s >/dev/null; echo s=$?");
  EXPECT_NE(text_of(r).find("s=126"), std::string::npos) << r.dump();
  const std::vector<json> scripts = execs_of("s");
  ASSERT_EQ(scripts.size(), 1u);
  EXPECT_EQ(scripts[0].value("result", ""), "deny") << scripts[0].dump();
}

// A script in the workspace whose interpreter is not the program that runs it (bash running
// a #!/bin/sh script): its /proc/<pid>/exe becomes the interpreter. The watch compared it
// with the script's own file (the interpreter's name had been moved out of what it checked)
// and killed every such script a moment after it started.
TEST_F(ExecWatchTest, AScriptInTheWorkspaceRunsToItsEnd) {
  std::ofstream(ws_ + "/s.sh") << "#!/bin/sh\nsleep 0.2\necho ran to the end\n";
  fs::permissions(ws_ + "/s.sh", fs::perms::owner_all | fs::perms::group_read |
                                     fs::perms::group_exec | fs::perms::others_read |
                                     fs::perms::others_exec);
  json r = session_running("./s.sh; echo rc=$?");
  EXPECT_NE(text_of(r).find("ran to the end\nrc=0"), std::string::npos) << r.dump();
  for (const json& e : of_type("exec.end"))
    EXPECT_EQ(e.value("note", "").find("killed"), std::string::npos) << e.dump();
}

// A file the sandbox swaps between moat's open and the kernel's (a second process exchanges
// ./target with a symlink to yes in a loop). A #! script was never checked once it ran (its
// /proc/<pid>/exe is its interpreter, not the script), so a yes that got through ran on; now
// /proc/<pid>/exe must become the interpreter judged.
TEST_F(ExecWatchTest, AScriptSwappedForADeniedProgramAfterTheCheckIsKilled) {
  const std::string counts = race_swapping("swapscript");
  EXPECT_NE(counts.find("rounds=200"), std::string::npos) << counts;
  EXPECT_NE(counts.find("escaped=0"), std::string::npos) << counts;
}

// A program of one thread that ends by the raw exit system call (not exit_group) was
// recorded as "ended by a signal (reaped before moat read which)" whenever its parent reaped
// it before moat read /proc/<pid>/stat (issue 26 item 8: 2 runs in 10). Every end now holds
// the status its parent saw.
TEST_F(ExecWatchTest, AnExitByTheRawExitSyscallIsRecordedWithItsCode) {
  const std::string probe =
      env_or("MOAT_BUILD_ROOT", "build") + "/tests/integration/e2e/exec_probe";
  ASSERT_TRUE(fs::exists(probe)) << probe;
  fs::copy_file(probe, ws_ + "/probe");
  json r = session_running(
      "n=0; for i in $(seq 1 50); do ./probe rawexit; [ $? = 7 ] && n=$((n+1)); done; echo "
      "sevens=$n");
  EXPECT_NE(text_of(r).find("sevens=50"), std::string::npos) << r.dump();
  std::map<std::string, json> ends;
  for (json& e : of_type("exec.end")) ends[e.value("exec_id", "")] = e;
  int probes = 0, sevens = 0;
  for (const json& e : execs_of("probe")) {
    ++probes;
    const json end = ends[e.value("exec_id", "")];
    if (end.is_object() && end.contains("exit") && end["exit"].value("code", json()) == 7)
      ++sevens;
    else ADD_FAILURE() << "exec.end " << end.dump();
  }
  std::cout << "[ rawexit ] " << sevens << " of " << probes << " ends hold code 7\n";
  EXPECT_EQ(probes, 50);
  EXPECT_EQ(sevens, 50);
}

// A process of one thread, its words on its own stack ("exclusive"), execs a file on a
// read-only mount named from its working directory or an fd, while a sibling made with
// clone(CLONE_FS) or clone(CLONE_FILES) keeps changing that directory or fd: moat judged
// /data/A/prog (true) and skipped the after-the-fact check, the kernel opened /data/B/prog
// (yes, denied), and the record named /usr/bin/true (issue 26 item 4). Every exec named
// through the caller's cwd or fds is now verified once it runs: no `yes` outlives the window,
// and every record of an allowed `true` ends as true ends (code 0) or says it was killed.
// 60 s of racing in all, 20 s per variant.
TEST_F(ExecWatchTest, ASiblingSharingTheCwdOrFdTableCannotSwapInADeniedProgram) {
  const std::string probe =
      env_or("MOAT_BUILD_ROOT", "build") + "/tests/integration/e2e/exec_probe";
  ASSERT_TRUE(fs::exists(probe)) << probe;
  fs::copy_file(probe, ws_ + "/probe");
  const std::string data = dir_.path() + "/data";
  fs::create_directories(data + "/A");
  fs::create_directories(data + "/B");
  fs::create_symlink("/usr/bin/true", data + "/A/prog");
  fs::create_symlink("/usr/bin/yes", data + "/B/prog");
  RawClient c(socket_);
  c.send_json({{"type", "hello"},
               {"version", 1},
               {"workspace", ws_},
               {"headless", true},
               {"binds", {{{"source", data}, {"target", "/data"}}}}});  // read-only
  json welcome = c.read_frame();
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  log_ = welcome.value("audit", "");
  for (const char* mode : {"cwdswap", "fdswap", "dirfdswap"}) {
    json r = call(c, mode, std::string("./probe 20 ") + mode, 120000);
    const std::string text = text_of(r);
    std::cout << "[ " << mode << " ] " << text.substr(0, text.find('\n')) << "\n";
    EXPECT_NE(text.find("rounds="), std::string::npos) << r.dump();
    EXPECT_EQ(text.find("rounds=0 "), std::string::npos) << text;
    EXPECT_NE(text.find("escaped=0"), std::string::npos) << mode << ": " << text;
  }
  c.send_json({{"type", "bye"}});
  c.read_frame();
  std::map<std::string, json> ends;
  for (json& e : of_type("exec.end")) ends[e.value("exec_id", "")] = e;
  int trues = 0, killed = 0, misrecorded = 0;
  for (const json& e : execs_of("true")) {
    if (e.value("result", "") != "allow") continue;
    ++trues;
    const json end = ends[e.value("exec_id", "")];
    const json exit = end.is_object() ? end.value("exit", json::object()) : json::object();
    if (end.is_object() && end.value("note", "").rfind("killed:", 0) == 0) ++killed;
    else if (exit.value("code", json()) != 0 && ++misrecorded <= 5)
      ADD_FAILURE() << "recorded as true, ended otherwise: " << e.dump() << " " << end.dump();
  }
  for (const json& e : execs_of("yes"))
    EXPECT_NE(e.value("result", ""), "allow") << "a yes was let run: " << e.dump();
  std::cout << "[ shared ] " << trues << " trues recorded, " << killed << " killed once running, "
            << misrecorded << " misrecorded\n";
  EXPECT_EQ(misrecorded, 0);
  EXPECT_GT(trues, 0);
}

// The same race when ./target is the very program the caller runs (a hard link to it): its
// /proc/<pid>/exe is the file judged before and after the exec, so the check took it as done
// at once, before the kernel had opened anything. Now the exec is seen done by its memory
// (the old one is gone, or a vfork parent no longer shares it).
TEST_F(ExecWatchTest, AProgramsOwnImageSwappedAfterTheCheckIsKilled) {
  const std::string counts = race_swapping("swapself");
  EXPECT_NE(counts.find("rounds=200"), std::string::npos) << counts;
  EXPECT_NE(counts.find("escaped=0"), std::string::npos) << counts;
}

// The dynamic loader run as a program opens the program it is asked to load itself, once it
// runs: moat judged ./t when it was a symlink to true, a process swapping it for a symlink to
// yes made the loader load yes, and nothing saw it (/proc/<pid>/exe stays the loader). A
// program named to the loader through a path the sandbox can change is now refused; one on a
// read-only system path still runs.
TEST_F(ExecWatchTest, TheLoaderIsNotAskedToLoadAProgramTheSandboxCouldSwap) {
  std::string loader;
  for (const char* l : {"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"})
    if (fs::exists(l)) loader = l;
  ASSERT_FALSE(loader.empty()) << "no dynamic loader found";
  std::ofstream(ws_ + "/swap.py")
      << "import os\n"
         "while True:\n"
         "    os.symlink('/usr/bin/yes', 't2'); os.rename('t2', 't')\n"
         "    os.symlink('/usr/bin/true', 't2'); os.rename('t2', 't')\n";
  json r =
      session_running("python3 swap.py & sleep 0.2; for i in $(seq 1 40); do timeout 1 " + loader +
                      " ./t >/dev/null 2>&1; echo -n \"rc$? \"; done; kill %1; echo; " + loader +
                      " /usr/bin/true; echo sys=$?");
  const std::string text = text_of(r);
  EXPECT_EQ(text.find("rc124"), std::string::npos) << "yes ran through the loader: " << text;
  EXPECT_EQ(text.find("rc0"), std::string::npos) << "./t was loaded: " << text;
  EXPECT_NE(text.find("sys=0"), std::string::npos) << text;
}

// The kernel follows five #! interpreters (s4 -> s3 -> s2 -> s1 -> s0 -> true) and fails the
// sixth with ELOOP; moat stopped at four, refusing what the kernel runs.
TEST_F(ExecWatchTest, ChainsOfInterpretersEndWhereTheKernelsEnd) {
  json r = session_running(
      "printf '#!/usr/bin/true\\n' > s0 && for i in 1 2 3 4 5; do printf \"#!$PWD/s$((i-1))\\n\" > "
      "s$i; done && chmod +x s0 s1 s2 s3 s4 s5 && ./s4; echo five=$?; ./s5; echo six=$?");
  expect_each_in(text_of(r), {"five=0", "six=126"});
}

// A NUL byte in a #! line ends the interpreter's name for the kernel (binfmt_script reads C
// strings), and with it the line: `#!/bin/echo<NUL> hidden` runs /bin/echo ./s. moat took the
// NUL and "hidden" into the interpreter and its argument, so the record named a program and
// an argument that never ran.
TEST_F(ExecWatchTest, ANulInAnInterpreterLineEndsItAsTheKernelReadsIt) {
  std::ofstream(ws_ + "/s", std::ios::binary) << std::string("#!/bin/echo\0 hidden\n", 20);
  fs::permissions(ws_ + "/s", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  json r = session_running("./s");
  EXPECT_EQ(text_of(r), "./s\n") << r.dump();
  const std::vector<json> scripts = execs_of("s");
  ASSERT_EQ(scripts.size(), 1u);
  EXPECT_EQ(scripts[0].value("interpreter", ""), "/bin/echo") << scripts[0].dump();
}

// The same program, single-threaded: the check is sound, and says so in the record.
TEST_F(ExecWatchTest, ASingleThreadedCallerIsCheckedOnAnExclusiveMemory) {
  const std::string flipper = env_or("MOAT_BUILD_ROOT", "build") + "/tests/integration/e2e/exec_probe";
  ASSERT_TRUE(fs::exists(flipper)) << flipper;
  fs::copy_file(flipper, ws_ + "/flipper");
  json r = session_running("./flipper 20 single");
  EXPECT_NE(text_of(r).find("rounds=20 true=20"), std::string::npos) << r.dump();
  int trues = 0;
  for (const json& e : of_type("exec")) {
    if (base_of(e.value("exe", "")) != "true") continue;
    ++trues;
    EXPECT_EQ(e.value("memory", ""), "exclusive") << e.dump();
  }
  EXPECT_EQ(trues, 20);
}

// A real build: every compiler, assembler and linker make -j2 starts is in the log, each with
// its end, and the log verifies.
TEST_F(ExecWatchTest, EveryExecOfAMakeBuildIsRecordedAndTheLogVerifies) {
  if (!fs::exists("/usr/bin/make") || !fs::exists("/usr/bin/cc")) GTEST_SKIP() << "no make or cc";
  std::ofstream(ws_ + "/Makefile") << "prog: main.o a.o b.o\n\tcc -o $@ $^\n"
                                      "%.o: %.c\n\tcc -c $< -o $@\n";
  std::ofstream(ws_ + "/main.c") << "int a(void); int b(void);\nint main(void) { return a() + b(); }\n";
  std::ofstream(ws_ + "/a.c") << "int a(void) { return 0; }\n";
  std::ofstream(ws_ + "/b.c") << "int b(void) { return 0; }\n";
  json r = session_running("make -j2 && ./prog && echo built");
  ASSERT_NE(text_of(r).find("built"), std::string::npos) << r.dump();
  std::map<std::string, int> count;
  std::set<std::string> ids;
  for (const json& e : of_type("exec")) {
    ++count[base_of(e.value("exe", ""))];
    ids.insert(e.value("exec_id", ""));
    EXPECT_EQ(e.value("result", ""), "allow") << e.dump();
  }
  for (const json& e : of_type("exec.end")) ids.erase(e.value("exec_id", ""));
  EXPECT_TRUE(ids.empty()) << ids.size() << " programs without an end";
  EXPECT_EQ(count["make"], 1);
  EXPECT_GE(count["cc1"], 3) << "one compiler per source file";
  int assemblers = 0, linkers = 0;
  for (const auto& [name, n] : count) {
    if (name == "as" || name.ends_with("-as")) assemblers += n;
    if (name == "collect2" || name == "ld" || name.find("-ld") != std::string::npos ||
        name.starts_with("ld."))
      linkers += n;
  }
  EXPECT_GE(assemblers, 3);
  std::string seen;
  for (const auto& [name, n] : count) seen += name + "=" + std::to_string(n) + " ";
  EXPECT_GE(linkers, 1) << seen;
  EXPECT_EQ(count["prog"], 1);
  e2e::Run v = run({moat_bin(), "audit", "verify", log_});
  EXPECT_EQ(v.exit_code, 0) << v.out;
}

// The demo's session (the bundled project, the rename, its test script) exported as the audit
// page: headless Chromium shows the script's programs nested under it and the six files the
// rename changed.
TEST_F(ExecWatchTest, TheAuditPageOfTheDemosSessionShowsItsProgramTreeAndFiles) {
  fs::create_directories(dir_.path() + "/demo");
  const std::string ws = make_example_workspace(dir_.path() + "/demo");
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws}, {"headless", true}});
  json welcome = c.read_frame(120000);
  ASSERT_TRUE(welcome.is_object()) << moatd_log();
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  const std::string log = welcome.value("audit", "");
  json r = call(c, "rename",
                "sed -i 's/\\bcompute_total\\b/sum_line_items/g' calc/__init__.py calc/core.py "
                "calc/invoice.py calc/report.py tests/test_calc.py README.md");
  ASSERT_FALSE(r.value("isError", true)) << r.dump();
  r = call(c, "tests", "sh run_tests.sh");
  c.send_json({{"type", "bye"}});
  c.read_frame();
  const sessions::testing::AuditPage page =
      sessions::testing::audit_page_dom(log, dir_.path(), "");
  if (!page.skipped.empty()) GTEST_SKIP() << page.skipped;
  ASSERT_FALSE(page.dom.empty()) << "chromium printed no DOM";
  const std::string& dom = page.dom;
  const size_t script = dom.find("data-program=\"sh\"><span class=\"prog\">sh run_tests.sh");
  ASSERT_NE(script, std::string::npos) << dom;
  for (const char* program : {"dirname", "cat", "ls", "python3"})
    EXPECT_NE(dom.find(std::string("data-program=\"") + program + "\"", script),
              std::string::npos)
        << program << " is not under the script's node";
  for (const char* file : {"README.md", "calc/__init__.py", "calc/core.py", "calc/invoice.py",
                           "calc/report.py", "tests/test_calc.py"})
    EXPECT_NE(dom.find("<code>" + ws + "/" + file + "</code>"), std::string::npos) << file;
}

// What would undo the watch is refused inside the sandbox: a seccomp listener of the code's
// own (it would answer execs before moat), clone(CLONE_VM) without CLONE_VFORK or CLONE_THREAD
// and a writable /proc/<pid>/mem (both would let another process rewrite an exec's argv
// after moat read it).
TEST_F(ExecWatchTest, WhatWouldUndoTheWatchIsRefusedInsideTheSandbox) {
  const std::string probe = env_or("MOAT_BUILD_ROOT", "build") + "/tests/integration/e2e/exec_probe";
  ASSERT_TRUE(fs::exists(probe)) << probe;
  fs::copy_file(probe, ws_ + "/probe");
  json r =
      session_running("./probe listener; ./probe clonevm; ./probe clonevmparent; ./probe procmem");
  const std::string text = text_of(r);
  EXPECT_NE(text.find("listener: errno=EPERM"), std::string::npos) << text;
  EXPECT_NE(text.find("clonevm: errno=EPERM"), std::string::npos) << text;
  EXPECT_NE(text.find("clonevmparent: errno=EPERM"), std::string::npos) << text;
  EXPECT_NE(text.find("procmem: errno=EROFS"), std::string::npos) << text;
}

// A fork-and-exec storm loses no record, and another session's calls keep their latency.
TEST_F(ExecWatchTest, AnExecStormLosesNoRecordAndDoesNotStallAnotherSession) {
  RawClient other(socket_);
  ASSERT_EQ(hello(other).value("type", ""), "welcome") << moatd_log();
  auto time_call = [&](const std::string& id) {
    const auto t0 = Clock::now();
    json r = call(other, id, "echo hi");
    EXPECT_FALSE(r.value("isError", true)) << r.dump();
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  };
  std::vector<double> before, during;
  for (int i = 0; i < 5; ++i) before.push_back(time_call("b" + std::to_string(i)));
  std::atomic<bool> storm_done{false};
  json storm_result;
  std::thread storm([&] {
    storm_result = session_running(
        "i=0; while [ $i -lt 10000 ]; do /bin/true; i=$((i+1)); done; echo storm-done");
    storm_done = true;
  });
  for (int i = 0; !storm_done && i < 400; ++i) {
    during.push_back(time_call("d" + std::to_string(i)));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  storm.join();
  EXPECT_NE(text_of(storm_result).find("storm-done"), std::string::npos) << storm_result.dump();
  int trues = 0, ends = 0;
  std::set<std::string> true_ids;
  for (const json& e : of_type("exec"))
    if (base_of(e.value("exe", "")) == "true") {
      ++trues;
      true_ids.insert(e.value("exec_id", ""));
    }
  for (const json& e : of_type("exec.end")) ends += true_ids.count(e.value("exec_id", ""));
  EXPECT_EQ(trues, 10000);
  EXPECT_EQ(ends, 10000);
  std::sort(before.begin(), before.end());
  std::sort(during.begin(), during.end());
  ASSERT_FALSE(during.empty());
  const double med_before = before[before.size() / 2], med_during = during[during.size() / 2];
  std::cout << "[ exec storm ] other session's call latency: median " << med_before
            << " ms before, " << med_during << " ms during (" << during.size() << " calls), max "
            << during.back() << " ms\n";
  // Two cores shared with the storm: the latency may grow by the CPU the storm takes, never
  // by waiting for it (a stall would be seconds: the storm runs for many).
  EXPECT_LT(med_during, 4 * med_before + 250) << "the other session was held back";
  e2e::Run v = run({moat_bin(), "audit", "verify", log_});
  EXPECT_EQ(v.exit_code, 0) << v.out;
}

}  // namespace
}  // namespace moat::e2e

// tests/integration/e2e/typed_exec_test.cc: issue 25's sandbox and agent side, through the real
// moat and moatd. What the person typed (`moat sandbox exec CMD`) is their decision: only the
// organisation's and a --policy file's rules refuse it, and the refusal says what would allow
// it; an exec frame on a moatd the person's CLI did not start is still judged as the agent's
// line. What a call starts is judged at exec time: headless, an ask runs flagged (audit, the
// result the model reads) unless the organisation says deny. MOAT_POLICY_DIR and
// MOAT_USER_POLICY_DIR mean the same to `moat policy explain` and to a run.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/shell_words.h"
#include "e2e_support.h"
#include "mocked_run.h"
#include "workspace_test.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string policy_dir(const std::string& name) {
  return source_root() + "/tests/integration/e2e/" + name;
}

// The one audit log under `dir` ("" when there is none).
std::string only_log_under(const std::string& dir) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".jsonl") return it->path().string();
  return "";
}

// The line of `file` that holds `text` (1-based; 0 when none does).
int line_of(const std::string& file, const std::string& text) {
  std::ifstream in(file);
  int n = 0;
  for (std::string line; std::getline(in, line);)
    if (++n && line.find(text) != std::string::npos) return n;
  return 0;
}

void write(const std::string& path, const std::string& bytes, bool executable = false) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  if (executable)
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// --- moat sandbox exec: what the person typed ------------------------------------------------

class TypedExecTest : public WorkspaceTest {
 protected:
  // `moat sandbox exec` with the system layer `system_dir` (default: none, so the built-in
  // default decides), its audit log under dir_/audit, then `opts`, `--` and `argv`.
  SplitRun exec(const std::vector<std::string>& argv, const std::vector<std::string>& opts = {},
                const std::string& system_dir = "", std::vector<std::string> extra_env = {}) {
    std::vector<std::string> line = {
        moat_bin(), "sandbox", "exec", "--audit-dir", dir_.path() + "/audit", "-C", ws_};
    if (!system_dir.empty() || !has_env(extra_env, "MOAT_POLICY_DIR="))
      line.insert(line.end(), {"--system-policy-dir",
                               system_dir.empty() ? dir_.path() + "/no-system-layer" : system_dir});
    line.insert(line.end(), opts.begin(), opts.end());
    line.push_back("--");
    line.insert(line.end(), argv.begin(), argv.end());
    std::vector<std::string> e = env();
    e.insert(e.end(), extra_env.begin(), extra_env.end());
    return run_split(line, e, 300);
  }
  static bool has_env(const std::vector<std::string>& env, const std::string& prefix) {
    for (const auto& v : env)
      if (v.rfind(prefix, 0) == 0) return true;
    return false;
  }
  std::vector<json> audit_records() { return records_of(only_log_under(dir_.path() + "/audit")); }
};

// The list: a person's own build and tools run under the default policy, no option.
TEST_F(TypedExecTest, WhatThePersonTypedRunsUnderTheDefaultPolicy) {
  write(ws_ + "/script.py", "print('py', 6 * 7)\n");
  write(ws_ + "/script.sh", "echo sh-ran\n");
  write(ws_ + "/x/file", "data\n");
  SplitRun r = exec({"python3", "script.py"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "py 42\n");
  r = exec({"sh", "./script.sh"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "sh-ran\n");
  r = exec({"curl", "--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "curl")) << r.out;
  r = exec({"tar", "-czf", "a.tgz", "x"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(ws_ + "/a.tgz"));
  if (fs::exists("/usr/bin/make") && fs::exists("/usr/bin/cc")) {
    write(ws_ + "/hello.c", "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n");
    write(ws_ + "/Makefile", "hello: hello.c\n\tcc -o hello hello.c\n");
    r = exec({"bash", "-c", "make && ./hello"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(has(r.out, "hello\n")) << r.out;
  }
  // Recorded as the person's decision.
  bool by_person = false;
  for (const json& rec : audit_records())
    if (rec.value("type", "") == "decision" && rec.value("decided_by", "") == "user")
      by_person = true;
  EXPECT_TRUE(by_person) << "the decision record names the person";
}

TEST_F(TypedExecTest, ASystemLayerDenyRefusesNamingTheRuleItsFileLineAndWhoCanAllowIt) {
  const std::string dir = policy_dir("sandbox_exec_policy");
  const SplitRun r = exec({"curl", "--version"}, {}, dir);
  EXPECT_EQ(r.exit_code, 126) << r.err;
  EXPECT_EQ(r.out, "");
  const std::string file = dir + "/00-test.toml";
  EXPECT_TRUE(has(r.err, "curl")) << r.err;
  EXPECT_TRUE(has(r.err, "test.no-curl")) << r.err;
  EXPECT_TRUE(has(r.err, file + ":" + std::to_string(line_of(file, "test.no-curl"))) ||
              has(r.err, file + ":" + std::to_string(line_of(file, "[[command]]"))))
      << r.err;
  EXPECT_TRUE(has(r.err, "only the owner of the organisation's system layer")) << r.err;
  // Named as the person typed it, not quoted twice ('\'curl\' \'--version\'').
  EXPECT_TRUE(has(r.err, "the command `curl --version` was refused")) << r.err;
}

TEST_F(TypedExecTest, APolicyFileDenyRefusesAndSaysToDropIt) {
  const std::string narrow = dir_.path() + "/narrow.toml";
  write(narrow,
        "schema = 1\n[[command]]\nid = \"cli.no-tar\"\ndecision = \"deny\"\nprogram = \"tar\"\n"
        "reason = \"Not today.\"\n");
  const SplitRun r = exec({"tar", "--version"}, {"--policy", narrow});
  EXPECT_EQ(r.exit_code, 126) << r.err;
  EXPECT_TRUE(has(r.err, "cli.no-tar")) << r.err;
  EXPECT_TRUE(has(r.err, narrow + ":")) << r.err;
  EXPECT_TRUE(has(r.err, "drop --policy " + narrow)) << r.err;
}

// A moatd the person's CLI did not start (moat run's, a shared one) cannot be told by a frame
// that its line is the person's: the same exec frame is judged as the agent's line.
TEST_F(TypedExecTest, AnExecFrameOnAMoatdNotStartedTypedIsJudgedAsTheAgentsLine) {
  const std::string sock = dir_.path() + "/moatd.sock";
  fs::create_directories(dir_.path() + "/no-user-layer");
  const pid_t moatd =
      start({moatd_bin(), "--socket", sock, "--audit-dir", dir_.path() + "/shared-audit",
             "--system-policy-dir", dir_.path() + "/no-system-layer", "--user-policy-dir",
             dir_.path() + "/no-user-layer"},
            dir_.path() + "/moatd.log", env());
  ASSERT_TRUE(eventually([&] { return fs::exists(sock); }))
      << read_file(dir_.path() + "/moatd.log");
  const std::vector<std::string> inline_code = {"python3", "-c", "print(6*7)"};
  std::vector<std::string> shared_line = {moat_bin(), "sandbox", "exec", "--connect",
                                          sock,       "-C",      ws_,    "--"};
  shared_line.insert(shared_line.end(), inline_code.begin(), inline_code.end());
  const SplitRun shared = run_split(shared_line, env(), 120);
  kill(moatd, SIGTERM);
  wait_exit(moatd, 10);
  EXPECT_EQ(shared.exit_code, 126) << "judged as the agent's line: " << shared.err;
  EXPECT_TRUE(has(shared.err, "default.inline-code")) << shared.err;
  const SplitRun own = exec(inline_code);
  EXPECT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(own.out, "42\n");
  // Only a private moatd (--fd) takes --typed-exec: a shared one's clients include agents.
  const e2e::Run refused =
      run({moatd_bin(), "--socket", dir_.path() + "/other.sock", "--typed-exec"});
  EXPECT_EQ(refused.exit_code, 2) << refused.out;
  // A shared moatd's policy is its operator's: no option of the client's sets it.
  const SplitRun dirs = run_split({moat_bin(), "sandbox", "exec", "--connect", sock,
                                   "--user-policy-dir", dir_.path(), "--", "true"},
                                  env(), 60);
  EXPECT_EQ(dirs.exit_code, 125) << dirs.err;
}

// What the typed command starts is judged at exec time: the organisation's headless deny of an
// ask holds, and moat names the refused program and its rule on stderr.
TEST_F(TypedExecTest, WhatTheTypedCommandStartsIsStillJudgedAtExecTime) {
  write(ws_ + "/fetch.sh", "curl --version > /dev/null && echo fetched\n");
  SplitRun r = exec({"sh", "./fetch.sh"}, {}, policy_dir("exec_ask_deny_policy"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(has(r.err, "test.ask-curl")) << r.err;
  EXPECT_TRUE(has(r.err, "moat refused 1 program")) << r.err;
  // The typed line itself meets the organisation's ask: nobody can be asked, so it is refused
  // (only a system or --policy rule binds what the person typed), naming who can allow it.
  r = exec({"curl", "--version"}, {}, policy_dir("exec_ask_deny_policy"));
  EXPECT_EQ(r.exit_code, 126) << r.err;
  EXPECT_TRUE(has(r.err, "test.ask-curl")) << r.err;
  EXPECT_TRUE(has(r.err, "only the owner of the organisation's system layer")) << r.err;
  // Headless with the default [exec] headless_ask: it runs, flagged (said with -v).
  r = exec({"sh", "./fetch.sh"}, {"-v"}, policy_dir("exec_ask_policy"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "fetched\n");
  EXPECT_TRUE(has(r.err, "test.ask-curl")) << r.err;
}

// Every example of `moat sandbox exec --help` runs as written, in a directory that has what it
// names (a Makefile, the scripts, the policy files); the --network one needs a host the policy
// allows and is NetProxyTest.SandboxExecReachesAnAllowedNameOnlyWithNetwork's.
TEST_F(TypedExecTest, EveryExampleInTheHelpRunsAsWritten) {
  const e2e::Run help = run({moat_bin(), "sandbox", "exec", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.out;
  const std::string home = dir_.path() + "/home", cwd = dir_.path() + "/cwd";
  const std::string makefile = "all:\n\ttrue\ntest:\n\ttrue\ncheck:\n\ttrue\n";
  write(cwd + "/Makefile", makefile);
  write(cwd + "/run_tests.sh", "#!/bin/sh\necho tests-ran\n", true);
  write(cwd + "/deploy.sh", "#!/bin/sh\necho deployed\n", true);
  write(cwd + "/repo/sub/run_tests.sh", "#!/bin/sh\necho sub-tests-ran\n", true);
  write(cwd + "/ci-policy/10-ci.toml",
        "schema = 1\ndefaults = { tool = \"allow\", command = \"allow\", read = \"allow\", "
        "write = \"allow\", network = \"deny\" }\n");
  write(cwd + "/no-network-tools.toml",
        "schema = 1\n[[command]]\nid = \"cli.no-network-tools\"\ndecision = \"deny\"\n"
        "program = [\"curl\", \"wget\"]\n");
  fs::create_directories(home + "/datasets");
  std::error_code ec;
  fs::create_directories("/tmp/cache", ec);
  const bool cache_ours = ::access("/tmp/cache", W_OK) == 0;
  int examples = 0;
  std::istringstream lines(help.out);
  for (std::string line; std::getline(lines, line);) {
    const std::string prefix = "  moat sandbox exec ";
    if (line.rfind(prefix, 0) != 0 || has(line, "--network")) continue;
    if (has(line, "/tmp/cache") && !cache_ours) continue;  // another user's /tmp/cache
    ++examples;
    // moat_bin() may be relative to the test's directory (the build's); the example runs in cwd.
    const std::string moat = fs::absolute(moat_bin()).string();
    const std::string cmd = "cd " + shell_quote(cwd) + " && " + shell_quote(moat) +
                            line.substr(std::string("  moat").size()) + " < /dev/null";
    std::vector<std::string> e = env();
    e.push_back("HOME=" + home);
    e.push_back("MOAT_POLICY_DIR=" + dir_.path() + "/no-system-layer");
    const SplitRun r = run_split({"/bin/sh", "-c", cmd}, e, 120);
    EXPECT_EQ(r.exit_code, 0) << line << "\n" << r.err;
  }
  EXPECT_GE(examples, 6) << help.out;
}

// --- exec time, headless: an ask runs flagged, or the organisation refuses it ----------------

class ExecAskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    ws_ = dir_.path() + "/ws";
    fs::create_directories(ws_);
    fs::create_directories(dir_.path() + "/no-user-layer");
    write(ws_ + "/fetch.sh", "curl --version > /dev/null && echo fetched\n");
  }
  // One headless bash call of `command` on a fresh moatd with the system layer `system`: the
  // result, with log_ set to its audit log.
  json call_with(const std::string& system, const std::string& command) {
    return one_headless_call(dir_.path(), ws_, policy_dir(system), command, &log_);
  }
  static std::string text_of(const json& result) {
    std::string out;
    if (result.contains("content"))
      for (const json& b : result["content"]) out += b.value("text", "");
    return out;
  }
  json only(const std::string& type, const std::string& exe_base = "") {
    json found;
    for (const json& rec : records_of(log_))
      if (rec.value("type", "") == type &&
          (exe_base.empty() || fs::path(rec.value("exe", "")).filename() == exe_base))
        found = rec;
    return found;
  }
  TempDir dir_;
  std::string ws_, log_;
};

TEST_F(ExecAskTest, HeadlessAnAskAtExecTimeRunsAndIsFlaggedInTheAuditAndTheResult) {
  const json r = call_with("exec_ask_policy", "sh ./fetch.sh");
  const std::string text = text_of(r);
  EXPECT_TRUE(has(text, "fetched")) << r.dump();
  EXPECT_TRUE(has(text, "moat let 1 program")) << text;
  EXPECT_TRUE(has(text, "`curl --version` (rule test.ask-curl)")) << text;
  const json curl = only("exec", "curl");
  ASSERT_TRUE(curl.is_object()) << read_file(log_);
  EXPECT_EQ(curl.value("result", ""), "allow") << curl.dump();
  EXPECT_EQ(curl.value("decided_by", ""), "observed") << curl.dump();
  EXPECT_EQ(curl.value("flagged", ""), "test.ask-curl") << curl.dump();
  ASSERT_TRUE(curl["rule"].is_object()) << curl.dump();
  EXPECT_EQ(curl["rule"].value("id", ""), "test.ask-curl") << curl.dump();
  const json call = only("call");
  EXPECT_EQ(call.value("flagged_execs", -1), 1) << call.dump();
  EXPECT_EQ(call.value("refused_execs", -1), 0) << call.dump();
  const e2e::Run v = run({moat_bin(), "audit", "verify", log_});
  EXPECT_EQ(v.exit_code, 0) << v.out;
}

TEST_F(ExecAskTest, AnOrganisationsHeadlessAskDenyRefusesItNamingTheRule) {
  const json r = call_with("exec_ask_deny_policy", "sh ./fetch.sh");
  const std::string text = text_of(r);
  EXPECT_FALSE(has(text, "fetched")) << r.dump();
  EXPECT_TRUE(has(text, "moat refused 1 program")) << r.dump();
  EXPECT_TRUE(has(text, "test.ask-curl")) << r.dump();
  // sh tries curl in each PATH directory that holds it (/usr/bin, /bin): one program, one line.
  EXPECT_EQ(text.find("\n- running "), text.rfind("\n- running ")) << text;
  EXPECT_FALSE(has(text, "moat let")) << text;
  const json curl = only("exec", "curl");
  ASSERT_TRUE(curl.is_object()) << read_file(log_);
  EXPECT_EQ(curl.value("result", ""), "deny") << curl.dump();
  EXPECT_FALSE(curl.contains("flagged")) << curl.dump();
  EXPECT_EQ(only("call").value("flagged_execs", -1), 0);
}

// --- MOAT_POLICY_DIR and MOAT_USER_POLICY_DIR: explain and a run agree -----------------------

class PolicyDirsEnvTest : public MockedRun {
 protected:
  // `moat policy explain --headless --json` of `line` in the workspace: "allow" or "deny".
  std::string explained(const std::string& line, const std::vector<std::string>& extra_env) {
    std::vector<std::string> e = env();
    e.insert(e.end(), extra_env.begin(), extra_env.end());
    const SplitRun r = run_split(
        {moat_bin(), "policy", "explain", "--headless", "--json", "--workspace", ws_, line}, e, 60);
    const json j = json::parse(r.out, nullptr, false);
    return j.is_object() ? j.value("decision", "?") : "unparsed: " + r.out + r.err;
  }
  // A headless `moat run` whose one turn runs `line` with bash: the decision record's result.
  std::string ran(const std::string& line, const std::vector<std::string>& extra_env) {
    server_->push_turn(call_turn("call-1", line));
    server_->push_turn(text_turn("done"));
    std::vector<std::string> a = run_argv({"--headless"});
    a.push_back("run it");
    std::vector<std::string> e = env();
    e.insert(e.end(), extra_env.begin(), extra_env.end());
    fs::remove_all(dir_.path() + "/audit");
    const SplitRun r = run_split(a, e, 120);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const json& rec : records_of(only_log_under(dir_.path() + "/audit")))
      if (rec.value("type", "") == "decision" && rec.value("tool", "") == "bash")
        return rec.value("result", "?");
    return "no decision: " + r.err;
  }
};

TEST_F(PolicyDirsEnvTest, ExplainAndAHeadlessRunAgreeUnderTheEnvironmentsPolicyDirs) {
  start(agent::providers::Api::kOpenAiChat);
  if (server_ == nullptr) return;  // skipped
  fs::create_directories(dir_.path() + "/no-system-layer");
  // The organisation's layer from MOAT_POLICY_DIR: everything allowed but curl.
  const std::vector<std::string> system = {"MOAT_POLICY_DIR=" + policy_dir("sandbox_exec_policy"),
                                           "MOAT_USER_POLICY_DIR=" + dir_.path() + "/user"};
  fs::create_directories(dir_.path() + "/user");
  for (const std::string line : {"python3 -c 'print(6*7)'", "curl --version"})
    EXPECT_EQ(ran(line, system), explained(line, system)) << line;
  EXPECT_EQ(explained("curl --version", system), "deny");
  EXPECT_EQ(explained("python3 -c 'print(6*7)'", system), "allow");
  // The person's layer from MOAT_USER_POLICY_DIR loosens a built-in ask.
  write(dir_.path() + "/user/10-mine.toml",
        "schema = 1\n[[command]]\nid = \"user.python-inline\"\ndecision = \"allow\"\n"
        "program = \"python3\"\n");
  const std::vector<std::string> user = {"MOAT_POLICY_DIR=" + dir_.path() + "/no-system-layer",
                                         "MOAT_USER_POLICY_DIR=" + dir_.path() + "/user"};
  const std::string line = "python3 -c 'print(6*7)'";
  EXPECT_EQ(ran(line, user), explained(line, user)) << line;
  EXPECT_EQ(explained(line, user), "allow");
  // moat sandbox exec takes the organisation's layer from MOAT_POLICY_DIR too.
  std::vector<std::string> e = env();
  e.insert(e.end(), system.begin(), system.end());
  const SplitRun r = run_split({moat_bin(), "sandbox", "exec", "--audit-dir",
                                dir_.path() + "/exec-audit", "-C", ws_, "--", "curl", "--version"},
                               e, 120);
  EXPECT_EQ(r.exit_code, 126) << r.err;
  EXPECT_TRUE(has(r.err, "test.no-curl")) << r.err;
}

}  // namespace
}  // namespace moat::e2e

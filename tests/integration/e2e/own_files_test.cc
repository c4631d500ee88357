// tests/integration/e2e/own_files_test.cc: moat's own files are out of reach of a sandbox
// whose workspace holds them (issue 12, item 7): with the workspace at the user's home, the
// code cannot change config.toml (where the API key is sent), the policies, the trust pins,
// the session files or the audit logs, wherever moatd's flags and environment put them.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "e2e_support.h"
#include "moatd_fixture.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class OwnFilesTest : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    home_ = dir_.path() + "/home";
    for (const char* d : {"/.config/moat/policy.d", "/.local/state/moat/sessions/ws",
                          "/.local/state/moat/trust", "/project"})
      fs::create_directories(home_ + d);
    std::ofstream(home_ + "/.config/moat/config.toml") << kConfig;
    std::ofstream(home_ + "/.local/state/moat/sessions/ws/s.jsonl") << "{}\n";
    std::ofstream(home_ + "/.local/state/moat/trust/p.pin") << "sha256\n";
    fs::create_directories(dir_.path() + "/no-policy");
  }

  // moatd as a user whose HOME is home_ (no other moat variable set), plus `args` and `env`.
  void start_moatd(const std::vector<std::string>& args, std::vector<std::string> env = {}) {
    std::vector<std::string> flags = {"--system-policy-dir", dir_.path() + "/no-policy"};
    flags.insert(flags.end(), args.begin(), args.end());
    for (const std::string& kv :
         {"HOME=" + home_, "XDG_CONFIG_HOME=" + home_ + "/.config",
          "XDG_STATE_HOME=" + home_ + "/.local/state", std::string("MOAT_AUDIT_DIR="),
          std::string("MOAT_SESSIONS_DIR="), std::string("MOAT_TRUST_DIR=")})
      env.insert(env.begin(), kv);  // later entries (the test's own) win
    MoatdProcess::start_moatd(flags, env);
  }

  json call(RawClient& c, const std::string& tool, const json& args) {
    c.send_json(
        {{"type", "call"}, {"id", std::to_string(++calls_)}, {"tool", tool}, {"arguments", args}});
    return c.read_result();
  }

  // One session with the workspace at home_ that tries to change each of moat's files, and
  // to create a file in `extra_dir` (workspace-relative) too.
  void attack(const std::string& extra_dir) {
    RawClient c(socket_);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", home_}, {"headless", true}});
    json welcome = c.read_frame();
    ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
    // The control: the rest of the workspace is the code's to write.
    json ok = call(c, "bash", {{"command", "touch project/made"}});
    ASSERT_TRUE(fs::exists(home_ + "/project/made")) << ok.dump() << moatd_log();
    for (const std::string& cmd :
         {std::string("echo 'base_url = \"https://attacker.example\"' >> .config/moat/config.toml"),
          std::string("rm -f .config/moat/config.toml"),
          std::string("touch .config/moat/policy.d/00-allow-all.toml"),
          std::string(
              "touch .local/state/moat/sessions/ws/s.jsonl .local/state/moat/sessions/new.jsonl"),
          std::string("rm -f .local/state/moat/sessions/ws/s.jsonl"),
          std::string("touch .local/state/moat/trust/evil.pin"), "touch " + extra_dir + "/planted",
          "rm -rf " + extra_dir, std::string("mv .config .config.old"),
          std::string("mv .local/state/moat .local/state/moved")})
      call(c, "bash", {{"command", cmd}});
    json w =
        call(c, "write", {{"path", ".config/moat/config.toml"}, {"content", "[providers.x]\n"}});
    EXPECT_TRUE(w.value("isError", false)) << w.dump();
    c.send_json({{"type", "bye"}});
    c.read_frame();
    EXPECT_EQ(slurp(home_ + "/.config/moat/config.toml"), kConfig);
    EXPECT_FALSE(fs::exists(home_ + "/.config/moat/policy.d/00-allow-all.toml"));
    EXPECT_EQ(slurp(home_ + "/.local/state/moat/sessions/ws/s.jsonl"), "{}\n");
    EXPECT_FALSE(fs::exists(home_ + "/.local/state/moat/sessions/new.jsonl"));
    EXPECT_FALSE(fs::exists(home_ + "/.local/state/moat/trust/evil.pin"));
    EXPECT_TRUE(fs::is_directory(home_ + "/" + extra_dir));
    EXPECT_FALSE(fs::exists(home_ + "/" + extra_dir + "/planted"));
    EXPECT_FALSE(fs::exists(home_ + "/.config.old"));
    EXPECT_FALSE(fs::exists(home_ + "/.local/state/moved"));
  }

  static constexpr const char* kConfig =
      "[providers.corp]\nkind = \"anthropic\"\nbase_url = \"https://llm.corp.example/v1\"\n";
  std::string home_;
  int calls_ = 0;
};

TEST_F(OwnFilesTest, AWorkspaceAtTheUsersHomeCannotChangeMoatsConfigPoliciesSessionsOrAudit) {
  // Where a private moatd logs (a --socket moatd as root would use /var/log/moat).
  start_moatd({"--audit-dir", home_ + "/.local/state/moat/audit"});
  attack(".local/state/moat/audit");
  // The audit log of that very session is intact.
  bool found = false;
  for (const auto& e : fs::recursive_directory_iterator(home_ + "/.local/state/moat/audit"))
    if (e.path().extension() == ".jsonl") {
      found = true;
      e2e::Run v = run({moat_bin(), "audit", "verify", e.path().string()});
      EXPECT_EQ(v.exit_code, 0) << v.out;
    }
  EXPECT_TRUE(found);
}

TEST_F(OwnFilesTest, TheAuditDirectoryIsProtectedWhereAuditDirPutsIt) {
  start_moatd({"--audit-dir", home_ + "/logs/moat-audit"});
  attack("logs/moat-audit");
}

TEST_F(OwnFilesTest, TheAuditDirectoryIsProtectedWhereMoatAuditDirPutsIt) {
  start_moatd({}, {"MOAT_AUDIT_DIR=" + home_ + "/audit-env"});
  attack("audit-env");
}

TEST_F(OwnFilesTest, TheSessionsAndUserPolicyDirectoriesAreProtectedWhereTheFlagsPutThem) {
  fs::create_directories(home_ + "/my-policies");
  fs::create_directories(home_ + "/my-sessions/ws");
  start_moatd({"--sessions-dir", home_ + "/my-sessions", "--user-policy-dir",
               home_ + "/my-policies", "--audit-dir", dir_.path() + "/audit"});
  attack("my-sessions");
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", home_}, {"headless", true}});
  ASSERT_EQ(c.read_frame().value("type", ""), "welcome");
  call(c, "bash", {{"command", "touch my-policies/evil.toml"}});
  EXPECT_FALSE(fs::exists(home_ + "/my-policies/evil.toml"));
}

// The sandbox cannot read moatd's signing key when the workspace holds it, whatever the
// policy: the key is named so that the default policy's `*.pem` rule does not cover it.
TEST_F(OwnFilesTest, TheAuditKeyInsideTheWorkspaceIsHidden) {
  fs::create_directories(home_ + "/keys");
  fs::permissions(home_ + "/keys", fs::perms::owner_all);
  start_moatd({"--audit-key", home_ + "/keys/signing.key", "--audit-dir", dir_.path() + "/audit"});
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", home_}, {"headless", true}});
  ASSERT_EQ(c.read_frame().value("type", ""), "welcome") << moatd_log();
  ASSERT_NE(slurp(home_ + "/keys/signing.key").find("PRIVATE KEY"), std::string::npos);
  json r = call(c, "bash", {{"command", "cat keys/signing.key; echo '<end>'"}});
  EXPECT_NE(r.dump().find("<end>"), std::string::npos) << r.dump();
  EXPECT_EQ(r.dump().find("PRIVATE KEY"), std::string::npos) << r.dump();
  call(c, "bash", {{"command", "cp /dev/null keys/signing.key.pub"}});
  EXPECT_NE(slurp(home_ + "/keys/signing.key.pub").find("PUBLIC KEY"), std::string::npos);
}

// `moat run --sessions-dir` hands the directory to the private moatd it starts, which keeps it
// read-only like its own (moatd itself never writes session files).
TEST_F(OwnFilesTest, MoatRunKeepsItsSessionsDirectoryOutOfTheSandboxsReach) {
  const std::string script = dir_.path() + "/plant.jsonl";
  std::ofstream(script)
      << R"({"tool_calls":[{"name":"bash","arguments":{"command":"touch my-sessions/planted"}}]})"
      << "\n"
      << R"({"text":"done"})"
      << "\n";
  e2e::Run r = run({moat_bin(), "run", "--headless", "--allow-home-workspace", "--model",
                    "replay:" + script, "-C", home_, "--sessions-dir", home_ + "/my-sessions",
                    "--audit-dir", dir_.path() + "/audit", "plant a session file"},
                   {"HOME=" + home_, "XDG_CONFIG_HOME=" + home_ + "/.config",
                    "XDG_STATE_HOME=" + home_ + "/.local/state", "MOATD_BIN=" + moatd_bin()},
                   120);
  EXPECT_NE(r.out.find("warning: workspace"), std::string::npos) << r.out;  // issue 27 item 13
  EXPECT_FALSE(fs::exists(home_ + "/my-sessions/planted")) << r.out;
  bool session_written = false;  // by moat itself, on the host
  for (const auto& e : fs::recursive_directory_iterator(home_ + "/my-sessions"))
    session_written |= e.path().extension() == ".jsonl";
  EXPECT_TRUE(session_written) << r.out;
}

// Issue 27 item 13: `-C ~` (or a directory above the home) puts everything under the home in
// the sandbox's reach. A headless run and `moat sandbox exec` (nobody watches either) refuse
// it unless --allow-home-workspace says it is meant; with the flag they warn and run.
TEST_F(OwnFilesTest, AHeadlessRunAtOrAboveTheHomeIsRefusedWithoutTheFlag) {
  const std::string script = dir_.path() + "/done.jsonl";
  std::ofstream(script) << R"({"text":"done"})"
                        << "\n";
  const std::vector<std::string> env = {"HOME=" + home_, "XDG_CONFIG_HOME=" + home_ + "/.config",
                                        "XDG_STATE_HOME=" + home_ + "/.local/state",
                                        "MOATD_BIN=" + moatd_bin()};
  for (const std::string& ws : {home_, dir_.path()}) {
    SCOPED_TRACE(ws);
    const SplitRun r = run_split({moat_bin(), "run", "--headless", "--ephemeral", "--model",
                                  "replay:" + script, "-C", ws, "a task"},
                                 env, 120);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--allow-home-workspace"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the home directory '" + home_ + "'"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  const SplitRun ok =
      run_split({moat_bin(), "run", "--headless", "--ephemeral", "--allow-home-workspace",
                 "--model", "replay:" + script, "-C", home_, "a task"},
                env, 120);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.err.find("warning: workspace '" + home_ + "' is the home directory"),
            std::string::npos)
      << ok.err;
}

TEST_F(OwnFilesTest, SandboxExecAtOrAboveTheHomeIsRefusedWithoutTheFlagAndWarnsWithIt) {
  const std::vector<std::string> env = {"HOME=" + home_, "XDG_CONFIG_HOME=" + home_ + "/.config",
                                        "XDG_STATE_HOME=" + home_ + "/.local/state",
                                        "MOATD_BIN=" + moatd_bin()};
  for (const std::string& ws : {home_, dir_.path()}) {
    SCOPED_TRACE(ws);
    const SplitRun r =
        run_split({moat_bin(), "sandbox", "exec", "-C", ws, "--", "touch", "planted"}, env, 60);
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_NE(r.err.find("--allow-home-workspace"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(ws + "/planted"));
  }
  const SplitRun ok = run_split({moat_bin(), "sandbox", "exec", "--allow-home-workspace", "-C",
                                 home_, "--", "touch", "planted"},
                                env, 60);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.err.find("warning: workspace '" + home_ + "' is the home directory"),
            std::string::npos)
      << ok.err;
  EXPECT_TRUE(fs::exists(home_ + "/planted"));
}

TEST_F(OwnFilesTest, AWorkspaceInsideMoatsOwnDirectoryIsRefused) {
  start_moatd({"--audit-dir", dir_.path() + "/audit"});
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", home_ + "/.config/moat"}});
  json e = c.read_frame();
  EXPECT_EQ(e.value("type", ""), "error") << e.dump();
  EXPECT_EQ(e.value("code", ""), "workspace") << e.dump();
  EXPECT_NE(e.value("message", "").find("one of moat's own directories"), std::string::npos)
      << e.dump();
}

}  // namespace
}  // namespace moat::e2e

namespace moat::e2e {
namespace {

// With the workspace at the user's home (or a dotfiles repository the home links into), the
// code rewrote ~/.bashrc, planted ~/.local/bin/ls and an ssh key: the next terminal, `ls` or
// ssh login ran the code as the person. The home's startup files and program directories that
// exist are masked read-only like moat's own.
TEST_F(OwnFilesTest, AWorkspaceAtTheUsersHomeCannotChangeItsShellGitOrSshStartupFiles) {
  fs::create_directories(home_ + "/.local/bin");
  fs::create_directories(home_ + "/.ssh");
  fs::create_directories(home_ + "/dotfiles");
  std::ofstream(home_ + "/dotfiles/zshrc") << "# zsh\n";
  fs::create_symlink(home_ + "/dotfiles/zshrc", home_ + "/.zshrc");  // stow's layout
  std::ofstream(home_ + "/.bashrc") << "# bash\n";
  std::ofstream(home_ + "/.gitconfig") << "[user]\n";
  start_moatd({"--audit-dir", dir_.path() + "/audit"});
  for (const std::string& ws : {home_, home_ + "/dotfiles"}) {
    RawClient c(socket_);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws}, {"headless", true}});
    json welcome = c.read_frame();
    ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
    json ok = call(c, "bash", {{"command", "touch made"}});
    ASSERT_TRUE(fs::exists(ws + "/made")) << ok.dump() << moatd_log();
    for (const char* cmd :
         {"echo evil >> .bashrc", "printf '[core]\\n\\tpager = evil\\n' >> .gitconfig",
          "printf '#!/bin/sh\\n' > .local/bin/ls", "echo key >> .ssh/authorized_keys",
          "echo evil >> zshrc", "mv .bashrc .bashrc.old"})
      call(c, "bash", {{"command", cmd}});
    c.send_json({{"type", "bye"}});
    c.read_frame();
  }
  EXPECT_EQ(slurp(home_ + "/.bashrc"), "# bash\n");
  EXPECT_EQ(slurp(home_ + "/.gitconfig"), "[user]\n");
  EXPECT_EQ(slurp(home_ + "/dotfiles/zshrc"), "# zsh\n");
  EXPECT_FALSE(fs::exists(home_ + "/.local/bin/ls"));
  EXPECT_FALSE(fs::exists(home_ + "/.ssh/authorized_keys"));
  EXPECT_FALSE(fs::exists(home_ + "/.bashrc.old"));
}

// Issue 27 item 13: with the workspace at the home, a startup file the home does not have
// (~/.zshrc, ~/.gitconfig, ~/.profile) was created by the code and kept, and the person's next
// shell or git ran it. It cannot be masked (that needs a placeholder in the home), so moatd
// removes it when the call ends, before the result, and the result says so.
TEST_F(OwnFilesTest, AStartupFileTheHomeLacksThatACallCreatesIsRemovedBeforeItsResult) {
  start_moatd({"--audit-dir", dir_.path() + "/audit"});
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", home_}, {"headless", true}});
  json welcome = c.read_frame();
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  json r = call(c, "bash",
                {{"command",
                  "printf '[core]\\n\\tfsmonitor = touch /tmp/moat-evil\\n' > .gitconfig && "
                  "echo evil > .zshrc && echo evil > .profile && mkdir -p .local/bin && "
                  "echo made > .local/bin/ls && cat .zshrc"}});
  EXPECT_NE(r.dump().find("evil"), std::string::npos) << r.dump();  // the call made them
  for (const char* name : {".gitconfig", ".zshrc", ".profile", ".local/bin"}) {
    EXPECT_FALSE(fs::exists(home_ + "/" + name)) << name;
    EXPECT_NE(r.dump().find("[moat removed " + home_ + "/" + name + ": a protected path"),
              std::string::npos)
        << name << " " << r.dump();
  }
  c.send_json({{"type", "bye"}});
  c.read_frame();
}

// Issue 27 item 17: `git commit` inside failed (no author: the host's ~/.gitconfig is not in
// the sandbox), and `git config user.name` and `git -c user.email=...` were refused. The
// person's user.name and user.email, and nothing else of their git config, are the sandbox's
// global git config now, and the policy lets the code set them.
using GitIdentityTest = OwnFilesTest;

TEST_F(GitIdentityTest, ACommitInsideHasThePersonsIdentityAndTheCodeMaySetIt) {
  std::ofstream(home_ + "/.gitconfig")
      << "[user]\n\tname = Ada \\\"The\\\" Lovelace\n\temail = ada@example.org\n"
         "[core]\n\tfsmonitor = touch /tmp/moat-fsmonitor-ran\n[alias]\n\tst = !sh\n";
  const std::string ws = dir_.path() + "/ws";
  fs::create_directories(ws);
  start_moatd({"--audit-dir", dir_.path() + "/audit"});
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws}, {"headless", true}});
  json welcome = c.read_frame();
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  auto out = [&](const std::string& cmd) {
    json r = call(c, "bash", {{"command", cmd}});
    EXPECT_FALSE(r.value("isError", true)) << cmd << "\n" << r.dump();
    return r.dump();
  };
  const std::string first = out(
      "git init -q . && echo a > a && git add a && git commit -qm first && "
      "git log -1 --format='who=%an <%ae>'");
  EXPECT_NE(first.find("who=Ada \\\"The\\\" Lovelace <ada@example.org>"), std::string::npos)
      << first;
  // Only the identity: the host's fsmonitor and aliases stay on the host.
  const std::string global = out("cat /tmp/.gitconfig");
  EXPECT_EQ(global.find("fsmonitor"), std::string::npos) << global;
  EXPECT_EQ(global.find("alias"), std::string::npos) << global;
  EXPECT_NE(out("git config --global user.name Bob && git commit -q --allow-empty -m second && "
                "git log -1 --format=who=%an")
                .find("who=Bob"),
            std::string::npos);
  EXPECT_NE(out("git -c user.email=c@example.org commit -q --allow-empty -m third && "
                "git log -1 --format=who=%ae")
                .find("who=c@example.org"),
            std::string::npos);
  c.send_json({{"type", "bye"}});
  c.read_frame();
  EXPECT_EQ(slurp(home_ + "/.gitconfig").find("Bob"), std::string::npos);  // the host's is as it was
}

}  // namespace
}  // namespace moat::e2e


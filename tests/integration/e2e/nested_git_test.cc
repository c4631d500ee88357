// tests/integration/e2e/nested_git_test.cc: a `.git` a call creates below the workspace root is
// gone from the host before the call's result is sent, and the audit and the result say so
// (issue 26 item 13): a nested repository's config runs commands at the person's next git
// command inside it. Through the real moatd.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "e2e_support.h"
#include "moatd_fixture.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

bool exists_nofollow(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class NestedGitTest : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    make_workspace();
    fs::create_directories(dir_.path() + "/no-policy");
    fs::create_directories(dir_.path() + "/user");
  }
  // The person's policy layer, as a file of theirs (empty: the built-in default only).
  void start_moatd(const std::string& user_policy = "") {
    if (!user_policy.empty()) std::ofstream(dir_.path() + "/user/policy.toml") << user_policy;
    MoatdProcess::start_moatd({"--audit-dir", dir_.path() + "/audit", "--system-policy-dir",
                               dir_.path() + "/no-policy", "--user-policy-dir",
                               dir_.path() + "/user"});
  }
  std::string hello(RawClient& c) {
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    json welcome = c.read_frame();
    EXPECT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
    return welcome.value("audit", "");
  }
  json bash(RawClient& c, const std::string& id, const std::string& command) {
    c.send_json(
        {{"type", "call"}, {"id", id}, {"tool", "bash"}, {"arguments", {{"command", command}}}});
    json r = c.read_result();
    EXPECT_FALSE(r.value("isError", true)) << r.dump();
    return r;
  }
  void bye(RawClient& c) {
    c.send_json({{"type", "bye"}});
    EXPECT_EQ(c.read_frame().value("type", ""), "bye");
  }
  static std::string text_of(const json& result) {
    std::string out;
    for (const json& part : result.value("content", json::array()))
      out += part.value("text", "") + "\n";
    return out;
  }
  // The call `id`'s record's nested_git_removed, by path ({} when it has none).
  static std::map<std::string, json> removed_in(const std::string& log, const std::string& id) {
    std::ifstream in(log);
    std::map<std::string, json> out;
    for (std::string line; std::getline(in, line);) {
      json r = json::parse(line, nullptr, false);
      if (!r.is_object() || r.value("call_id", "") != id || !r.contains("files_changed")) continue;
      if (!r.contains("nested_git_removed")) continue;
      EXPECT_NE(r.value("nested_git_reason", "").find("[workspace] nested_git"), std::string::npos);
      for (const json& g : r["nested_git_removed"]) out[g.value("path", "")] = g;
    }
    return out;
  }
  void verify(const std::string& log) {
    e2e::Run v = run({moat_bin(), "audit", "verify", log});
    EXPECT_EQ(v.exit_code, 0) << v.out;
  }
};

constexpr const char* kPlant =
    "git init -q docs && mkdir -p notes/.git && "
    "printf '[core]\\n\\tfsmonitor = touch /tmp/moat-fsmonitor-ran\\n' > notes/.git/config && "
    "ls -d docs/.git notes/.git";

TEST_F(NestedGitTest, ARepositoryACallCreatesIsRemovedBeforeItsResultAndTheAuditAndResultSaySo) {
  start_moatd();
  RawClient c(socket_);
  const std::string log = hello(c);
  const json r = bash(c, "plant", kPlant);
  // Gone before the result came back: the person's git never sees them after moat answers.
  EXPECT_FALSE(exists_nofollow(ws_ + "/docs/.git"));
  EXPECT_FALSE(exists_nofollow(ws_ + "/notes/.git"));
  EXPECT_TRUE(fs::is_directory(ws_ + "/docs"));  // only the .git: the folder stays
  const std::string text = text_of(r);
  EXPECT_NE(text.find("docs/.git"), std::string::npos) << text;  // the call itself saw them
  EXPECT_NE(text.find("[moat removed " + ws_ + "/docs/.git: a nested .git runs code on the host"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[moat removed " + ws_ + "/notes/.git:"), std::string::npos) << text;
  bye(c);
  const auto removed = removed_in(log, "plant");
  ASSERT_EQ(removed.size(), 2u) << slurp(log);
  EXPECT_EQ(removed.at(ws_ + "/docs/.git").value("type", ""), "directory");
  EXPECT_TRUE(removed.at(ws_ + "/docs/.git").value("removed", false));
  EXPECT_TRUE(removed.at(ws_ + "/notes/.git").value("removed", false));
  verify(log);
}

TEST_F(NestedGitTest, APolicyThatAllowsNestedGitKeepsIt) {
  start_moatd("schema = 1\n[workspace]\nnested_git = \"allow\"\n");
  RawClient c(socket_);
  const std::string log = hello(c);
  const json r = bash(c, "plant", kPlant);
  EXPECT_TRUE(fs::is_directory(ws_ + "/docs/.git"));
  EXPECT_TRUE(fs::exists(ws_ + "/notes/.git/config"));
  EXPECT_EQ(text_of(r).find("[moat removed"), std::string::npos) << text_of(r);
  bye(c);
  EXPECT_TRUE(removed_in(log, "plant").empty());
  EXPECT_TRUE(fs::is_directory(ws_ + "/docs/.git"));  // and at session end
  verify(log);
}

TEST_F(NestedGitTest, ANestedRepositoryPresentWhenTheSessionStartsIsLeftAlone) {
  fs::create_directories(ws_ + "/lib/.git");
  std::ofstream(ws_ + "/lib/.git/config") << "[core]\n\tbare = false\n";
  fs::create_directories(ws_ + "/sub");
  std::ofstream(ws_ + "/sub/.git") << "gitdir: ../.git/modules/sub\n";
  start_moatd();
  RawClient c(socket_);
  const std::string log = hello(c);
  const json r = bash(c, "edit", "echo hi > lib/README && echo hi > sub/README && git init -q new");
  EXPECT_EQ(slurp(ws_ + "/lib/.git/config"), "[core]\n\tbare = false\n");
  EXPECT_EQ(slurp(ws_ + "/sub/.git"), "gitdir: ../.git/modules/sub\n");
  EXPECT_FALSE(exists_nofollow(ws_ + "/new/.git"));  // only the new one goes
  bye(c);
  const auto removed = removed_in(log, "edit");
  ASSERT_EQ(removed.size(), 1u) << slurp(log);
  EXPECT_TRUE(removed.count(ws_ + "/new/.git"));
  EXPECT_TRUE(fs::exists(ws_ + "/lib/.git/config"));
  EXPECT_TRUE(fs::exists(ws_ + "/sub/.git"));
  verify(log);
}

TEST_F(NestedGitTest, ASymlinkPlantedAsDotGitIsRemovedAsALinkAndItsTargetIsUntouched) {
  const std::string outside = dir_.path() + "/outside";
  fs::create_directories(outside + "/hooks");
  std::ofstream(outside + "/config") << "[core]\n";
  fs::create_directories(ws_ + "/keep");
  std::ofstream(ws_ + "/keep/config") << "mine\n";
  start_moatd();
  RawClient c(socket_);
  const std::string log = hello(c);
  const json r =
      bash(c, "link", "mkdir -p a b && ln -s " + outside + " a/.git && ln -s ../keep b/.git");
  EXPECT_FALSE(exists_nofollow(ws_ + "/a/.git"));
  EXPECT_FALSE(exists_nofollow(ws_ + "/b/.git"));
  EXPECT_EQ(slurp(outside + "/config"), "[core]\n");
  EXPECT_TRUE(fs::is_directory(outside + "/hooks"));
  EXPECT_EQ(slurp(ws_ + "/keep/config"), "mine\n");
  bye(c);
  const auto removed = removed_in(log, "link");
  ASSERT_EQ(removed.size(), 2u) << slurp(log);
  EXPECT_EQ(removed.at(ws_ + "/a/.git").value("type", ""), "symlink");
  EXPECT_TRUE(removed.at(ws_ + "/a/.git").value("removed", false));
  verify(log);
}

// Issue 27 item 14: the sandbox showed `.env/`, `.moat/` and an empty read-only `.git/` where
// the host had none (the masks of missing protected paths), so `test -e .env` was true and
// `git init` failed. Now only what exists is masked, and a protected name a call creates (here
// by make, a program the policy lets run, not by the model's line) is gone before its result.
using ProtectedNamesTest = NestedGitTest;

TEST_F(ProtectedNamesTest, NoneIsShownWhereTheHostHasNoneAndOneACallCreatesIsRemoved) {
  std::ofstream(ws_ + "/Makefile")
      << "plant:\n\techo SECRET=1 > .env\n\tmkdir -p .moat && echo 'schema = 1' > "
         ".moat/policy.toml\n\techo 'echo hi' > .envrc\n\tprintf '[core]\\n\\tfsmonitor = "
         "touch /tmp/moat-fsmonitor-ran\\n' >> .git/config\n\tmkdir -p .git/hooks && echo "
         "'#!/bin/sh' > .git/hooks/pre-commit\n";
  start_moatd();
  RawClient c(socket_);
  const std::string log = hello(c);
  const std::string shown = text_of(bash(
      c, "probe",
      "test -e .env && echo env-shown; test -e .moat && echo moat-shown; "
      "test -e .git && echo git-shown; echo probed"));
  EXPECT_NE(shown.find("probed"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("-shown"), std::string::npos) << shown;
  const std::string init = text_of(bash(c, "init", "git init -q . && echo inited"));
  EXPECT_NE(init.find("inited"), std::string::npos) << init;
  EXPECT_TRUE(fs::exists(ws_ + "/.git/HEAD"));  // the repository stays; its config and hooks go
  EXPECT_FALSE(exists_nofollow(ws_ + "/.git/config"));
  const std::string text = text_of(bash(c, "plant", "make -s plant"));
  for (const char* name : {".env", ".moat", ".git/config", ".git/hooks"}) {
    EXPECT_FALSE(exists_nofollow(ws_ + "/" + name)) << name;
    EXPECT_NE(text.find("[moat removed " + ws_ + "/" + name + ": a protected path"),
              std::string::npos)
        << name << "\n"
        << text;
  }
  EXPECT_TRUE(fs::exists(ws_ + "/.git/HEAD"));
  const std::string status = text_of(bash(c, "status", "git status --short && echo clean"));
  EXPECT_NE(status.find("clean"), std::string::npos) << status;
  bye(c);
  const auto removed = removed_in(log, "plant");
  ASSERT_EQ(removed.size(), 4u) << slurp(log);
  // A project's own host-executed file is the agent's to write: named at the session's end
  // (HostFilesTest), held back by batch --apply, not removed.
  EXPECT_TRUE(fs::exists(ws_ + "/.envrc"));
  EXPECT_EQ(removed.at(ws_ + "/.moat").value("type", ""), "directory");
  EXPECT_NE(removed.at(ws_ + "/.env").value("reason", "").find("protected path"),
            std::string::npos);
  verify(log);
}

// What exists on the host is still masked: the same names, present when the session starts,
// are read-only inside and kept.
TEST_F(ProtectedNamesTest, OnesTheHostHasStayMaskedAndAreKept) {
  fs::create_directories(ws_ + "/.moat");
  std::ofstream(ws_ + "/.moat/policy.toml") << "schema = 1\n";
  std::ofstream(ws_ + "/.envrc") << "export A=1\n";
  std::ofstream(ws_ + "/Makefile") << "plant:\n\t-echo bad > .envrc\n\t-echo bad > .moat/policy.toml\n";
  start_moatd();
  RawClient c(socket_);
  const std::string log = hello(c);
  const std::string text = text_of(bash(c, "plant", "make -s plant"));
  EXPECT_EQ(slurp(ws_ + "/.envrc"), "export A=1\n") << text;
  EXPECT_EQ(slurp(ws_ + "/.moat/policy.toml"), "schema = 1\n");
  EXPECT_EQ(text.find("[moat removed"), std::string::npos) << text;
  bye(c);
  verify(log);
}

}  // namespace
}  // namespace moat::e2e


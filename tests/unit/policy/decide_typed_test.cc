// tests/unit/policy/decide_typed_test.cc: Policy::decide_typed, a command line the person
// typed (`moat sandbox exec CMD`, a batch manifest's check; issue 25, item 4): the person's
// decision, bound only by the organisation's (system) and the command line's (cli) denies and
// asks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/permissive.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using ::testing::HasSubstr;
using testing::PolicyWorld;
using testing::write_file;

// What the new user typed, each refused by the default before.
constexpr const char* kTyped[] = {
    "python3 x.py",
    "bash -c \"cmake -S . -B b && cmake --build b && ctest\"",
    "./script.sh",
    "curl x",
    "python3 -c 'print(1)'",
    "frobnicate --all",        // no rule: defaults.command
    "$(echo make)",            // unparseable_shell
    "LD_PRELOAD=./x.so make",  // builtin.code-env
};

TEST(DecideTyped, WhatThePersonTypedRunsUnderTheBuiltinDefault) {
  PolicyWorld w;
  w.options.headless = true;
  write_file(w.workspace + "/script.sh", "#!/bin/sh\nmake\n", 0755);
  auto p = w.load();
  ASSERT_TRUE(p);
  for (const char* line : kTyped) {
    SCOPED_TRACE(line);
    Decision d = p->decide_typed(line, w.workspace);
    EXPECT_EQ(d.verdict, Verdict::kAllow) << d.reason;
    EXPECT_EQ(d.decided_by, DecidedBy::kUser);
    EXPECT_EQ(d.deciding.id, "person");
    EXPECT_EQ(d.deciding.layer, "user");
    EXPECT_EQ(d.reason, "typed by the person");
    EXPECT_FALSE(d.headless_downgraded);
  }
  // The audit still shows what matched.
  Decision curl = p->decide_typed("curl x", w.workspace);
  std::vector<std::string> ids;
  for (const auto& m : curl.matched) ids.push_back(m.id);
  EXPECT_THAT(ids, ::testing::Contains("default.network-tools"));
  EXPECT_FALSE(curl.detail()["units"].empty());
}

TEST(DecideTyped, ASystemDenyOrAskStillBindsWhatThePersonTyped) {
  PolicyWorld w;
  w.options.headless = true;
  if (!w.set_system_layer(
          "schema = 1\n"
          "[[command]]\nid = \"org.no-curl\"\ndecision = \"deny\"\n"
          "program = \"curl\"\nreason = \"Use the mirror.\"\n"
          "[[command]]\nid = \"org.ask-ssh\"\ndecision = \"ask\"\nprogram = \"ssh\"\n"))
    GTEST_SKIP() << "a system layer needs a root-owned directory";
  auto p = w.load();
  ASSERT_TRUE(p);
  Decision d = p->decide_typed("make && curl x", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "org.no-curl");
  EXPECT_EQ(d.deciding.layer, "system");
  EXPECT_EQ(d.decided_by, DecidedBy::kPolicy);
  EXPECT_THAT(d.reason, HasSubstr("Use the mirror."));
  Decision ssh = p->decide_typed("ssh h", w.workspace);
  EXPECT_EQ(ssh.verdict, Verdict::kDeny);  // ask, headless
  EXPECT_TRUE(ssh.headless_downgraded);
  EXPECT_EQ(ssh.deciding.id, "org.ask-ssh");
  // The system layer's defaults are not rules the person's line met: they do not bind it.
  EXPECT_EQ(p->decide_typed("frobnicate", w.workspace).verdict, Verdict::kAllow);
}

TEST(DecideTyped, ACliDenyStillRefusesWhatThePersonTyped) {
  PolicyWorld w;
  write_file(w.root + "/cli.toml",
             "schema = 1\n[[command]]\nid = \"cli.no-python\"\n"
             "decision = \"deny\"\nprogram = \"python3\"\n");
  w.options.extra_files = {w.root + "/cli.toml"};
  auto p = w.load();
  ASSERT_TRUE(p);
  Decision d = p->decide_typed("python3 x.py", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "cli.no-python");
  EXPECT_EQ(d.deciding.layer, "cli");
  EXPECT_EQ(p->decide_typed("make", w.workspace).verdict, Verdict::kAllow);
}

TEST(DecideTyped, AUserOrProjectDenyDoesNotBindThePerson) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/10.toml",
             "schema = 1\n[[command]]\nid = \"user.no-make\"\n"
             "decision = \"deny\"\nprogram = \"make\"\n");
  auto p = w.load();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->decide_command("make", w.workspace).verdict, Verdict::kDeny);  // the model's
  EXPECT_EQ(p->decide_typed("make", w.workspace).verdict, Verdict::kAllow);   // the person's
}

TEST(DecideTyped, APermissivePolicyForwardsIt) {
  PolicyWorld w;
  write_file(w.root + "/cli.toml",
             "schema = 1\n[[command]]\nid = \"cli.no-curl\"\n"
             "decision = \"deny\"\nprogram = \"curl\"\n");
  w.options.extra_files = {w.root + "/cli.toml"};
  auto p = make_permissive(w.load());
  EXPECT_EQ(p->decide_typed("curl x", w.workspace).deciding.id, "cli.no-curl");
  EXPECT_EQ(p->decide_typed("python3 -c x", w.workspace).decided_by, DecidedBy::kUser);
}

}  // namespace
}  // namespace moat::policy

// tests/unit/policy/loosen_test.cc: the built-in default is a starting point the person's
// (user) layer may loosen (issue 25, item 3): a user allow beats a built-in ask for that
// action, a user default, [exec] key or ceiling replaces the built-in one. The organisation's
// (system) layer, built-in denies and managed_allows_only still bind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy/explain.h"
#include "policy/layer.h"
#include "policy/toml_load.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using ::testing::HasSubstr;
using testing::PolicyWorld;
using testing::write_file;

constexpr char kUserPython[] =
    "schema = 1\n[[command]]\nid = \"user.python\"\ndecision = \"allow\"\n"
    "program = \"python3\"\n";

std::vector<std::string> ids_of(const Decision& d) {
  std::vector<std::string> ids;
  for (const auto& m : d.matched) ids.push_back(m.id);
  return ids;
}

TEST(Loosen, AUserAllowBeatsABuiltinAsk) {
  PolicyWorld w;
  w.options.headless = true;
  write_file(w.options.user_dir + "/10.toml", kUserPython);
  auto p = w.load();
  ASSERT_TRUE(p);
  Decision d = p->decide_command("python3 -c 'print(1)'", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kAllow) << d.reason;
  EXPECT_EQ(d.deciding.id, "user.python");
  EXPECT_THAT(ids_of(d), ::testing::Contains("default.inline-code"));  // still shown as matched
  // And when a call starts it.
  Decision started = p->decide_exec(
      ExecFacts{{"python3", "-c", "x"}, w.bin + "/python3", w.bin + "/python3.11", w.workspace});
  EXPECT_EQ(started.verdict, Verdict::kAllow);
  EXPECT_EQ(started.deciding.id, "user.python");
  EXPECT_TRUE(started.flagged.empty());
}

TEST(Loosen, AUserAllowLoosensOnlyTheUnitItMatches) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/10.toml", kUserPython);
  auto p = w.load();
  ASSERT_TRUE(p);
  Decision d = p->decide_command("python3 -c x && node -e y", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kAsk);
  EXPECT_EQ(d.deciding.id, "default.inline-code");
  const auto units = d.detail()["units"];
  ASSERT_EQ(units.size(), 2u);
  EXPECT_EQ(units[0]["decision"], "allow");
  EXPECT_EQ(units[1]["decision"], "ask");
}

TEST(Loosen, AUserAllowDoesNotBeatABuiltinDeny) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/10.toml",
             "schema = 1\n[[path]]\nid = \"user.ssh\"\ndecision = \"allow\"\n"
             "access = [\"read\"]\npaths = [\"~/.ssh/**\"]\n");
  auto p = w.load();
  ASSERT_TRUE(p);
  Decision d = p->decide_path(w.home + "/.ssh/id_rsa", Access::kRead);
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "default.secrets");
}

TEST(Loosen, AUserAllowDoesNotBeatASystemAsk) {
  PolicyWorld w;
  if (!w.set_system_layer("schema = 1\n[[command]]\nid = \"org.inline\"\ndecision = \"ask\"\n"
                          "program = \"python3\"\nany_flag = [\"-c\"]\n"))
    GTEST_SKIP() << "a system layer needs a root-owned directory";
  write_file(w.options.user_dir + "/10.toml", kUserPython);
  auto p = w.load();
  ASSERT_TRUE(p);
  Decision d = p->decide_command("python3 -c x", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kAsk);
  EXPECT_EQ(d.deciding.id, "org.inline");
}

TEST(Loosen, AProjectAllowDoesNotBeatABuiltinAsk) {
  PolicyWorld w;
  write_file(w.workspace + "/.moat/policy.toml",
             "schema = 1\n[[command]]\nid = \"proj.python\"\ndecision = \"allow\"\n"
             "program = \"python3\"\n");
  w.options.trust_project = true;
  auto p = w.load();
  ASSERT_TRUE(p);
  Decision d = p->decide_command("python3 -c x", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kAsk);
  EXPECT_EQ(d.deciding.id, "default.inline-code");
}

// The built-in default and a system layer are never loaded together (an organisation's layer
// replaces the default), so the layers are put together by hand: a user allow that the
// organisation's managed_allows_only ignores loosens nothing.
TEST(Loosen, AUserAllowUnderManagedAllowsOnlyLoosensNothing) {
  PolicyWorld w;
  auto parse = [](std::string_view text, const std::string& file) {
    ParseOptions o;
    o.file = file;
    auto p = parse_policy_text(text, o, nullptr);
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message());
    return std::move(*p);
  };
  std::vector<LoadedLayer> layers;
  layers.push_back({"builtin", parse(builtin_default_policy_text(), kBuiltinDefaultFile)});
  layers.push_back({"system", parse("schema = 1\n[constraints]\nmanaged_allows_only = "
                                    "[\"command\"]\n",
                                    "/etc/moat/policy.d/00-org.toml")});
  layers.push_back({"user", parse(kUserPython, "/home/u/10.toml")});
  auto p = build_policy(std::move(layers), w.options, {});
  ASSERT_TRUE(p.has_value()) << p.error().message();
  Decision d = (*p)->decide_command("python3 -c x", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kAsk);
  EXPECT_EQ(d.deciding.id, "default.inline-code");
}

TEST(Loosen, ExplainShowsWhichRuleWasLoosenedByWhichUserRule) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/10.toml", kUserPython);
  auto p = w.load();
  ASSERT_TRUE(p);
  const std::string line = "python3 -c x";
  Decision d = p->decide_command(line, w.workspace);
  EXPECT_THAT(
      explain_text(d, *p, line),
      HasSubstr("loosened: default.inline-code (ask, builtin) by user.python (allow, user)"));
  auto j = explain_json(d, *p, line);
  ASSERT_EQ(j["loosened"].size(), 1u);
  EXPECT_EQ(j["loosened"][0]["rule"]["id"], "default.inline-code");
  EXPECT_EQ(j["loosened"][0]["by"]["id"], "user.python");
  EXPECT_EQ(j["units"][0]["loosened"][0]["by"]["layer"], "user");
}

TEST(Loosen, AUserDefaultReplacesTheBuiltinOne) {
  PolicyWorld w;
  w.options.headless = true;
  write_file(w.options.user_dir + "/10.toml", "schema = 1\ndefaults = { command = \"allow\" }\n");
  w.add_program("frobnicate");
  auto p = w.load();
  ASSERT_TRUE(p);
  Decision d = p->decide_command("frobnicate --all", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kAllow) << d.reason;
  EXPECT_EQ(d.deciding.id, "defaults.command");
  EXPECT_EQ(d.deciding.layer, "user");
}

TEST(Loosen, AUserDefaultDoesNotReplaceASystemOne) {
  PolicyWorld w;
  if (!w.set_system_layer("schema = 1\ndefaults = { command = \"ask\" }\n"))
    GTEST_SKIP() << "a system layer needs a root-owned directory";
  write_file(w.options.user_dir + "/10.toml", "schema = 1\ndefaults = { command = \"allow\" }\n");
  w.add_program("frobnicate");
  auto p = w.load();
  ASSERT_TRUE(p);
  Decision d = p->decide_command("frobnicate", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kAsk);
  EXPECT_EQ(d.deciding.layer, "system");
  EXPECT_THAT(p->notices().back(), HasSubstr("defaults.command = \"allow\" is ignored"));
}

TEST(Loosen, AProjectOrCliDefaultOnlyTightens) {
  PolicyWorld w;
  write_file(w.workspace + "/.moat/policy.toml",
             "schema = 1\ndefaults = { command = \"allow\" }\n");
  w.options.trust_project = true;
  w.add_program("frobnicate");
  auto p = w.load();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->decide_command("frobnicate", w.workspace).verdict, Verdict::kAsk);
  EXPECT_EQ(p->decide_command("frobnicate", w.workspace).deciding.layer, "builtin");
}

TEST(Loosen, AUserCeilingReplacesTheBuiltinOneButNeverExceedsABindingLayer) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/10.toml",
             "schema = 1\nresources = { wall_time = \"1h\", memory = \"8GiB\" }\n");
  auto p = w.load();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->resources().wall_time_s, 3600);  // the built-in 10m is a starting point
  EXPECT_EQ(p->resources().memory_bytes, std::int64_t{8} << 30);
  write_file(w.root + "/cli.toml", "schema = 1\nresources = { wall_time = \"20m\" }\n");
  w.options.extra_files = {w.root + "/cli.toml"};
  auto narrowed = w.load();
  EXPECT_EQ(narrowed->resources().wall_time_s, 1200);
  EXPECT_EQ(narrowed->resources().memory_bytes, std::int64_t{8} << 30);
  w.options.extra_files.clear();
  if (!w.set_system_layer("schema = 1\nresources = { memory = \"2GiB\" }\n"))
    GTEST_SKIP() << "a system layer needs a root-owned directory";
  auto org = w.load();
  EXPECT_EQ(org->resources().memory_bytes, std::int64_t{2} << 30);
  EXPECT_EQ(org->resources().wall_time_s, 3600);  // no system ceiling: the user's
}

// [workspace] nested_git (issue 26 item 13): removed unless allowed; the person's layer may
// allow it, a project or cli layer only keeps it denied, and a system layer binds.
TEST(Loosen, NestedGitIsDeniedByDefaultAUserMayAllowItAndAProjectOrCliMayNot) {
  PolicyWorld w;
  EXPECT_FALSE(w.load()->nested_git_allowed());
  const std::string allow = "schema = 1\n[workspace]\nnested_git = \"allow\"\n";
  write_file(w.workspace + "/.moat/policy.toml", allow);
  w.options.trust_project = true;
  write_file(w.root + "/cli.toml", allow);
  w.options.extra_files = {w.root + "/cli.toml"};
  auto loose = w.load();
  ASSERT_TRUE(loose);
  EXPECT_FALSE(loose->nested_git_allowed());
  EXPECT_THAT(loose->notices().back(), HasSubstr("workspace.nested_git = \"allow\" is ignored"));
  w.options.extra_files.clear();
  w.options.trust_project = false;
  write_file(w.options.user_dir + "/10.toml", allow);
  EXPECT_TRUE(w.load()->nested_git_allowed());
  if (!w.set_system_layer("schema = 1\n[workspace]\nnested_git = \"deny\"\n"))
    GTEST_SKIP() << "a system layer needs a root-owned directory";
  EXPECT_FALSE(w.load()->nested_git_allowed());
}

}  // namespace
}  // namespace moat::policy

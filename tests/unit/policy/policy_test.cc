// tests/unit/policy/policy_test.cc: loading layers and combining them, through the Policy
// interface moatd uses.
#include "policy/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "policy/layer.h"
#include "policy/schema.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::PolicyWorld;
using testing::write_file;

TEST(Policy, DefaultPolicyAllowsTheHeadlessRefactorLoop) {
  PolicyWorld w;
  w.options.headless = true;
  auto p = w.load();
  ASSERT_TRUE(p);
  auto d = p->decide_command("sed -i 's/old_name/new_name/g' src/*.py && sh ./run_tests.sh",
                             w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kAllow) << d.reason << "\n" << d.detail().dump(2);
  EXPECT_EQ(p->decide_tool("bash").verdict, Verdict::kAllow);
  EXPECT_EQ(p->decide_tool("mcp:x:y").verdict, Verdict::kDeny);  // ask, headless
}

TEST(Policy, DecisionsNameTheDecidingRuleWithLayerAndLine) {
  PolicyWorld w;
  auto p = w.load();
  ASSERT_TRUE(p);
  auto d = p->decide_command("git status; rm -rf /", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kAsk);
  EXPECT_EQ(d.deciding.id, "default.rm-recursive");
  EXPECT_EQ(d.deciding.layer, "builtin");
  EXPECT_EQ(d.deciding.file, "builtin:default.toml");
  EXPECT_GT(d.deciding.line, 0);
  EXPECT_EQ(d.decided_by, DecidedBy::kPolicy);
  bool git_seen = false;
  for (const auto& m : d.matched) git_seen = git_seen || m.id == "default.git";
  EXPECT_TRUE(git_seen);
  ASSERT_EQ(d.detail()["units"].size(), 2u);
}

TEST(Policy, HeadlessTurnsAskIntoDeny) {
  PolicyWorld w;
  w.options.headless = true;
  auto p = w.load();
  auto d = p->decide_command("rm -rf build", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_TRUE(d.headless_downgraded);
  EXPECT_EQ(d.deciding.id, "default.rm-recursive");
}

TEST(Policy, PathsOfTheDefaultPolicy) {
  PolicyWorld w;
  auto p = w.load();
  EXPECT_EQ(p->decide_path(w.home + "/.ssh/id_rsa", Access::kRead).deciding.id, "default.secrets");
  EXPECT_EQ(p->decide_path(w.home + "/.ssh/id_rsa", Access::kRead).verdict, Verdict::kDeny);
  EXPECT_EQ(p->decide_path(w.workspace + "/.env", Access::kRead).verdict, Verdict::kDeny);
  EXPECT_EQ(p->decide_path(w.workspace + "/src/a.py", Access::kWrite).verdict, Verdict::kAllow);
  EXPECT_EQ(p->decide_path(w.workspace + "/.git/hooks/pre-commit", Access::kWrite).verdict,
            Verdict::kDeny);
  EXPECT_EQ(p->decide_path(w.workspace + "/.git/config", Access::kWrite).deciding.id,
            "default.protected-meta");
  EXPECT_EQ(p->decide_path(w.workspace + "/.git/config", Access::kRead).verdict, Verdict::kAllow);
  EXPECT_EQ(p->decide_path(w.workspace + "/.moat/policy.toml", Access::kWrite).verdict,
            Verdict::kDeny);
  // (The test's home is under /tmp, which the default lets the sandbox write; /etc is not.)
  auto outside = p->decide_path("/etc/profile.d/x.sh", Access::kWrite);
  EXPECT_EQ(outside.verdict, Verdict::kAsk);
  EXPECT_EQ(outside.deciding.id, "defaults.write");
  EXPECT_EQ(outside.decided_by, DecidedBy::kDefault);
}

TEST(Policy, ResourcesTakeTheMinimumAcrossLayers) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/10.toml",
             "schema = 1\nresources = { memory = \"1GiB\", wall_time = \"1h\" }\n");
  write_file(w.root + "/cli.toml", "schema = 1\nresources = { wall_time = \"20m\" }\n");
  w.options.extra_files = {w.root + "/cli.toml"};
  auto p = w.load();
  ASSERT_TRUE(p);
  const ResourceCeilings r = p->resources();
  EXPECT_EQ(r.memory_bytes, std::int64_t{1} << 30);
  // The cli's 20m is lower than the user's 1h (which replaced the built-in default's 10m:
  // Loosen.AUserCeilingReplacesTheBuiltinOneButNeverExceedsABindingLayer).
  EXPECT_EQ(r.wall_time_s, 1200);
  EXPECT_EQ(r.pids, 512);
  const nlohmann::json j = r.to_json();  // what `moat policy list --json` prints
  for (const char* k :
       {"wall_time_s", "cpu_time_s", "memory_bytes", "pids", "output_bytes", "file_size",
        "open_files", "network_connections", "network_bytes", "network_idle_s", "network_rate"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j.size(), 11u);
  EXPECT_EQ(j["memory_bytes"], std::int64_t{1} << 30);
}

TEST(Policy, ACeilingNoLayerSetsIsSchemaHsDefault) {
  PolicyWorld w;
  w.options.use_builtin_default = false;
  write_file(w.options.user_dir + "/10.toml", "schema = 1\nresources = { pids = 64 }\n");
  auto p = w.load();
  ASSERT_TRUE(p);
  const ResourceCeilings r = p->resources();
  EXPECT_EQ(r.pids, 64);
  EXPECT_EQ(r.wall_time_s, kDefaultResources.wall_time_s);
  EXPECT_EQ(r.cpu_time_s, kDefaultResources.cpu_time_s);
  EXPECT_EQ(r.memory_bytes, kDefaultResources.memory_bytes);
  EXPECT_EQ(r.output_bytes, kDefaultResources.output_bytes);
  EXPECT_EQ(r.file_size, kDefaultResources.file_size);
  EXPECT_EQ(r.open_files, kDefaultResources.open_files);
}

TEST(Policy, ALowerLayerAllowCannotBeatADeny) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/10.toml",
             "schema = 1\n[[command]]\nid = \"user.cat\"\ndecision = \"allow\"\nprogram = \"cat\"\n"
             "[[path]]\nid = \"user.ssh\"\ndecision = \"allow\"\naccess = [\"read\"]\n"
             "paths = [\"~/.ssh/**\"]\n");
  auto p = w.load();
  auto d = p->decide_command("cat < ~/.ssh/id_rsa", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "default.secrets");
  std::vector<std::string> ids;
  for (const auto& m : d.matched) ids.push_back(m.id);
  EXPECT_THAT(ids, ::testing::IsSupersetOf(
                       {"default.secrets", "default.read-only", "user.cat", "user.ssh"}));
}

TEST(Policy, StrictestDefaultWins) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/10.toml",
             "schema = 1\ndefaults = { command = \"deny\", read = \"allow\" }\n");
  auto p = w.load();
  auto d = p->decide_command("frobnicate", w.workspace);
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "defaults.command");
  EXPECT_EQ(d.deciding.layer, "user");
  EXPECT_EQ(d.deciding.line, 2);
}

TEST(Policy, CliFilesOnlyNarrow) {
  PolicyWorld w;
  write_file(w.root + "/cli.toml",
             "schema = 1\ndefaults = { command = \"allow\", write = \"allow\" }\n"
             "[[command]]\nid = \"cli.any\"\ndecision = \"allow\"\nprogram = \"frob\"\n"
             "[[command]]\nid = \"cli.no-make\"\ndecision = \"deny\"\nprogram = \"make\"\n");
  w.options.extra_files = {w.root + "/cli.toml"};
  w.add_program("frob");
  auto p = w.load();
  EXPECT_EQ(p->decide_command("frob", w.workspace).verdict, Verdict::kAsk);
  EXPECT_EQ(p->decide_command("make", w.workspace).deciding.id, "cli.no-make");
  EXPECT_EQ(p->decide_path("/etc/x", Access::kWrite).verdict, Verdict::kAsk);
}

TEST(Policy, ProjectLayerLoadsOnlyWhenTrustedAndUnchanged) {
  PolicyWorld w;
  const std::string proj = w.workspace + "/.moat/policy.toml";
  write_file(
      proj,
      "schema = 1\n[[command]]\nid = \"proj.no-make\"\ndecision = \"deny\"\nprogram = \"make\"\n");
  auto untrusted = w.load();
  EXPECT_EQ(untrusted->decide_command("make", w.workspace).verdict, Verdict::kAllow);
  ASSERT_EQ(untrusted->notices().size(), 1u);
  EXPECT_THAT(untrusted->notices()[0], HasSubstr("not trusted"));

  w.options.trust_project = true;  // the person accepts the current hash
  auto trusted = w.load();
  EXPECT_EQ(trusted->decide_command("make", w.workspace).deciding.id, "proj.no-make");
  EXPECT_EQ(trusted->decide_command("make", w.workspace).deciding.layer, "project");

  w.options.trust_project = false;  // the pin alone is enough while the file is unchanged
  EXPECT_EQ(w.load()->decide_command("make", w.workspace).verdict, Verdict::kDeny);

  write_file(proj, "schema = 1\n");  // changed: asked again, not loaded
  auto changed = w.load();
  EXPECT_EQ(changed->decide_command("make", w.workspace).verdict, Verdict::kAllow);
  EXPECT_THAT(changed->notices()[0], HasSubstr("changed since it was trusted"));
}

TEST(Policy, SystemLayerMustBeRootOwnedAndNotWritableByOthers) {
  PolicyWorld w;
  const std::string sys = w.root + "/system.d";
  write_file(sys + "/00-org.toml", "schema = 1\n[constraints]\naudit_required = true\n");
  ::chmod(sys.c_str(), 0755);
  w.options.system_dir = sys;
  if (::geteuid() != 0) {
    auto p = Policy::load(w.options);
    ASSERT_FALSE(p.has_value());
    EXPECT_THAT(p.error().message(), HasSubstr("must be owned by root"));
    GTEST_SKIP() << "the accepted case needs root to own the directory";
  }
  auto p = w.load();
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->audit_required());
  EXPECT_EQ(p->layers_json()[0]["layer"], "system");  // the builtin default is replaced
  ::chmod((sys + "/00-org.toml").c_str(), 0666);
  auto bad = Policy::load(w.options);
  ASSERT_FALSE(bad.has_value());
  EXPECT_THAT(bad.error().message(), HasSubstr("writable by group or others"));
  ::chmod((sys + "/00-org.toml").c_str(), 0644);
  ::chmod(sys.c_str(), 0775);
  EXPECT_FALSE(Policy::load(w.options).has_value());
  ::chmod(sys.c_str(), 0755);
  write_file(sys + "/01-broken.toml", "schema = 1\n[[command\n");
  auto broken = Policy::load(w.options);
  ASSERT_FALSE(broken.has_value());
  EXPECT_THAT(broken.error().message(), HasSubstr("01-broken.toml:2:"));
}

TEST(Policy, ManagedAllowsOnlyIgnoresLowerLayerAllows) {
  PolicyWorld w;
  if (::geteuid() != 0) GTEST_SKIP() << "a system layer needs a root-owned directory";
  const std::string sys = w.root + "/system.d";
  write_file(sys + "/00-org.toml",
             "schema = 1\ndefaults = { command = \"ask\" }\n[constraints]\nmanaged_allows_only = "
             "[\"command\"]\n"
             "allowed_modes = [\"ask\"]\n[[command]]\nid = \"org.git\"\ndecision = "
             "\"allow\"\nprogram = \"git\"\n");
  ::chmod(sys.c_str(), 0755);
  write_file(
      w.options.user_dir + "/u.toml",
      "schema = 1\n[[command]]\nid = \"user.make\"\ndecision = \"allow\"\nprogram = \"make\"\n");
  w.options.system_dir = sys;
  auto p = w.load();
  ASSERT_TRUE(p);
  EXPECT_EQ(p->decide_command("git log", w.workspace).verdict, Verdict::kAllow);
  auto make = p->decide_command("make", w.workspace);
  EXPECT_EQ(make.verdict, Verdict::kAsk);
  EXPECT_EQ(make.deciding.id, "defaults.command");
  EXPECT_TRUE(p->mode_allowed("ask"));
  EXPECT_FALSE(p->mode_allowed("unrestricted"));
}

TEST(Policy, ConstraintsOutsideTheSystemLayerAreIgnoredWithANotice) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/u.toml", "schema = 1\n[constraints]\naudit_required = true\n");
  auto p = w.load();
  EXPECT_FALSE(p->audit_required());
  EXPECT_THAT(p->notices().back(), HasSubstr("honoured only in the system layer"));
}

TEST(Policy, LayersJsonAndHashDescribeEveryLayer) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/u.toml",
             "schema = 1\n[layer]\nname = \"mine\"\nrevision = \"3\"\n");
  auto p = w.load();
  auto layers = p->layers_json();
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0]["layer"], "builtin");
  EXPECT_EQ(layers[1]["name"], "mine");
  EXPECT_EQ(layers[1]["revision"], "3");
  EXPECT_EQ(layers[1]["sha256"].get<std::string>().size(), 64u);
  std::string h1 = p->policy_hash();
  EXPECT_EQ(h1.rfind("sha256:", 0), 0u);
  write_file(w.options.user_dir + "/u.toml",
             "schema = 1\n[layer]\nname = \"mine\"\nrevision = \"4\"\n");
  EXPECT_NE(w.load()->policy_hash(), h1);
}

TEST(Policy, ParseErrorsInAnyLayerFailTheLoadWithFileLineColumn) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/u.toml",
             "schema = 1\n[[command]]\nid = \"x\"\ndecision = \"maybe\"\n");
  auto p = Policy::load(w.options);
  ASSERT_FALSE(p.has_value());
  EXPECT_THAT(p.error().message(), HasSubstr("u.toml:4:12: command[0].decision"));
}

TEST(Policy, ProtectedAndUnreadableGlobsAreWorkspaceRelative) {
  PolicyWorld w;
  auto p = w.load();
  auto prot = p->protected_globs();
  EXPECT_THAT(prot, ::testing::IsSupersetOf({".git/hooks", ".git/config", ".moat"}));
  auto unreadable = p->unreadable_globs();
  EXPECT_THAT(unreadable, ::testing::IsSupersetOf({".env", "**/.env", "*.pem"}));
}

// What a bind's source gets masked with (moat sandbox exec --ro-bind): the deny rules below it
// as globs relative to it; a rule that may match below it but cannot be written so refuses.
TEST(Policy, DeniedGlobsUnderARootAreRelativeToItOrRefused) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/u.toml",
             "schema = 1\n[[path]]\nid = \"t.keys\"\ndecision = \"deny\"\n"
             "access = [\"read\"]\npaths = [\"*.key\", \"/data/in/private/**\"]\n"
             "[[path]]\nid = \"t.wild\"\ndecision = \"deny\"\naccess = [\"write\"]\n"
             "paths = [\"/data/*/out\"]\n");
  auto p = w.load();
  ASSERT_TRUE(p);
  auto read = p->denied_globs_under("/data/in", Access::kRead);
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_THAT(*read, ::testing::IsSupersetOf({"*.key", "**/*.key", "private", "*.pem"}));
  auto write = p->denied_globs_under("/data/in", Access::kWrite);
  ASSERT_FALSE(write);
  EXPECT_THAT(write.error().message(), HasSubstr("t.wild"));
  auto elsewhere = p->denied_globs_under("/srv", Access::kRead);
  ASSERT_TRUE(elsewhere) << elsewhere.error().message();
  EXPECT_THAT(*elsewhere, ::testing::Not(::testing::Contains("private")));
}

TEST(Policy, ToolRulesWithUnless) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/u.toml",
             "schema = 1\n[[tool]]\nid = \"u.mcp\"\ndecision = \"allow\"\ntool = \"mcp:*\"\n"
             "[[tool]]\nid = \"u.mcp-untrusted\"\ndecision = \"deny\"\ntool = \"mcp:*\"\nunless = "
             "{ server = [\"jira\"] }\n");
  auto p = w.load();
  EXPECT_EQ(p->decide_tool("mcp:jira:search").verdict, Verdict::kAllow);
  EXPECT_EQ(p->decide_tool("mcp:evil:run").verdict, Verdict::kDeny);
  EXPECT_EQ(p->decide_tool("mcp:evil:run").deciding.id, "u.mcp-untrusted");
}

TEST(Policy, AnEmptyNetworkAllowListAllowsNothing) {
  PolicyWorld w;
  auto p = w.load();
  auto d = p->decide_network("example.com", 443);
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "defaults.network");
  EXPECT_FALSE(p->grants_network());
}

// A user layer with the rules the network tests below share.
// Without the built-in default policy, whose defaults.network = "deny" a user layer cannot loosen.
std::unique_ptr<Policy> network_policy(PolicyWorld& w, const std::string& extra = "") {
  w.options.use_builtin_default = false;
  write_file(
      w.options.user_dir + "/n.toml",
      "schema = 1\n" + extra +
          "[[network]]\nid = \"u.registry\"\ndecision = \"allow\"\n"
          "domains = [\"registry.example.org\", \"*.mirror.example.org\"]\nports = [443]\n"
          "[[network]]\nid = \"u.local\"\ndecision = \"allow\"\ndomains = [\"127.0.0.1\"]\n"
          "[[network]]\nid = \"u.paste\"\ndecision = \"ask\"\ndomains = [\"paste.example\"]\n"
          "reason = \"Exfiltration.\"\n");
  return w.load();
}

TEST(Policy, AnAskRuleGrantsNetworkOnlyWhenAPersonCanBeAsked) {
  for (const bool headless : {true, false}) {
    PolicyWorld w;
    w.options.headless = headless;
    w.options.use_builtin_default = false;
    write_file(w.options.user_dir + "/n.toml",
               "schema = 1\n[[network]]\nid = \"u.paste\"\ndecision = \"ask\"\n"
               "domains = [\"paste.example\"]\n");
    auto p = w.load();
    ASSERT_TRUE(p);
    EXPECT_EQ(p->grants_network(), !headless) << (headless ? "headless" : "interactive");
  }
}

TEST(Policy, ANetworkAllowCoversItsNamesAndPortsOnly) {
  PolicyWorld w;
  auto p = network_policy(w);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->grants_network());
  EXPECT_EQ(p->decide_network("registry.example.org", 443).verdict, Verdict::kAllow);
  EXPECT_EQ(p->decide_network("REGISTRY.example.org.", 443).deciding.id, "u.registry");
  EXPECT_EQ(p->decide_network("a.mirror.example.org", 443).verdict, Verdict::kAllow);
  EXPECT_EQ(p->decide_network("mirror.example.org", 443).verdict, Verdict::kDeny);
  EXPECT_EQ(p->decide_network("registry.example.org", 80).verdict, Verdict::kDeny);
  EXPECT_EQ(p->decide_network("evil.example", 443).deciding.id, "defaults.network");
}

TEST(Policy, AnIpLiteralIsReachedOnlyWhenARuleNamesIt) {
  PolicyWorld w;
  auto p = network_policy(w, "defaults = { network = \"allow\" }\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->decide_network("unlisted.example", 443).verdict, Verdict::kAllow);
  auto d = p->decide_network("10.0.0.1", 443);
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "builtin.network-ip-literal");
  EXPECT_EQ(p->decide_network("1.1.1.1", 443).verdict, Verdict::kDeny);
  EXPECT_EQ(p->decide_network("[::1]", 80).verdict, Verdict::kDeny);
  EXPECT_EQ(p->decide_network("127.0.0.1", 8080).deciding.id, "u.local");
  EXPECT_EQ(p->decide_network("127.0.0.1", 8080).verdict, Verdict::kAllow);
}

// Issue 27 item 4: a rule that names the host but not the port is named with the condition
// that failed, not "no rule names the address".
TEST(Policy, ARefusedPortSaysTheRuleNamesTheHostButNotThePort) {
  PolicyWorld w;
  auto p = network_policy(w, "[[network]]\nid = \"u.mirror\"\ndecision = \"allow\"\n"
                             "domains = [\"10.1.2.3\"]\nports = [8765, 8766]\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->decide_network("10.1.2.3", 8765).verdict, Verdict::kAllow);
  auto d = p->decide_network("10.1.2.3", 9999);
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "builtin.network-ip-literal");
  EXPECT_THAT(d.reason, HasSubstr("rule u.mirror names 10.1.2.3 for ports 8765, 8766, not 9999"));
  EXPECT_THAT(d.reason, Not(HasSubstr("reached only when a [[network]] rule names it")));
  d = p->decide_network("registry.example.org", 80);
  EXPECT_EQ(d.deciding.id, "defaults.network");
  EXPECT_THAT(d.reason,
              HasSubstr("rule u.registry names registry.example.org for ports 443, not 80"));
  d = p->decide_network("10.9.9.9", 80);  // no rule names it at all: the message stays
  EXPECT_THAT(d.reason, HasSubstr("an IP address is reached only when a [[network]] rule names it"));
}

// Issue 27 item 3: the hosts an allow (or, with a person to ask, an ask) names are the proxy's,
// never in NO_PROXY; a deny rule or a headless ask lets nothing through.
TEST(Policy, AHostMayBeAllowedOnlyWhenAnAllowOrAnAnswerableAskNamesIt) {
  for (const bool headless : {true, false}) {
    SCOPED_TRACE(headless ? "headless" : "interactive");
    PolicyWorld w;
    w.options.headless = headless;
    auto p = network_policy(w, "[[network]]\nid = \"u.no-local\"\ndecision = \"deny\"\n"
                               "domains = [\"localhost\"]\n");
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->may_allow_network_host("127.0.0.1"));  // u.local, any port
    EXPECT_TRUE(p->may_allow_network_host("registry.example.org"));  // u.registry, port 443
    EXPECT_FALSE(p->may_allow_network_host("localhost"));             // only a deny names it
    EXPECT_FALSE(p->may_allow_network_host("mirror.example.org"));  // "*." covers names below
    EXPECT_EQ(p->may_allow_network_host("paste.example"), !headless);  // u.paste asks
  }
}

// Issue 27 item 24: under defaults.write = "allow", `echo x > /etc/cron.d/job` was allowed by
// echo's read-only rule although the sandbox refuses the write. Every output redirection form
// is a write of its path: outside every writable root it is refused, naming the path; the
// workspace, a writable root, /dev/null, the sandbox's HOME and descriptor duplications stay
// allowed.
TEST(Policy, AnOutputRedirectionOutsideEveryWritableRootIsRefused) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/u.toml", "schema = 1\ndefaults = { write = \"allow\" }\n");
  auto p = w.load();
  ASSERT_TRUE(p);
  for (const char* op : {">", ">>", ">|", "&>", "&>>", "<>", "2>", "1>", "3<>", ">&", "2>>"}) {
    const std::string line = std::string("echo x ") + op + " /etc/cron.d/job";
    SCOPED_TRACE(line);
    auto d = p->decide_command(line, w.workspace);
    EXPECT_EQ(d.verdict, Verdict::kDeny);
    EXPECT_EQ(d.deciding.id, "builtin.write-outside-roots");
    EXPECT_THAT(d.reason, HasSubstr("/etc/cron.d/job is outside every writable root"));
  }
  EXPECT_EQ(p->decide_command("{ echo x; } > /etc/cron.d/job", w.workspace).verdict,
            Verdict::kDeny);
  for (const std::string& line :
       {std::string("echo x > out.txt"), std::string("echo x >> ") + w.workspace + "/src/log",
        "echo x > " + w.root + "/tmp/x", std::string("ls 2>/dev/null"),
        std::string("ls 2>&1 >/dev/null"), std::string("echo x >&2"),
        std::string("echo x 1>&2 2>/dev/stderr"), std::string("echo x > /dev/tty"),
        std::string("echo x > ~/.profile")}) {
    SCOPED_TRACE(line);
    EXPECT_EQ(p->decide_command(line, w.workspace).verdict, Verdict::kAllow);
  }
}

TEST(Policy, AHostThatIsNotANameIsDenied) {
  PolicyWorld w;
  auto p = network_policy(w, "defaults = { network = \"allow\" }\n");
  ASSERT_TRUE(p);
  for (const char* h : {"2130706433", "127.1", "a b", "x.org/evil", ""}) {
    SCOPED_TRACE(h);
    auto d = p->decide_network(h, 80);
    EXPECT_EQ(d.verdict, Verdict::kDeny);
    EXPECT_EQ(d.deciding.id, "builtin.network-host");
  }
}

TEST(Policy, ANetworkAskIsDeniedHeadlessWithTheRuleNamed) {
  PolicyWorld w;
  w.options.headless = true;
  auto p = network_policy(w);
  ASSERT_TRUE(p);
  auto d = p->decide_network("paste.example", 443);
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_TRUE(d.headless_downgraded);
  EXPECT_EQ(d.deciding.id, "u.paste");
}

TEST(Policy, NetworkResourceCeilingsTakeTheMinimumAndHaveDefaults) {
  PolicyWorld w;
  auto p = network_policy(w, "resources = { network_connections = 8, network_idle = \"30s\" }\n");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->resources().network_connections, 8);
  EXPECT_EQ(p->resources().network_idle_s, 30);
  EXPECT_EQ(p->resources().network_bytes, kDefaultResources.network_bytes);
}

TEST(Policy, BuiltinDefaultTextEqualsTheShippedExample) {
  std::ifstream in(std::string(MOAT_SOURCE_ROOT) + "/examples/policies/default.toml");
  std::stringstream ss;
  ss << in.rdbuf();
  ASSERT_FALSE(ss.str().empty());
  EXPECT_EQ(ss.str(), std::string(builtin_default_policy_text()));
}

}  // namespace
}  // namespace moat::policy

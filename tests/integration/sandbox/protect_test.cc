// tests/integration/sandbox/protect_test.cc: protected workspace paths are read-only inside
// the session, also when missing, or when the code plants a symlink, and are re-derived at
// every call.
#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "policy/policy.h"
#include "tests/integration/sandbox/test_util.h"

namespace moat::sandbox {
namespace {

using testing::TempDir;

SessionConfig protected_config(const TempDir& ws) {
  SessionConfig c;
  c.workspace = ws.path();
  c.protected_paths = {".git/hooks", ".git/config", ".moat", "*.pem"};
  return c;
}

TEST(ProtectedPaths, ExistingHooksAreReadOnly) {
  TempDir ws;
  ws.write(".git/hooks/pre-commit", "#!/bin/sh\n");
  ws.write(".git/config", "[core]\n");
  ws.write("src/main.c", "int main;\n");
  MOAT_SESSION_OR_SKIP(s, protected_config(ws));
  auto r = testing::sh(s,
                       "echo evil > .git/hooks/pre-commit; echo evil > .git/hooks/post-checkout;"
                       " echo evil >> .git/config; echo ok > src/main.c; cat .git/config");
  ASSERT_TRUE(r);
  EXPECT_EQ(ws.read(".git/hooks/pre-commit"), "#!/bin/sh\n");
  EXPECT_FALSE(std::filesystem::exists(ws.file(".git/hooks/post-checkout")));
  EXPECT_EQ(ws.read(".git/config"), "[core]\n");
  EXPECT_EQ(ws.read("src/main.c"), "ok\n");
  EXPECT_NE(r->output.find("[core]"), std::string::npos) << "protected files stay readable";
}

TEST(ProtectedPaths, MissingPathIsMaskedAtItsFirstMissingComponent) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, protected_config(ws));
  auto r =
      testing::sh(s, "mkdir -p .git/hooks 2>&1; mkdir .moat/x 2>&1; echo x > .moat/p 2>&1; true");
  ASSERT_TRUE(r);
  EXPECT_FALSE(std::filesystem::exists(ws.file(".git/hooks")));
  EXPECT_FALSE(std::filesystem::exists(ws.file(".moat/p")));
  EXPECT_NE(r->output.find("Read-only file system"), std::string::npos) << r->output;
}

TEST(ProtectedPaths, SymlinkPlantedByTheCodeIsMaskedItself) {
  TempDir ws, elsewhere;
  std::filesystem::create_directories(ws.file(".git"));
  MOAT_SESSION_OR_SKIP(s, protected_config(ws));
  // .git exists, .git/hooks does not: it is masked as the first missing component, so the
  // code cannot plant a symlink there, and the next call cannot write through one.
  auto r1 = testing::sh(s, "ln -s " + elsewhere.path() + " .git/hooks 2>&1; true");
  ASSERT_TRUE(r1);
  auto r2 = testing::sh(s, "echo evil > .git/hooks/pre-commit 2>&1; true");
  ASSERT_TRUE(r2);
  EXPECT_FALSE(std::filesystem::exists(elsewhere.file("pre-commit")));
}

TEST(ProtectedPaths, HostSymlinkIsCoveredNotFollowed) {
  TempDir ws, elsewhere;
  std::filesystem::create_directories(ws.file(".git"));
  std::filesystem::create_directory_symlink(elsewhere.path(), ws.file(".git/hooks"));
  MOAT_SESSION_OR_SKIP(s, protected_config(ws));
  auto r = testing::sh(s, "echo evil > .git/hooks/pre-commit 2>&1; true");
  ASSERT_TRUE(r);
  EXPECT_FALSE(std::filesystem::exists(elsewhere.file("pre-commit")));
  EXPECT_TRUE(std::filesystem::is_symlink(ws.file(".git/hooks")));
}

TEST(ProtectedPaths, GlobMatchesAreReDerivedAtEveryCall) {
  TempDir ws;
  MOAT_SESSION_OR_SKIP(s, protected_config(ws));
  ws.write("key.pem", "secret-v1\n");  // appears after the session started
  auto r = testing::sh(s, "echo changed > key.pem 2>&1; cat key.pem");
  ASSERT_TRUE(r);
  EXPECT_EQ(ws.read("key.pem"), "secret-v1\n");
  EXPECT_NE(r->output.find("secret-v1"), std::string::npos);
}

// A glob without "**" matches at its own depth only (each wildcard stays in one component),
// so the walk that re-derives it stops there; what it matches at that depth is still masked.
TEST(ProtectedPaths, GlobWithoutDoubleStarMatchesAtItsOwnDepth) {
  TempDir ws;
  ws.write("top.key", "v1\n");
  ws.write("src/a.key", "v1\n");
  ws.write("src/deep/b.key", "v1\n");
  SessionConfig c;
  c.workspace = ws.path();
  c.protected_paths = {"src/*.key", "**/deeper.key"};
  MOAT_SESSION_OR_SKIP(s, c);
  ws.write("src/deep/er/deeper.key", "v1\n");
  auto r = testing::sh(s,
                       "for f in top.key src/a.key src/deep/b.key src/deep/er/deeper.key; do "
                       "echo v2 > $f 2>/dev/null; done; true");
  ASSERT_TRUE(r);
  EXPECT_EQ(ws.read("src/a.key"), "v1\n");
  EXPECT_EQ(ws.read("src/deep/er/deeper.key"), "v1\n") << "** still reaches any depth";
  EXPECT_EQ(ws.read("top.key"), "v2\n");
  EXPECT_EQ(ws.read("src/deep/b.key"), "v2\n");
}

TEST(ProtectedPaths, RenamingTheParentAwayFailsWithEbusy) {
  TempDir ws;
  std::filesystem::create_directories(ws.file(".git/hooks"));
  ws.write(".git/HEAD", "ref: refs/heads/main\n");
  MOAT_SESSION_OR_SKIP(s, protected_config(ws));
  auto r = testing::sh(s,
                       "mv .git .git2 2>&1; rm -rf .git 2>&1; mkdir -p .git/hooks; "
                       "echo evil > .git/hooks/pre-commit 2>&1; echo ok > .git/HEAD; true");
  ASSERT_TRUE(r);
  EXPECT_NE(r->output.find("Device or resource busy"), std::string::npos) << r->output;
  EXPECT_FALSE(std::filesystem::exists(ws.file(".git2")));
  EXPECT_FALSE(std::filesystem::exists(ws.file(".git/hooks/pre-commit")));
  EXPECT_EQ(ws.read(".git/HEAD"), "ok\n") << "the rest of .git stays writable";
}

// The placeholders a session creates to mask missing protected paths live on the host's disk
// (the workspace is the host's directory); the session removes them when it ends.
TEST(ProtectedPaths, PlaceholdersForMissingPathsAreRemovedWhenTheSessionEnds) {
  TempDir ws;
  std::filesystem::create_directories(ws.file("sub"));
  SessionConfig c = protected_config(ws);
  c.protected_paths.push_back("sub/deeper/x");
  {
    MOAT_SESSION_OR_SKIP(s, c);
    ASSERT_TRUE(testing::sh(s, "true"));
    // Masked at their first missing component: .git (for .git/hooks and .git/config), .moat,
    // sub/deeper.
    EXPECT_TRUE(std::filesystem::is_directory(ws.file(".git")));
    EXPECT_TRUE(std::filesystem::is_directory(ws.file(".moat")));
    EXPECT_TRUE(std::filesystem::is_directory(ws.file("sub/deeper")));
  }
  EXPECT_FALSE(std::filesystem::exists(ws.file(".git")));
  EXPECT_FALSE(std::filesystem::exists(ws.file(".moat")));
  EXPECT_FALSE(std::filesystem::exists(ws.file("sub/deeper")));
  EXPECT_TRUE(std::filesystem::is_directory(ws.file("sub"))) << "only what the session created";
}

TEST(ProtectedPaths, PlaceholderTheHostFilledDuringTheSessionIsKept) {
  TempDir ws;
  {
    MOAT_SESSION_OR_SKIP(s, protected_config(ws));
    ASSERT_TRUE(testing::sh(s, "true"));
    ASSERT_TRUE(std::filesystem::is_directory(ws.file(".git")));
    ws.write(".git/HEAD", "ref: refs/heads/main\n");  // e.g. `git init` on the host meanwhile
  }
  EXPECT_EQ(ws.read(".git/HEAD"), "ref: refs/heads/main\n");
  EXPECT_FALSE(std::filesystem::exists(ws.file(".moat"))) << "the empty one still goes";
}

TEST(ProtectedPaths, ExistingEmptyDirectoriesAreNotPlaceholders) {
  TempDir ws;
  std::filesystem::create_directories(ws.file(".git/hooks"));
  std::filesystem::create_directories(ws.file(".moat"));
  {
    MOAT_SESSION_OR_SKIP(s, protected_config(ws));
    ASSERT_TRUE(testing::sh(s, "true"));
  }
  EXPECT_TRUE(std::filesystem::is_directory(ws.file(".git/hooks")));
  EXPECT_TRUE(std::filesystem::is_directory(ws.file(".moat")));
  EXPECT_FALSE(std::filesystem::exists(ws.file(".git/config")))
      << "the missing .git/config was masked by a placeholder, which is gone";
}

TEST(ProtectedPaths, PlaceholderReplacedByTheHostIsNotRemoved) {
  TempDir ws;
  {
    MOAT_SESSION_OR_SKIP(s, protected_config(ws));
    ASSERT_TRUE(testing::sh(s, "true"));
    // The host replaces the mask with an empty .moat of its own: same name, not ours. (Made
    // before the old one goes, so it cannot reuse its inode number.)
    std::filesystem::create_directories(ws.file(".moat.new"));
    std::filesystem::remove(ws.file(".moat"));
    std::filesystem::rename(ws.file(".moat.new"), ws.file(".moat"));
  }
  EXPECT_TRUE(std::filesystem::is_directory(ws.file(".moat")));
}

TEST(HiddenPaths, DeniedFilesAndDirectoriesAreEmptyInside) {
  TempDir ws;
  ws.write(".env", "API_KEY=canary-41c7\n");
  ws.write("secrets/prod.key", "canary-41c7\n");
  ws.write("src/app.env", "canary-41c7\n");
  ws.write("src/main.c", "int main;\n");
  SessionConfig c;
  c.workspace = ws.path();
  c.hidden_paths = {".env", "secrets", "**/*.env"};
  MOAT_SESSION_OR_SKIP(s, c);
  auto r = testing::sh(s,
                       "cat .env src/app.env secrets/prod.key 2>&1; ls -A secrets; "
                       "cat src/main.c; echo x > .env 2>&1; true");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->output.find("canary-41c7"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("int main;"), std::string::npos) << r->output;
  EXPECT_EQ(ws.read(".env"), "API_KEY=canary-41c7\n") << "the host's file is untouched";
}

// The per-call walk that finds glob matches has a limit; past it the call is refused, never
// run with the matches after the limit unmasked. Without glob patterns there is no walk.
TEST(HiddenPaths, AWorkspaceLargerThanTheWalkLimitRefusesTheCall) {
  TempDir ws;
  for (int i = 0; i < 40; ++i) ws.write("many/f" + std::to_string(i) + ".txt", "x\n");
  ws.write("zz/app.env", "canary-77e1\n");
  SessionConfig c;
  c.workspace = ws.path();
  c.hidden_paths = {"**/*.env"};
  c.max_protect_walk_entries = 20;
  MOAT_SESSION_OR_SKIP(s, c);
  auto r = testing::sh(s, "cat zz/app.env");
  ASSERT_FALSE(r) << "ran with the walk cut short: " << r->output;
  EXPECT_EQ(r.error().code, E2BIG);
  EXPECT_NE(r.error().message().find("protected paths"), std::string::npos) << r.error().message();

  SessionConfig plain;
  plain.workspace = ws.path();
  plain.hidden_paths = {"zz/app.env"};  // no glob: no walk, no limit
  plain.max_protect_walk_entries = 20;
  plain.mask_linked_files = false;  // which walks the whole workspace
  MOAT_SESSION_OR_SKIP(s2, plain);
  auto ok = testing::sh(s2, "cat zz/app.env; echo done");
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(ok->output.find("canary-77e1"), std::string::npos) << ok->output;
  EXPECT_NE(ok->output.find("done"), std::string::npos) << ok->output;
}

// A directory the code makes unreadable between calls does not let the next call's walk skip
// what it holds: either the walk reads it anyway or it is covered as a whole.
TEST(HiddenPaths, ADirectoryMadeUnreadableBetweenCallsStaysHidden) {
  TempDir ws;
  ws.write("sub/deep/app.env", "canary-5a0c\n");
  SessionConfig c;
  c.workspace = ws.path();
  c.hidden_paths = {"**/*.env"};
  MOAT_SESSION_OR_SKIP(s, c);
  auto first = testing::sh(s, "chmod 000 sub 2>&1; true");
  ASSERT_TRUE(first) << first.error().message();
  auto second = testing::sh(s, "chmod 755 sub 2>&1; cat sub/deep/app.env 2>&1; true");
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(second->output.find("canary-5a0c"), std::string::npos) << second->output;
  ::chmod((ws.path() + "/sub").c_str(), 0755);  // so the TempDir can be removed
}

// The hidden, protected and protected-if-present lists are matched by one walk before every
// call (Init::start_call). What call 1 creates for each list, at a depth only that list's walk
// reaches, and inside a directory another list matches whole, is handled before call 2 runs;
// so is a file the host hard-links in from outside meanwhile.
TEST(ProtectWalk, WhatACallCreatesForEachListIsHandledBeforeTheNextCall) {
  TempDir ws, store;
  store.write("blob", "store\n");
  ws.write("src/main.c", "int main;\n");
  SessionConfig c;
  c.workspace = ws.path();
  c.hidden_paths = {"*.secret", "**/deep/*.key", "token"};  // a shallow, a deep and a plain one
  c.protected_paths = {"**/*.lock", "**/conf.d"};
  c.protected_if_present = {"**/*.frozen", "plain.moat"};
  MOAT_SESSION_OR_SKIP(s, c);
  auto first = testing::sh(s,
                           "mkdir -p a/b/deep a/conf.d/deep b/token.d && echo canary-1 > top.secret"
                           " && echo canary-2 > a/b/deep/k.key && echo canary-3 > a/conf.d/deep/"
                           "k.key && echo canary-4 > token && echo l > a/b/deep/y.lock && echo f >"
                           " a/b/z.frozen && echo c > a/conf.d/c.conf && echo p > plain.moat");
  ASSERT_TRUE(first) << first.error().message();
  std::filesystem::create_hard_link(store.file("blob"), ws.file("b/token.d/blob"));
  auto second = testing::sh(
      s,
      "cat top.secret a/b/deep/k.key a/conf.d/deep/k.key token 2>&1; for f in a/b/deep/y.lock "
      "a/b/z.frozen a/conf.d/c.conf plain.moat b/token.d/blob src/main.c; do echo w >> $f && echo "
      "wrote $f; done 2>&1; true");
  ASSERT_TRUE(second) << second.error().message();
  EXPECT_EQ(second->output.find("canary-"), std::string::npos) << second->output;
  EXPECT_EQ(ws.read("a/b/deep/y.lock"), "l\n") << second->output;
  EXPECT_EQ(ws.read("a/b/z.frozen"), "f\n") << second->output;
  EXPECT_EQ(ws.read("a/conf.d/c.conf"), "c\n") << second->output;
  EXPECT_EQ(ws.read("plain.moat"), "p\n") << second->output;
  EXPECT_EQ(store.read("blob"), "store\n") << second->output;
  EXPECT_EQ(ws.read("src/main.c"), "int main;\nw\n") << second->output;
}

// Each list's part of the one walk is bounded on its own, as its own walk was: two lists that
// each see 15 entries pass a limit of 20 together.
TEST(ProtectWalk, EachListIsBoundedByTheLimitOnItsOwn) {
  TempDir ws;
  for (int i = 0; i < 14; ++i) ws.write("d/f" + std::to_string(i), "x\n");
  SessionConfig c;
  c.workspace = ws.path();
  c.hidden_paths = {"**/*.env"};
  c.protected_paths = {"**/*.lock"};
  c.mask_linked_files = false;
  c.max_protect_walk_entries = 20;
  MOAT_SESSION_OR_SKIP(s, c);
  auto ok = testing::sh(s, "echo done");
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_NE(ok->output.find("done"), std::string::npos) << ok->output;
  c.max_protect_walk_entries = 14;
  MOAT_SESSION_OR_SKIP(s2, c);
  auto refused = testing::sh(s2, "echo done");
  ASSERT_FALSE(refused) << "ran with the walk cut short: " << refused->output;
  EXPECT_EQ(refused.error().code, E2BIG);
}

// A file hard-linked from outside the workspace (pnpm's store does this for every package
// file) is read-only inside: a write through the workspace's name would change the outside
// file. Files whose names are all inside the workspace stay writable.
TEST(LinkedFiles, AHardLinkToAFileOutsideIsReadOnly) {
  TempDir ws, store;
  store.write("one.txt", "store\n");
  store.write("pkg/index.js", "index\n");
  store.write("pkg/lib/util.js", "util\n");
  std::filesystem::create_directories(ws.file("node_modules/pkg/lib"));
  std::filesystem::create_hard_link(store.file("one.txt"), ws.file("one.txt"));
  std::filesystem::create_hard_link(store.file("pkg/index.js"),
                                    ws.file("node_modules/pkg/index.js"));
  std::filesystem::create_hard_link(store.file("pkg/lib/util.js"),
                                    ws.file("node_modules/pkg/lib/util.js"));
  ws.write("src/a.txt", "a\n");
  std::filesystem::create_hard_link(ws.file("src/a.txt"), ws.file("src/b.txt"));
  SessionConfig c;
  c.workspace = ws.path();
  MOAT_SESSION_OR_SKIP(s, c);
  auto r = testing::sh(s,
                       "echo evil >> one.txt; echo evil >> node_modules/pkg/index.js; "
                       "echo evil > node_modules/pkg/lib/util.js; echo more >> src/b.txt; "
                       "cat one.txt src/a.txt");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(store.read("one.txt"), "store\n");
  EXPECT_EQ(store.read("pkg/index.js"), "index\n");
  EXPECT_EQ(store.read("pkg/lib/util.js"), "util\n");
  EXPECT_EQ(ws.read("src/a.txt"), "a\nmore\n") << "both names are inside: writable";
  EXPECT_NE(r->output.find("store\na\nmore"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("Read-only file system"), std::string::npos) << r->output;
}

// A directory of nothing but linked-out files (and such directories) is bound whole: one
// mount for node_modules here, not one per file. A file linked in after the session started
// is found by the next call's walk.
TEST(LinkedFiles, ADirectoryOfLinkedFilesIsBoundWholeAndReDerivedEveryCall) {
  TempDir ws, store;
  store.write("pkg/a.js", "a\n");
  store.write("late.js", "late\n");
  std::filesystem::create_directories(ws.file("node_modules/pkg"));
  std::filesystem::create_hard_link(store.file("pkg/a.js"), ws.file("node_modules/pkg/a.js"));
  SessionConfig c;
  c.workspace = ws.path();
  MOAT_SESSION_OR_SKIP(s, c);
  std::filesystem::create_hard_link(store.file("late.js"), ws.file("late.js"));
  auto r = testing::sh(s,
                       "echo x > node_modules/pkg/new.js 2>&1; echo evil >> late.js 2>&1; "
                       "grep -c 'node_modules ro,' /proc/self/mountinfo");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(store.read("late.js"), "late\n");
  EXPECT_FALSE(std::filesystem::exists(ws.file("node_modules/pkg/new.js")));
  EXPECT_NE(r->output.find("\n1\n"), std::string::npos) << r->output;
}

// The init remembers which files of a directory had more than one name; a directory that has
// not changed since is not stat'ed file by file again (only those files are), and one that
// changed is read again. The workspace is made three seconds before the session, so its
// directories count as settled (their change times cannot hide a change within one tick).
TEST(LinkedFiles, CachedDirectoriesKeepTheirLinkedFilesCoveredAndChangedOnesAreReadAgain) {
  TempDir ws, store;
  store.write("a.js", "a\n");
  store.write("b.js", "b\n");
  ws.write("lib/own.js", "own\n");
  ws.write("src/x.js", "x\n");
  std::filesystem::create_hard_link(store.file("a.js"), ws.file("lib/a.js"));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  SessionConfig c;
  c.workspace = ws.path();
  MOAT_SESSION_OR_SKIP(s, c);
  auto first = testing::sh(s, "true");
  ASSERT_TRUE(first) << first.error().message();
  std::filesystem::create_hard_link(store.file("b.js"), ws.file("src/b.js"));  // src changes
  auto r = testing::sh(s, "echo evil >> lib/a.js; echo evil >> src/b.js; echo mine >> lib/own.js");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(store.read("a.js"), "a\n") << r->output;
  EXPECT_EQ(store.read("b.js"), "b\n") << r->output;
  EXPECT_EQ(ws.read("lib/own.js"), "own\nmine\n") << r->output;
}

// The masker and `moat policy explain --path` read one glob alike (issue 28): for each path of
// the table, the session hides (reads) or protects (writes) it exactly when the policy denies
// that access to it. Before, the masker ran fnmatch without FNM_PATHNAME on any pattern holding
// "**", so "**/secrets/*.pem" hid x/secrets/deep/a.pem, which the policy allows, and
// "**/cache/**/*.tmp" left cache/x.tmp readable, which the policy denies.
constexpr const char* kAgreementGlobs[] = {"**/secrets/*.pem", "*.key", "conf/*/token",
                                           "**/cache/**/*.tmp", "[ab]?.txt"};
constexpr const char* kAgreementPaths[] = {
    "secrets/a.pem", "x/secrets/a.pem", "x/secrets/deep/a.pem", "a.key",   "d/e/b.key",
    "conf/a/token",  "conf/a/b/token",  "cache/x.tmp",          "a/cache/b/c/y.tmp",
    "a1.txt",        "b22.txt",         "d/a1.txt",             "plain.txt"};

// One user layer: deny `access` to every glob of the table; no built-in default.
std::unique_ptr<policy::Policy> agreement_policy(const TempDir& ws, const TempDir& dirs,
                                                 const char* access) {
  std::string toml = "schema = 1\n";
  for (std::size_t i = 0; i < std::size(kAgreementGlobs); ++i)
    toml += "[[path]]\nid = \"t.g" + std::to_string(i) + "\"\ndecision = \"deny\"\naccess = [\"" +
            access + "\"]\npaths = [\"" + kAgreementGlobs[i] + "\"]\n";
  dirs.write("user.d/00-table.toml", toml);
  policy::LoadOptions o;
  o.system_dir = dirs.file("no-system");
  o.user_dir = dirs.file("user.d");
  o.trust_dir = dirs.file("trust");
  o.workspace = ws.path();
  o.home = "/nonexistent-moat-home";
  o.search_path = {"/usr/bin"};
  o.use_builtin_default = false;
  o.headless = false;  // an ask stays an ask: only a deny is masked
  auto p = policy::Policy::load(o);
  EXPECT_TRUE(p.has_value()) << p.error().message();
  return p ? std::move(*p) : nullptr;
}

void expect_masker_agrees_with_policy(const char* access) {
  TempDir ws, dirs;
  for (const char* f : kAgreementPaths) ws.write(f, "canary");
  auto p = agreement_policy(ws, dirs, access);
  ASSERT_NE(p, nullptr);
  const bool write = std::string(access) == "write";
  SessionConfig c;
  c.workspace = ws.path();
  for (const auto& g : write ? p->protected_globs() : p->unreadable_globs())
    (g.find_first_of("*?[") == std::string::npos ? c.protected_if_present
     : write                                     ? c.protected_paths
                                                 : c.hidden_paths)
        .push_back(g);
  std::string script;
  for (const char* f : kAgreementPaths)
    script += (write ? std::string("if (echo x >> ") + f + ") 2>/dev/null"
                     : std::string("if [ \"$(cat ") + f + " 2>/dev/null)\" = canary ]") +
              "; then echo '" + f + " open'; else echo '" + f + " masked'; fi; ";
  MOAT_SESSION_OR_SKIP(s, c);
  auto r = testing::sh(s, script);
  ASSERT_TRUE(r);
  for (const char* f : kAgreementPaths) {
    const policy::Decision d = p->decide_path(
        p->expand_path(f), write ? policy::Access::kWrite : policy::Access::kRead);
    const bool denied = d.verdict == policy::Verdict::kDeny;
    const std::string line = "\n" + std::string(f) + (denied ? " masked\n" : " open\n");
    EXPECT_NE(("\n" + r->output).find(line), std::string::npos)
        << access << " " << f << ": the policy says " << policy::verdict_name(d.verdict) << " ("
        << d.deciding.id << "), the session: " << r->output;
  }
}

TEST(MaskerAndPolicy, HideExactlyThePathsThePolicyDeniesReading) {
  expect_masker_agrees_with_policy("read");
}

TEST(MaskerAndPolicy, ProtectExactlyThePathsThePolicyDeniesWriting) {
  expect_masker_agrees_with_policy("write");
}

}  // namespace
}  // namespace moat::sandbox

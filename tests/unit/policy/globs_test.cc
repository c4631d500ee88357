// tests/unit/policy/globs_test.cc: policy path patterns: expansion, anchoring and matching
// (word globs are tested with the engine, tests/unit/base/glob_test.cc).
#include "policy/globs.h"

#include <gtest/gtest.h>

namespace moat::policy {
namespace {

PathVars vars() {
  PathVars v;
  v.home = "/home/u";
  v.workspace = "/ws";
  v.vars = {{"AUDIT_DIR", "/var/audit"}};
  return v;
}

bool m(const char* pattern, const char* path) {
  auto g = compile_path_glob(pattern, vars());
  EXPECT_TRUE(g.has_value()) << pattern;
  return g && path_glob_matches(*g, path);
}

TEST(PathGlob, NameWithoutSlashMatchesAtAnyDepth) {
  EXPECT_TRUE(m("*.pem", "/ws/certs/a.pem"));
  EXPECT_TRUE(m("*.pem", "/a.pem"));
  EXPECT_TRUE(m(".env", "/ws/.env"));
  EXPECT_FALSE(m(".env", "/ws/.envrc"));
}

TEST(PathGlob, RelativeWithSlashIsAnchoredAtTheWorkspace) {
  EXPECT_TRUE(m(".git/config", "/ws/.git/config"));
  EXPECT_FALSE(m(".git/config", "/ws/sub/.git/config"));
  EXPECT_TRUE(m(".git/hooks/**", "/ws/.git/hooks/pre-commit"));
  EXPECT_TRUE(m(".git/hooks/**", "/ws/.git/hooks"));  // the directory itself
}

TEST(PathGlob, TildeAndVariablesExpand) {
  EXPECT_TRUE(m("~/.ssh/**", "/home/u/.ssh/id_rsa"));
  EXPECT_FALSE(m("~/.ssh/**", "/home/u/.sshx"));
  EXPECT_TRUE(m("$AUDIT_DIR/**", "/var/audit/2026/x.jsonl"));
  EXPECT_TRUE(m("$WORKSPACE/**", "/ws/a/b/c"));
  EXPECT_TRUE(m("${HOME}/x", "/home/u/x"));
}

TEST(PathGlob, DoubleStarSpansComponentsButStarDoesNot) {
  EXPECT_TRUE(m("/a/**/z", "/a/z"));
  EXPECT_TRUE(m("/a/**/z", "/a/b/c/z"));
  EXPECT_FALSE(m("/a/*/z", "/a/b/c/z"));
  EXPECT_TRUE(m("/a/", "/a/b"));
}

TEST(PathGlob, UnknownVariablesAndDotDotAreErrors) {
  EXPECT_FALSE(compile_path_glob("$NOPE/x", vars()).has_value());
  EXPECT_FALSE(compile_path_glob("/a/../b", vars()).has_value());
  PathVars none;
  EXPECT_FALSE(compile_path_glob("~/x", none).has_value());
}

TEST(PathGlob, UncertainTargetsUseMayMatchAndCoversAll) {
  auto hooks = compile_path_glob(".git/hooks/**", vars());
  auto ws = compile_path_glob("$WORKSPACE/**", vars());
  auto pem = compile_path_glob("*.pem", vars());
  ASSERT_TRUE(hooks && ws && pem);
  EXPECT_TRUE(path_glob_may_match_under(*hooks, "/ws"));
  EXPECT_TRUE(path_glob_may_match_under(*hooks, "/ws/.git"));
  EXPECT_FALSE(path_glob_may_match_under(*hooks, "/ws/src"));
  EXPECT_TRUE(path_glob_covers_all_under(*ws, "/ws/src"));
  EXPECT_FALSE(path_glob_covers_all_under(*ws, "/etc"));
  EXPECT_FALSE(path_glob_covers_all_under(*pem, "/ws"));
  EXPECT_TRUE(path_glob_may_match_under(*pem, "/ws"));
}

}  // namespace
}  // namespace moat::policy

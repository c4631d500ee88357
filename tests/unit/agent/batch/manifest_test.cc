// tests/unit/agent/batch/manifest_test.cc: the batch manifest's format, its errors
// (file:line:col, like policy files) and the shard assignment.
#include "agent/batch/manifest.h"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <set>

namespace moat::agent::batch {
namespace {

Result<Manifest> parse(const std::string& text) {
  return parse_manifest_text(text, "m.toml", "/base/batch");
}

TEST(BatchManifest, TheIssuesMinimalFormLoads) {
  auto m = parse(R"(
task = "Rename compute_total to sum_line_items and run the tests."
model = "anthropic/claude-sonnet-4-5"      # or replay:FILE, or any configured provider
check = "sh run_tests.sh"                  # optional, run in the sandbox after the agent stops
[[repo]]
path = "../svc-a"                          # relative to the manifest
[[repo]]
path = "../svc-b"
task = "Something else"
)");
  ASSERT_TRUE(m) << m.error().message();
  ASSERT_EQ(m->items.size(), 2u);
  EXPECT_EQ(m->items[0].id, "svc-a");
  EXPECT_EQ(m->items[0].path, "/base/svc-a");
  EXPECT_EQ(m->items[0].task, "Rename compute_total to sum_line_items and run the tests.");
  EXPECT_EQ(m->items[0].model, "anthropic/claude-sonnet-4-5");
  EXPECT_EQ(m->items[0].check, "sh run_tests.sh");
  EXPECT_EQ(m->items[1].task, "Something else");
  EXPECT_EQ(m->items[1].check, "sh run_tests.sh");
}

TEST(BatchManifest, AnUnknownKeyIsAnErrorNamingFileLineAndColumn) {
  auto top = parse("task = \"t\"\nmodel = \"m\"\n  modle = \"x\"\n[[repo]]\npath = \"a\"\n");
  ASSERT_FALSE(top);
  EXPECT_EQ(top.error().message().rfind("m.toml:3:3: modle: unknown key; accepted keys here: ", 0),
            0u)
      << top.error().message();
  auto in_repo = parse("task = \"t\"\nmodel = \"m\"\n[[repo]]\npath = \"a\"\nchek = \"x\"\n");
  ASSERT_FALSE(in_repo);
  EXPECT_NE(in_repo.error().message().find("m.toml:5:1: repo[0].chek: unknown key"),
            std::string::npos)
      << in_repo.error().message();
}

TEST(BatchManifest, AWrongTypeNamesTheKeyAndWhatIsAccepted) {
  auto m = parse("task = \"t\"\nmodel = \"m\"\nmax_turns = \"ten\"\n[[repo]]\npath = \"a\"\n");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message(), "m.toml:3:13: max_turns: expected an integer, got a string");
  auto syntax = parse("task = \n");
  ASSERT_FALSE(syntax);
  EXPECT_EQ(syntax.error().message().rfind("m.toml:1:", 0), 0u) << syntax.error().message();
}

TEST(BatchManifest, PerRepoKeysOverrideTheTopOnesAndLimitsCarryOver) {
  auto m = parse(R"(task = "t"
model = "replay:script.jsonl"
max_turns = 7
max_wall = "10m"
max_total_cost = 2.5
policy = ["p.toml", "/etc/q.toml"]
[[repo]]
path = "/abs/one"
id = "first"
model = "replay:/elsewhere/s.jsonl"
check = "make test"
max_cost = 0.5
[[repo]]
path = "two"
)");
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(m->max_total_cost, 2.5);
  EXPECT_EQ(m->policy_files, (std::vector<std::string>{"/base/batch/p.toml", "/etc/q.toml"}));
  const Item& a = m->items[0];
  EXPECT_EQ(a.id, "first");
  EXPECT_EQ(a.model, "replay:/elsewhere/s.jsonl");
  EXPECT_EQ(a.limits.max_turns, 7);
  EXPECT_EQ(a.limits.max_wall_s, 600);
  EXPECT_EQ(a.limits.max_cost, 0.5);
  EXPECT_EQ(a.check, "make test");
  const Item& b = m->items[1];
  EXPECT_EQ(b.model, "replay:/base/batch/script.jsonl");  // replay files sit by the manifest
  EXPECT_EQ(b.path, "/base/batch/two");
  EXPECT_EQ(b.limits.max_cost, 0);
  EXPECT_EQ(b.check, "");
}

TEST(BatchManifest, TwoReposWithOneIdAreRefused) {
  auto m = parse(
      "task = \"t\"\nmodel = \"m\"\n[[repo]]\npath = \"x/svc\"\n[[repo]]\npath = "
      "\"y/svc\"\n");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message().find("\"svc\" is already the id of the repo at line 3"),
            std::string::npos)
      << m.error().message();
}

TEST(BatchManifest, AnIdThatCannotNameAFileIsRefused) {
  for (const char* id : {"../up", ".hidden", "a b", ""}) {
    SCOPED_TRACE(id);
    auto m = parse(std::string("task = \"t\"\nmodel = \"m\"\n[[repo]]\npath = \"x\"\nid = \"") +
                   id + "\"\n");
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message().find("cannot name an item"), std::string::npos);
  }
}

TEST(BatchManifest, ARepoWithoutTaskOrModelOrPathSaysWhichIsMissing) {
  auto no_task = parse("model = \"m\"\n[[repo]]\npath = \"a\"\n");
  ASSERT_FALSE(no_task);
  EXPECT_NE(no_task.error().message().find("repo[0].task: no task"), std::string::npos);
  auto no_path = parse("task = \"t\"\nmodel = \"m\"\n[[repo]]\nid = \"a\"\n");
  ASSERT_FALSE(no_path);
  EXPECT_NE(no_path.error().message().find("repo[0].path: required key is missing"),
            std::string::npos);
  auto no_repo = parse("task = \"t\"\nmodel = \"m\"\n");
  ASSERT_FALSE(no_repo);
}

TEST(BatchManifest, AUrlRepoGetsAnIdFromItsUrlAndMayNameARef) {
  auto m = parse(
      "task = \"t\"\nmodel = \"m\"\n[[repo]]\nurl = \"https://example.com/org/svc-a.git\"\n"
      "[[repo]]\nurl = \"https://example.com/org/svc-a.git\"\nid = \"svc-a-old\"\n"
      "ref = \"v1.0\"\n[[repo]]\npath = \"../local\"\nref = \"feature/x\"\n");
  ASSERT_TRUE(m) << m.error().message();
  using Source = std::array<std::string, 4>;  // id, url, path, ref
  std::vector<Source> got;
  for (const Item& i : m->items) got.push_back({i.id, i.url, i.path, i.ref});
  const std::string url = "https://example.com/org/svc-a.git";
  EXPECT_EQ(got, (std::vector<Source>{{"svc-a", url, "", ""},
                                      {"svc-a-old", url, "", "v1.0"},
                                      {"local", "", "/base/local", "feature/x"}}));
  // Two entries with one url need ids of their own.
  auto twice = parse(
      "task = \"t\"\nmodel = \"m\"\n[[repo]]\nurl = \"https://h/r.git\"\n[[repo]]\n"
      "url = \"https://h/r.git\"\n");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message().find("\"r\" is already the id of the repo at line 3"),
            std::string::npos)
      << twice.error().message();
}

TEST(BatchManifest, ABadUrlOrRefIsAnErrorAtItsFileLineAndColumn) {
  auto file_url = parse("task = \"t\"\nmodel = \"m\"\n[[repo]]\nurl = \"file:///srv/r.git\"\n");
  ASSERT_FALSE(file_url);
  EXPECT_EQ(file_url.error().message().rfind("m.toml:4:7: repo[0].url: \"file:///srv/r.git\": "
                                             "file:// names a local repository",
                                             0),
            0u)
      << file_url.error().message();
  auto creds = parse("task = \"t\"\nmodel = \"m\"\n[[repo]]\nurl = \"https://u:tok@h/r.git\"\n");
  ASSERT_FALSE(creds);
  EXPECT_NE(creds.error().message().find("m.toml:4:7: repo[0].url: "), std::string::npos);
  EXPECT_NE(creds.error().message().find("a user or a password"), std::string::npos);
  auto both =
      parse("task = \"t\"\nmodel = \"m\"\n[[repo]]\npath = \"a\"\nurl = \"https://h/r.git\"\n");
  ASSERT_FALSE(both);
  EXPECT_NE(both.error().message().find("m.toml:5:7: repo[0].url: give path"), std::string::npos)
      << both.error().message();
  auto ref =
      parse("task = \"t\"\nmodel = \"m\"\n[[repo]]\nurl = \"https://h/r.git\"\nref = \"-x\"\n");
  ASSERT_FALSE(ref);
  EXPECT_NE(ref.error().message().find("m.toml:5:7: repo[0].ref: \"-x\" is not a ref"),
            std::string::npos)
      << ref.error().message();
  auto unknown =
      parse("task = \"t\"\nmodel = \"m\"\n[[repo]]\nurl = \"https://h/r.git\"\nbranch = \"x\"\n");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("m.toml:5:1: repo[0].branch: unknown key"),
            std::string::npos)
      << unknown.error().message();
}

TEST(BatchShard, EveryItemIsInExactlyOneShard) {
  for (unsigned n : {1u, 2u, 4u, 7u}) {
    std::map<unsigned, int> sizes;
    for (int i = 0; i < 200; ++i) {
      const std::string id = "repo-" + std::to_string(i);
      int in = 0;
      for (unsigned s = 0; s < n; ++s)
        if (in_shard(id, s, n)) {
          ++in;
          ++sizes[s];
        }
      EXPECT_EQ(in, 1) << id << " of " << n;
    }
    for (unsigned s = 0; s < n; ++s) EXPECT_GT(sizes[s], 0) << "shard " << s << " of " << n;
  }
}

TEST(BatchShard, TheAssignmentIsFixedByTheIdAlone) {
  // FNV-1a of "svc-a" is 0x5fd2d0e82a3e0c0f... : a fixed function, so these hold on every
  // machine and in every build.
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : std::string("svc-a")) h = (h ^ c) * 1099511628211ULL;
  for (unsigned n : {2u, 3u, 5u}) EXPECT_TRUE(in_shard("svc-a", h % n, n));
}

TEST(BatchShard, ParseAcceptsOnlyIOfNWithIBelowN) {
  auto ok = parse_shard("3/4");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->first, 3u);
  EXPECT_EQ(ok->second, 4u);
  for (const char* bad : {"4/4", "1/0", "1", "a/b", "-1/4", "1/4x", " 1/4", ""})
    EXPECT_FALSE(parse_shard(bad)) << bad;
}

}  // namespace
}  // namespace moat::agent::batch

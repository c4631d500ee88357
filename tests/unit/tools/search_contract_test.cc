// tests/unit/tools/search_contract_test.cc: grep, find and ls contracts. grep and find run
// twice, with the built-in back end and with rg/fdfind, and must print the same text.
#include <unistd.h>

#include "tests/unit/tools/contract_fixture.h"
#include "tools/truncate.h"

namespace moat::tools::testing {
namespace {

// A tree with everything the search tools must skip or keep.
void make_tree(ToolContractTest& t) {
  t.write(".gitignore", "*.log\nbuild/\n!keep.log\n");
  t.write("src/main.c", "int main() {\n  return helper();\n}\n");
  t.write("src/helper.c", "int helper() {\n  return 42;  // the answer\n}\n");
  t.write("src/.hidden.c", "int hidden_main = 1;\n");
  t.write("app.log", "main log\n");
  t.write("keep.log", "keep main\n");
  t.write("build/out.c", "int main_built;\n");
  t.write("docs/readme.md", "Use main to start.\nMAIN in capitals.\n");
  t.write("sub/.gitignore", "secret.txt\n");
  t.write("sub/secret.txt", "main secret\n");
  t.write("sub/open.txt", "main open\n");
  t.write(".git/config", "main in git\n");
  t.write("bin.dat", std::string("main\0binary", 11));
}

class SearchContract : public ToolContractTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    ToolContractTest::SetUp();
    if (IsSkipped()) return;
    ctx_.use_external_search = GetParam();
    make_tree(*this);
  }
  // Skips the external variant when the sandbox has no rg/fdfind.
  bool external_missing(const char* a, const char* b = nullptr) {
    if (!GetParam()) return false;
    for (const char* dir : {"/usr/local/bin/", "/usr/bin/", "/bin/"}) {
      if (::access((std::string(dir) + a).c_str(), X_OK) == 0) return false;
      if (b && ::access((std::string(dir) + b).c_str(), X_OK) == 0) return false;
    }
    return true;
  }
};

#define SKIP_WITHOUT(...) \
  if (external_missing(__VA_ARGS__)) GTEST_SKIP() << "not installed: " #__VA_ARGS__

TEST_P(SearchContract, GrepFindsMatchesRespectingGitignoreSortedByPath) {
  SKIP_WITHOUT("rg");
  const auto r = run("grep", {{"pattern", "main"}});
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(text(r),
            "docs/readme.md:1: Use main to start.\n"
            "keep.log:1: keep main\n"
            "src/.hidden.c:1: int hidden_main = 1;\n"
            "src/main.c:1: int main() {\n"
            "sub/open.txt:1: main open\n");
}

TEST_P(SearchContract, GrepShowsContextLinesWithADash) {
  SKIP_WITHOUT("rg");
  const auto r = run("grep", {{"pattern", "helper\\(\\)"}, {"context", 1}, {"glob", "*.c"}});
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(text(r),
            "src/helper.c:1: int helper() {\n"
            "src/helper.c-2-   return 42;  // the answer\n"
            "src/main.c-1- int main() {\n"
            "src/main.c:2:   return helper();\n"
            "src/main.c-3- }\n");
}

TEST_P(SearchContract, GrepIgnoreCaseAndLiteral) {
  SKIP_WITHOUT("rg");
  const auto r = run("grep", {{"pattern", "MAIN"}, {"ignoreCase", true}, {"path", "docs"}});
  EXPECT_EQ(text(r), "readme.md:1: Use main to start.\nreadme.md:2: MAIN in capitals.\n");
  const auto l = run("grep", {{"pattern", "helper()"}, {"literal", true}, {"path", "src/main.c"}});
  EXPECT_EQ(text(l), "main.c:2:   return helper();\n");
}

TEST_P(SearchContract, GrepLimitSaysHowToGetMore) {
  SKIP_WITHOUT("rg");
  const auto r = run("grep", {{"pattern", "main"}, {"limit", 2}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(text(r),
            "docs/readme.md:1: Use main to start.\n"
            "keep.log:1: keep main\n\n"
            "[2 matches limit reached. Use limit=4 for more, or refine pattern]");
}

TEST_P(SearchContract, GrepCutsLongLinesAndSaysSo) {
  SKIP_WITHOUT("rg");
  write("long.txt", "needle " + std::string(kGrepMaxLineLength + 100, 'z') + "\n");
  const auto r = run("grep", {{"pattern", "needle"}, {"path", "long.txt"}});
  EXPECT_EQ(text(r), "long.txt:1: needle " + std::string(kGrepMaxLineLength - 7, 'z') +
                         "... [truncated]\n\n[Some lines truncated to " +
                         std::to_string(kGrepMaxLineLength) +
                         " characters. Use read to see full lines]");
}

TEST_P(SearchContract, GrepOutputPastTheByteLimitIsCut) {
  SKIP_WITHOUT("rg");
  std::string many;
  for (int i = 0; i < 1500; ++i) many += "hit " + std::string(60, 'x') + "\n";
  write("many.txt", many);
  const auto r = run("grep", {{"pattern", "hit"}, {"limit", 5000}, {"path", "many.txt"}});
  EXPECT_NE(text(r).find("\n\n[" + format_size(kMaxBytes) + " limit reached]"), std::string::npos);
  EXPECT_LE(text(r).size(), kMaxBytes + 100);
}

TEST_P(SearchContract, GrepShowsInvalidUtf8AsReplacementCharacters) {
  SKIP_WITHOUT("rg");
  write("latin1.txt", "caf\xE9 main\n");
  const auto r = run("grep", {{"pattern", "main"}, {"path", "latin1.txt"}});
  EXPECT_EQ(text(r), "latin1.txt:1: caf\xEF\xBF\xBD main\n");
}

TEST_P(SearchContract, GrepWithoutMatchesSaysSo) {
  SKIP_WITHOUT("rg");
  const auto r = run("grep", {{"pattern", "nothing-like-this"}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(text(r), "No matches found");
}

TEST_P(SearchContract, GrepInvalidRegexIsAnError) {
  SKIP_WITHOUT("rg");
  const auto r = run("grep", {{"pattern", "(unclosed"}});
  EXPECT_TRUE(r.is_error) << text(r);
}

TEST_P(SearchContract, FindMatchesNamesAtAnyDepthIncludingDotfiles) {
  SKIP_WITHOUT("fdfind", "fd");
  const auto r = run("find", {{"pattern", "*.c"}});
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(text(r), "src/.hidden.c\nsrc/helper.c\nsrc/main.c\n");
}

TEST_P(SearchContract, FindPatternsWithASlashMatchThePath) {
  SKIP_WITHOUT("fdfind", "fd");
  EXPECT_EQ(text(run("find", {{"pattern", "**/*.md"}})), "docs/readme.md\n");
  EXPECT_EQ(text(run("find", {{"pattern", "sub/*"}})), "sub/.gitignore\nsub/open.txt\n");
  EXPECT_EQ(text(run("find", {{"pattern", "*.txt"}, {"path", "sub"}})), "open.txt\n");
}

TEST_P(SearchContract, FindListsEverythingNotIgnored) {
  SKIP_WITHOUT("fdfind", "fd");
  EXPECT_EQ(text(run("find", {{"pattern", "*"}})),
            ".gitignore\nbin.dat\ndocs/readme.md\nkeep.log\nsrc/.hidden.c\nsrc/helper.c\n"
            "src/main.c\nsub/.gitignore\nsub/open.txt\n");
}

TEST_P(SearchContract, FindLimitSaysHowToGetMore) {
  SKIP_WITHOUT("fdfind", "fd");
  EXPECT_EQ(text(run("find", {{"pattern", "*.c"}, {"limit", 1}})),
            "src/.hidden.c\n\n[1 results limit reached. Use limit=2 for more, or refine pattern]");
}

TEST_P(SearchContract, FindWithoutResultsSaysSo) {
  SKIP_WITHOUT("fdfind", "fd");
  const auto r = run("find", {{"pattern", "*.rs"}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(text(r), "No files found matching pattern");
}

TEST_P(SearchContract, FindInAFileIsAnError) {
  SKIP_WITHOUT("fdfind", "fd");
  const auto r = run("find", {{"pattern", "*"}, {"path", "keep.log"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), path("keep.log") + " is not a directory");
}

INSTANTIATE_TEST_SUITE_P(BuiltinAndExternal, SearchContract, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "External" : "Builtin"; });

// The two back ends agree on a larger tree, for every argument combination.
TEST_F(ToolContractTest, GrepAndFindBackEndsPrintTheSameText) {
  make_tree(*this);
  for (int i = 0; i < 40; ++i)
    write("gen/d" + std::to_string(i % 7) + "/f" + std::to_string(i) + (i % 3 ? ".c" : ".h"),
          "line main " + std::to_string(i) + "\nother\nMain again\n");
  write("gen/.gitignore", "d3/\n*.h\n!f9.h\n");
  const std::vector<nlohmann::json> greps = {
      {{"pattern", "main"}},
      {{"pattern", "main"}, {"ignoreCase", true}, {"limit", 17}},
      {{"pattern", "ma.n"}, {"context", 1}, {"path", "gen"}},
      {{"pattern", "main"}, {"glob", "*.h"}},
      {{"pattern", "f[0-9]+"}, {"literal", true}}};
  const std::vector<nlohmann::json> finds = {{{"pattern", "*.c"}},
                                             {{"pattern", "*.h"}, {"path", "gen"}},
                                             {{"pattern", "gen/**"}, {"limit", 9}}};
  auto both = [&](const std::string& tool, const nlohmann::json& args) {
    ctx_.use_external_search = false;
    const std::string builtin = text(run(tool, args));
    ctx_.use_external_search = true;
    const std::string external = text(run(tool, args));
    EXPECT_EQ(builtin, external) << tool << " " << args.dump();
  };
  for (const auto& a : greps) both("grep", a);
  for (const auto& a : finds) both("find", a);
}

using LsContract = ToolContractTest;

TEST_F(LsContract, ListsSortedWithDotfilesAndDirectorySlashes) {
  make_tree(*this);
  const auto r = run("ls", nlohmann::json::object());
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(text(r), ".git/\n.gitignore\nbin.dat\ndocs/\nkeep.log\nsrc/\nsub/");
  EXPECT_EQ(text(run("ls", {{"path", "sub"}})), ".gitignore\nopen.txt");
}

TEST_F(LsContract, LimitSaysHowToGetMore) {
  make_tree(*this);
  EXPECT_EQ(text(run("ls", {{"limit", 2}})),
            ".git/\n.gitignore\n\n[2 entries limit reached. Use limit=4 for more]");
}

TEST_F(LsContract, EmptyDirectorySaysSo) {
  std::filesystem::create_directories(path("empty"));
  EXPECT_EQ(text(run("ls", {{"path", "empty"}})), "(empty directory)");
}

TEST_F(LsContract, AFileIsAnErrorPointingToRead) {
  write("f.txt", "x");
  const auto r = run("ls", {{"path", "f.txt"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), path("f.txt") + " is not a directory; use read for files");
}

TEST_F(LsContract, MissingDirectoryIsAnError) {
  const auto r = run("ls", {{"path", "nope"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), "path not found: nope (resolved to " + path("nope") + ")");
}

}  // namespace
}  // namespace moat::tools::testing

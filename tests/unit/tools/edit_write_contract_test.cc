// tests/unit/tools/edit_write_contract_test.cc: the contracts of edit and write, every
// error text, and the mutation queue through execute() (50 concurrent edits, 3 spellings).
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "tests/unit/tools/contract_fixture.h"

namespace moat::tools::testing {
namespace {

using EditContract = ToolContractTest;
using WriteContract = ToolContractTest;
using MutationContract = ToolContractTest;

nlohmann::json one_edit(const std::string& path, const std::string& old_text,
                        const std::string& new_text) {
  return {{"path", path}, {"edits", {{{"oldText", old_text}, {"newText", new_text}}}}};
}

TEST_F(EditContract, ReplacesUniqueTextAndAnswersWithAUnifiedDiff) {
  write("f.txt", "one\ntwo\nthree\n");
  const auto r = run("edit", one_edit("f.txt", "two", "TWO"));
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(slurp(path("f.txt")), "one\nTWO\nthree\n");
  EXPECT_EQ(r.details["diff"],
            "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n");
  EXPECT_EQ(text(r).rfind("Applied 1 edit(s) to f.txt.\n\n--- a/f.txt", 0), 0u) << text(r);
}

TEST_F(EditContract, AllEditsMatchTheOriginalAndApplyTogether) {
  write("f.txt", "a = 1\nb = 2\nc = 3\n");
  const auto r = run("edit", {{"path", "f.txt"},
                              {"edits",
                               {{{"oldText", "a = 1"}, {"newText", "b = 2"}},
                                {{"oldText", "b = 2"}, {"newText", "x = 9"}}}}});
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(slurp(path("f.txt")), "b = 2\nx = 9\nc = 3\n");
}

TEST_F(EditContract, NotFoundNamesTheEditAndLeavesTheFileAlone) {
  write("f.txt", "alpha\nbeta\n");
  const auto r =
      run("edit",
          {{"path", "f.txt"},
           {"edits",
            {{{"oldText", "alpha"}, {"newText", "A"}}, {{"oldText", "gamma"}, {"newText", "G"}}}}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r).rfind("edit 2: oldText not found in f.txt. It must match the file exactly", 0),
            0u)
      << text(r);
  EXPECT_EQ(slurp(path("f.txt")), "alpha\nbeta\n");
}

TEST_F(EditContract, AmbiguousTextSaysHowManyOccurrences) {
  write("f.txt", "x\nx\nx\n");
  const auto r = run("edit", one_edit("f.txt", "x", "y"));
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r),
            "edit 1: oldText occurs 3 times in f.txt; it must be unique. Add surrounding lines to "
            "make it unique.");
}

TEST_F(EditContract, OverlappingEditsNameEachOther) {
  write("f.txt", "abcdef\n");
  const auto r =
      run("edit",
          {{"path", "f.txt"},
           {"edits",
            {{{"oldText", "abcd"}, {"newText", "1"}}, {{"oldText", "cdef"}, {"newText", "2"}}}}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r),
            "edit 2: oldText overlaps edit 1; merge them into one edit or make them disjoint");
}

TEST_F(EditContract, AnEditThatChangesNothingIsAnError) {
  write("f.txt", "same\n");
  const auto r = run("edit", one_edit("f.txt", "same", "same"));
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), "edit 1: newText is identical to oldText; the edit would change nothing");
}

TEST_F(EditContract, NormalisedFallbackKeepsTheBytesOfUntouchedLines) {
  // Smart quotes, an en dash, a no-break space and trailing blanks the model cannot see.
  const std::string original =
      "keep \xE2\x80\x9Cthis\xE2\x80\x9D   \n"
      "say \xE2\x80\x98hi\xE2\x80\x99 \xE2\x80\x93 now\xC2\xA0ok  \n"
      "tail\t\n";
  write("f.txt", original);
  const auto r = run("edit", one_edit("f.txt", "say 'hi' - now ok", "say 'bye'"));
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(r.details["normalisedMatch"], true);
  EXPECT_EQ(slurp(path("f.txt")), "keep \xE2\x80\x9Cthis\xE2\x80\x9D   \nsay 'bye'  \ntail\t\n");
}

TEST_F(EditContract, NfkcFormsMatchTheirCompatibilityEquivalents) {
  write("f.txt", "x = \xEF\xAC\x81le_name\n");  // "ﬁ" ligature
  const auto r = run("edit", one_edit("f.txt", "x = file_name", "x = path"));
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(slurp(path("f.txt")), "x = path\n");
}

TEST_F(EditContract, CrlfAndBomArePreserved) {
  write("f.txt", "\xEF\xBB\xBFone\r\ntwo\r\nthree\r\n");
  const auto r = run("edit", one_edit("f.txt", "two\nthree", "2\n3\n4"));
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(slurp(path("f.txt")), "\xEF\xBB\xBFone\r\n2\r\n3\r\n4\r\n");
}

TEST_F(EditContract, TopLevelOldTextAndNewTextAreFoldedIntoEdits) {
  write("f.txt", "old\n");
  const auto r = run("edit", {{"path", "f.txt"}, {"oldText", "old"}, {"newText", "new"}});
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(slurp(path("f.txt")), "new\n");
  EXPECT_EQ(r.details["repairs"][0], "oldText/newText: folded into edits[]");
}

TEST_F(EditContract, EditsGivenAsAJsonStringAreParsed) {
  write("f.txt", "old\n");
  const auto r =
      run("edit", {{"path", "f.txt"}, {"edits", R"([{"oldText":"old","newText":"new"}])"}});
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(slurp(path("f.txt")), "new\n");
}

TEST_F(EditContract, SchemaErrorsNameTheNestedField) {
  const auto r = run("edit", {{"path", "f.txt"}, {"edits", {{{"oldText", 3}}}}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(text(r).find("- edits[0].newText: required field is missing"), std::string::npos)
      << text(r);
  EXPECT_NE(text(r).find("- edits[0].oldText: expected string, got integer"), std::string::npos);
  const auto e = run("edit", {{"path", "f.txt"}, {"edits", nlohmann::json::array()}});
  EXPECT_NE(text(e).find("- edits: needs at least 1 item(s)"), std::string::npos) << text(e);
}

TEST_F(EditContract, MissingFileIsAnError) {
  const auto r = run("edit", one_edit("ghost.txt", "a", "b"));
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), "path not found: ghost.txt (resolved to " + path("ghost.txt") + ")");
}

TEST_F(EditContract, RefusalAsksForWriteAccessAndLeavesTheFile) {
  write("f.txt", "a\n");
  refuse(path("f.txt"));
  const auto r = run("edit", one_edit("f.txt", "a", "b"));
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r).rfind("refused by policy: ", 0), 0u);
  EXPECT_EQ(asked().back().second, PathAccess::kWrite);
  EXPECT_EQ(slurp(path("f.txt")), "a\n");
}

TEST_F(WriteContract, CreatesParentsAndReportsBytes) {
  const auto r = run("write", {{"path", "deep/er/new.txt"}, {"content", "hello"}});
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(text(r), "Wrote 5 bytes to " + path("deep/er/new.txt"));
  EXPECT_EQ(slurp(path("deep/er/new.txt")), "hello");
}

TEST_F(WriteContract, ReplacesAndKeepsThePermissionBits) {
  write("f.sh", "old");
  ASSERT_EQ(::chmod(path("f.sh").c_str(), 0750), 0);
  const auto r = run("write", {{"path", "f.sh"}, {"content", "#!/bin/sh\n"}});
  ASSERT_FALSE(r.is_error) << text(r);
  struct stat st {};
  ASSERT_EQ(::stat(path("f.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  EXPECT_EQ(slurp(path("f.sh")), "#!/bin/sh\n");
  // No temporary file is left next to it.
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(ws_))
    entries += e.path().filename() != "" ? 1 : 0;
  EXPECT_EQ(entries, 1u);
}

TEST_F(WriteContract, ANewFileThroughASymlinkedDirectoryGetsItsCanonicalPath) {
  std::filesystem::create_directories(path("real"));
  ASSERT_EQ(::symlink("real", path("alias").c_str()), 0);
  const auto r = run("write", {{"path", "alias/new.txt"}, {"content", "x"}});
  ASSERT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(asked().back().first, path("real/new.txt"));
  EXPECT_EQ(slurp(path("real/new.txt")), "x");
}

TEST_F(WriteContract, ADirectoryCannotBeOverwritten) {
  std::filesystem::create_directories(path("d"));
  const auto r = run("write", {{"path", "d"}, {"content", "x"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r),
            "cannot write " + path("d") + ": " + path("d") + " is a directory: Is a directory");
}

TEST_F(WriteContract, ParentDotDotAfterAMissingDirectoryIsRefused) {
  const auto r = run("write", {{"path", "nowhere/../x.txt"}, {"content", "x"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(text(r).find("'..' after a directory that does not exist"), std::string::npos)
      << text(r);
}

// The policy approved real/…; if the sandboxed code swaps real for a symlink to elsewhere
// before the operation runs, the operation fails instead of following it.
TEST_F(WriteContract, ASymlinkSwappedInAfterThePolicyCheckIsNotFollowed) {
  write("real/f.txt", "approved\n");
  write("other/f.txt", "elsewhere\n");
  ctx_.authorize = [this](const std::string&, PathAccess) -> std::optional<std::string> {
    std::filesystem::rename(path("real"), path("moved"));
    std::filesystem::create_directory_symlink("other", path("real"));
    return std::nullopt;
  };
  const auto w = run("write", {{"path", "real/f.txt"}, {"content", "overwritten\n"}});
  EXPECT_TRUE(w.is_error);
  EXPECT_NE(text(w).find("Too many levels of symbolic links"), std::string::npos) << text(w);
  EXPECT_EQ(slurp(path("other/f.txt")), "elsewhere\n");
  // Again for read, with the tree restored first.
  std::filesystem::remove(path("real"));
  std::filesystem::rename(path("moved"), path("real"));
  const auto r = run("read", {{"path", "real/f.txt"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r).find("elsewhere"), std::string::npos) << text(r);
}

TEST_F(WriteContract, RefusalCreatesNothing) {
  refuse(path("no.txt"));
  const auto r = run("write", {{"path", "no.txt"}, {"content", "x"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_FALSE(std::filesystem::exists(path("no.txt")));
}

// 50 edits at once through three spellings of one file: without the per-canonical-path
// queue, read-modify-write races lose some of them.
TEST_F(MutationContract, FiftyConcurrentEditsThroughThreeSpellingsAllLand) {
  ASSERT_EQ(::symlink(".", path("alias").c_str()), 0);
  const std::string spellings[] = {"f.txt", ws_ + "/f.txt", "alias/./f.txt"};
  const int rounds = harness_->is_sandboxed() ? 3 : 100;
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::string content;
    for (int i = 0; i < 50; ++i) content += "slot " + std::to_string(i) + ": empty\n";
    write("f.txt", content);
    std::vector<ToolResult> results(50);
    std::vector<std::thread> threads;
    for (int i = 0; i < 50; ++i)
      threads.emplace_back([&, i] {
        const std::string n = std::to_string(i);
        results[i] = run(
            "edit", one_edit(spellings[i % 3], "slot " + n + ": empty", "slot " + n + ": done"));
      });
    for (auto& t : threads) t.join();
    std::string expected;
    for (int i = 0; i < 50; ++i) {
      EXPECT_FALSE(results[i].is_error) << text(results[i]);
      expected += "slot " + std::to_string(i) + ": done\n";
    }
    ASSERT_EQ(slurp(path("f.txt")), expected);
  }
}

TEST_F(MutationContract, WritesToOneFileLandInRequestOrder) {
  std::vector<CallContext> contexts(20, ctx_);
  for (auto& c : contexts) take_mutation_ticket("write", c);  // as moatd does, in arrival order
  std::vector<std::thread> threads;
  for (int i = 19; i >= 0; --i)  // started in reverse: the tickets decide, not the threads
    threads.emplace_back([&, i] {
      execute("write", {{"path", i % 2 ? "o.txt" : "./o.txt"}, {"content", std::to_string(i)}},
              contexts[i]);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(slurp(path("o.txt")), "19");
}

TEST_F(MutationContract, AContextReusedForManyCallsNeverBlocks) {
  CallContext ctx = ctx_;
  for (int i = 0; i < 5; ++i) {
    const auto r = execute("write", {{"path", "r.txt"}, {"content", std::to_string(i)}}, ctx);
    ASSERT_FALSE(r.is_error) << text(r);
  }
  take_mutation_ticket("write", ctx);
  EXPECT_FALSE(execute("write", {{"path", "r.txt"}, {"content", "last"}}, ctx).is_error);
  EXPECT_EQ(slurp(path("r.txt")), "last");
}

}  // namespace
}  // namespace moat::tools::testing

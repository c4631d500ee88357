// tests/unit/tools/read_bash_contract_test.cc: the contracts of read, bash and of execute()
// itself (unknown tool, schema violations, repairs, policy refusals), every notice and error.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "tests/unit/tools/contract_fixture.h"
#include "tools/truncate.h"

namespace moat::tools::testing {
namespace {

using ReadContract = ToolContractTest;
using BashContract = ToolContractTest;
using ExecuteContract = ToolContractTest;

TEST_F(ReadContract, SmallFileComesBackWhole) {
  write("a.txt", "alpha\nbeta\n");
  const auto r = run("read", {{"path", "a.txt"}});
  EXPECT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(text(r), "alpha\nbeta\n");
}

TEST_F(ReadContract, OffsetAndLimitSelectLinesAndSayHowManyRemain) {
  write("a.txt", numbered_lines(10));
  const auto r = run("read", {{"path", "a.txt"}, {"offset", 3}, {"limit", 2}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(text(r), "line 3\nline 4\n\n[6 more lines in file. Use offset=5 to continue.]");
}

TEST_F(ReadContract, MoreThanMaxLinesIsTruncatedWithTheOffsetToContinue) {
  write("a.txt", numbered_lines(kMaxLines + 500));
  const auto r = run("read", {{"path", "a.txt"}});
  EXPECT_FALSE(r.is_error);
  const std::string t = text(r);
  EXPECT_NE(t.find("line " + std::to_string(kMaxLines) + "\n"), std::string::npos);
  EXPECT_EQ(t.find("line " + std::to_string(kMaxLines + 1) + "\n"), std::string::npos);
  EXPECT_NE(t.find("[Showing lines 1-" + std::to_string(kMaxLines) + " of " +
                   std::to_string(kMaxLines + 500) +
                   ". Use offset=" + std::to_string(kMaxLines + 1) + " to continue.]"),
            std::string::npos)
      << t.substr(t.size() - 200);
}

TEST_F(ReadContract, MoreThanMaxBytesIsTruncatedAtAWholeLine) {
  const std::string line(99, 'x');
  std::string content;
  for (int i = 0; i < 1000; ++i) content += line + "\n";  // 100 000 bytes, 1000 lines
  write("a.txt", content);
  const auto r = run("read", {{"path", "a.txt"}, {"offset", 11}});
  EXPECT_FALSE(r.is_error);
  const std::size_t kept = (kMaxBytes + 1) / 100;  // 99 bytes + separator per line
  const std::string t = text(r);
  EXPECT_NE(t.find("[Showing lines 11-" + std::to_string(10 + kept) + " of 1000 (" +
                   format_size(kMaxBytes) + " limit). Use offset=" + std::to_string(11 + kept) +
                   " to continue.]"),
            std::string::npos)
      << t.substr(t.size() - 200);
  EXPECT_LE(t.find("\n\n["), kMaxBytes);
}

TEST_F(ReadContract, ABigFileReadsTheSameLinesAcrossBufferBoundaries) {
  // ~3.6 MB of lines of varying length: slices start and end at every kind of place
  // relative to the read buffer.
  std::vector<std::string> lines;
  std::string content;
  for (int i = 1; i <= 40000; ++i) {
    lines.push_back("row " + std::to_string(i) + " " +
                    std::string(static_cast<std::size_t>(i * 7919 % 150), 'q'));
    content += lines.back() + "\n";
  }
  write("big.txt", content);
  for (std::size_t offset : {1u, 1733u, 2561u, 20000u, 39999u}) {
    SCOPED_TRACE("offset " + std::to_string(offset));
    const auto r = run("read", {{"path", "big.txt"}, {"offset", offset}, {"limit", 3}});
    ASSERT_FALSE(r.is_error) << text(r);
    std::string expected;
    for (std::size_t k = offset; k < std::min<std::size_t>(offset + 3, 40001); ++k)
      expected += lines[k - 1] + "\n";
    if (offset + 2 < 40000)
      expected += "\n[" + std::to_string(40000 - (offset + 2)) +
                  " more lines in file. Use offset=" + std::to_string(offset + 3) +
                  " to continue.]";
    EXPECT_EQ(text(r), expected);
  }
}

TEST_F(ReadContract, ImageOverTheLimitIsAnError) {
  write("huge.gif", "GIF89a" + std::string(kMaxImageBytes, 'x'));
  const auto r = run("read", {{"path", "huge.gif"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), "image is " + format_size(kMaxImageBytes + 6) + ", over the " +
                         format_size(kMaxImageBytes) + " limit of one image block");
}

TEST_F(ReadContract, OffsetBeyondEndOfFileIsAnErrorNamingTheLineCount) {
  write("a.txt", numbered_lines(10));
  const auto r = run("read", {{"path", "a.txt"}, {"offset", 11}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), "offset 11 is beyond end of file (10 lines)");
}

TEST_F(ReadContract, FirstLineOverTheByteLimitGivesACommandThatShowsIt) {
  write("big.txt", "short\n" + std::string(kMaxBytes + 10, 'y') + "\nend\n");
  const auto r = run("read", {{"path", "big.txt"}, {"offset", 2}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(text(r), "[Line 2 is " + format_size(kMaxBytes + 10) + ", over the " +
                         format_size(kMaxBytes) +
                         " limit. Use bash: sed -n '2p' 'big.txt' | head -c " +
                         std::to_string(kMaxBytes) + "]");
}

TEST_F(ReadContract, ImagesAreDetectedFromBytesNotFromTheName) {
  const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + std::string("\0\0\0\rIHDR", 8);
  write("picture.txt", png);
  const auto r = run("read", {{"path", "picture.txt"}});
  ASSERT_FALSE(r.is_error) << text(r);
  ASSERT_EQ(r.content.size(), 2u);
  EXPECT_EQ(r.content[1]["type"], "image");
  EXPECT_EQ(r.content[1]["mimeType"], "image/png");
  EXPECT_EQ(r.content[1]["data"], "iVBORw0KGgoAAAANSUhEUg==");
  write("fake.png", "not an image\n");
  const auto t = run("read", {{"path", "fake.png"}});
  EXPECT_EQ(text(t), "not an image\n");
}

TEST_F(ReadContract, EachImageFormatGetsItsMimeType) {
  const std::pair<std::string, std::string> cases[] = {
      {std::string("\xFF\xD8\xFF\xE0", 4), "image/jpeg"},
      {"GIF89a....", "image/gif"},
      {std::string("RIFF\x10\0\0\0WEBPVP8 ", 16), "image/webp"}};
  for (const auto& [bytes, mime] : cases) {
    write("img", bytes);
    const auto r = run("read", {{"path", "img"}});
    ASSERT_EQ(r.content.size(), 2u) << mime;
    EXPECT_EQ(r.content[1]["mimeType"], mime);
  }
}

TEST_F(ReadContract, MissingFileIsAnError) {
  const auto r = run("read", {{"path", "nope.txt"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), "path not found: nope.txt (resolved to " + path("nope.txt") + ")");
}

TEST_F(ReadContract, DirectoryIsAnErrorPointingToLs) {
  std::filesystem::create_directories(path("d"));
  const auto r = run("read", {{"path", "d"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), path("d") + " is a directory; use ls to list it");
}

TEST_F(ReadContract, BinaryFileIsAnErrorSuggestingXxd) {
  write("blob", std::string("ab\0cd", 5));
  const auto r = run("read", {{"path", "blob"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(text(r).find("looks binary"), std::string::npos);
  EXPECT_NE(text(r).find("xxd"), std::string::npos);
}

TEST_F(ReadContract, EmptyFileSaysSo) {
  write("empty", "");
  const auto r = run("read", {{"path", "empty"}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(text(r), "[empty file]");
}

TEST_F(ReadContract, SymlinksResolveAndThePolicySeesTheCanonicalPath) {
  write("real/target.txt", "hello\n");
  ASSERT_EQ(::symlink("real", path("link").c_str()), 0);
  const auto r = run("read", {{"path", "link/./target.txt"}});
  EXPECT_EQ(text(r), "hello\n");
  const auto asked = this->asked();
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].first, path("real/target.txt"));
  EXPECT_EQ(asked[0].second, PathAccess::kRead);
}

// A symlink planted in the workspace is judged by where it leads, never by its name; ".."
// past the root stays at the root.
TEST_F(ReadContract, ASymlinkOutOfTheWorkspaceIsJudgedAtItsTarget) {
  ASSERT_EQ(::symlink("/etc/hostname", path("escape").c_str()), 0);
  ASSERT_EQ(::symlink("../../../../../../../../../../../etc/hostname", path("climb").c_str()), 0);
  refuse("/etc/hostname");
  for (const char* name : {"escape", "climb"}) {
    SCOPED_TRACE(name);
    const auto r = run("read", {{"path", name}});
    EXPECT_TRUE(r.is_error);
    EXPECT_EQ(text(r), "refused by policy: path /etc/hostname is denied by rule test.deny");
    EXPECT_EQ(asked().back().first, "/etc/hostname");
  }
}

TEST_F(ReadContract, RefusalByPolicyIsAnErrorCarryingTheReason) {
  write("secret.txt", "s3cret\n");
  refuse(path("secret.txt"));
  const auto r = run("read", {{"path", "secret.txt"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r),
            "refused by policy: path " + path("secret.txt") + " is denied by rule test.deny");
}

TEST_F(ReadContract, InvalidUtf8ComesBackAsReplacementCharacters) {
  write("latin1.txt", "caf\xE9\n");
  const auto r = run("read", {{"path", "latin1.txt"}});
  EXPECT_EQ(text(r), "caf\xEF\xBF\xBD\n");
}

TEST_F(ExecuteContract, UnknownToolIsAnErrorListingTheTools) {
  const auto r = run("rm_rf", {});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r).rfind("unknown tool 'rm_rf'; the available tools are: read, bash", 0), 0u)
      << text(r);
}

TEST_F(ExecuteContract, SchemaViolationsListEveryOffendingField) {
  const auto r = run("read", {{"offset", "x"}, {"limit", 0}, {"colour", "red"}});
  EXPECT_TRUE(r.is_error);
  const std::string t = text(r);
  EXPECT_NE(t.find("invalid arguments for read:"), std::string::npos);
  EXPECT_NE(t.find("- path: required field is missing"), std::string::npos) << t;
  EXPECT_NE(t.find("- offset: expected integer, got string"), std::string::npos) << t;
  EXPECT_NE(t.find("- limit: must be >= 1"), std::string::npos) << t;
  EXPECT_NE(t.find("- colour: unknown field (allowed: "), std::string::npos) << t;
}

TEST_F(ExecuteContract, NumericStringsAreRepairedBeforeValidation) {
  write("a.txt", numbered_lines(5));
  const auto r = run("read", {{"path", "a.txt"}, {"offset", "4"}});
  EXPECT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(text(r), "line 4\nline 5\n");
  EXPECT_EQ(r.details["repairs"][0], "offset: converted a numeric string to a number");
}

TEST_F(BashContract, OutputComesBackAndRunsInTheWorkspace) {
  const auto r = run("bash", {{"command", "pwd; echo hi"}});
  EXPECT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(text(r), ws_ + "\nhi\n");
  EXPECT_EQ(r.details["exitCode"], 0);
}

TEST_F(BashContract, StdoutAndStderrAreInterleavedInOrder) {
  const auto r = run("bash", {{"command", "echo a; sleep 0.05; echo b >&2; sleep 0.05; echo c"}});
  EXPECT_EQ(text(r), "a\nb\nc\n");
}

TEST_F(BashContract, StdinIsDevNull) {
  const auto r = run("bash", {{"command", "cat; echo done"}, {"timeout", 10}});
  EXPECT_FALSE(r.is_error) << text(r);
  EXPECT_EQ(text(r), "done\n");
}

TEST_F(BashContract, NoOutputSaysSo) {
  const auto r = run("bash", {{"command", "true"}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(text(r), "(no output)");
}

TEST_F(BashContract, NonZeroExitIsAnErrorCarryingTheOutputAndTheCode) {
  const auto r = run("bash", {{"command", "echo oops; exit 3"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), "oops\n\nexit code 3");
  EXPECT_EQ(r.details["exitCode"], 3);
}

TEST_F(BashContract, TimeoutKillsTheWholeProcessGroup) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = run("bash", {{"command", "echo started; sleep 30 & sleep 30"}, {"timeout", 0.5}});
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), "started\n\ntimed out after 0.5 s");
  EXPECT_LT(took, std::chrono::seconds(10));
}

TEST_F(BashContract, DefaultTimeoutComesFromTheContext) {
  ctx_.limits.default_timeout_s = 0.3;
  const auto r = run("bash", {{"command", "sleep 30"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), "(no output)\n\ntimed out after 0.3 s");
}

TEST_F(BashContract, CancelKillsTheCommand) {
  std::atomic<bool> cancel{false};
  ctx_.cancel = &cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  const auto r = run("bash", {{"command", "echo waiting; sleep 30"}});
  canceller.join();
  EXPECT_TRUE(r.is_error);
  EXPECT_EQ(text(r), "waiting\n\ncancelled");
}

TEST_F(BashContract, LongOutputKeepsTheTailAndSpillsTheFullOutput) {
  const auto r = run("bash", {{"command", "seq 1 5000"}});
  EXPECT_FALSE(r.is_error);
  const std::string t = text(r);
  ASSERT_TRUE(r.details.contains("fullOutputPath")) << r.details.dump();
  const std::string spill = r.details["fullOutputPath"];
  EXPECT_EQ(spill.rfind("/tmp/moat-bash-", 0), 0u);
  EXPECT_NE(t.find("[Showing lines 3001-5000 of 5000. Full output: " + spill + "]"),
            std::string::npos)
      << t.substr(t.size() - 200);
  EXPECT_EQ(t.rfind("3001\n", 0), 0u);
  // The spill file is in the sandbox's view: read it with the read tool.
  const auto full = run("read", {{"path", spill}, {"offset", 4999}});
  EXPECT_EQ(text(full), "4999\n5000\n");
  if (!harness_->is_sandboxed()) ::unlink(spill.c_str());
}

TEST_F(BashContract, ASingleOverlongLastLineKeepsItsTail) {
  const auto r = run("bash", {{"command", "head -c 60000 /dev/zero | tr '\\0' a; echo -n END"}});
  const std::string t = text(r);
  const std::string kept = std::string(kMaxBytes - 3, 'a') + "END";
  EXPECT_EQ(t.substr(0, kept.size()), kept);
  EXPECT_NE(t.find("[Showing the last " + format_size(kMaxBytes) + " of line 1 (over the " +
                   format_size(kMaxBytes) + " limit). Full output: "),
            std::string::npos)
      << t.substr(kept.size());
  if (!harness_->is_sandboxed() && r.details.contains("fullOutputPath"))
    ::unlink(r.details["fullOutputPath"].get<std::string>().c_str());
}

TEST_F(BashContract, OutputPastTheCeilingKillsTheCommandAndSaysWhy) {
  ctx_.limits.output_ceiling = 1 << 20;
  const auto r = run("bash", {{"command", "yes"}, {"timeout", 60}});
  EXPECT_TRUE(r.is_error);
  ASSERT_TRUE(r.details.contains("fullOutputPath"));
  const std::string spill = r.details["fullOutputPath"];
  EXPECT_NE(
      text(r).find("killed: the output passed the 1 MB output ceiling; everything up to it is in " +
                   spill),
      std::string::npos)
      << text(r).substr(text(r).size() - 300);
  if (!harness_->is_sandboxed()) {
    struct stat st {};
    ASSERT_EQ(::stat(spill.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 1 << 20);
    ::unlink(spill.c_str());
  }
}

TEST_F(BashContract, ProgressIsStreamedWhileTheCommandRuns) {
  std::vector<std::string> chunks;
  std::mutex mu;
  ctx_.progress = [&](std::string_view c) {
    std::lock_guard lock(mu);
    chunks.emplace_back(c);
  };
  const auto r = run("bash", {{"command", "echo one; sleep 0.3; echo two"}});
  EXPECT_FALSE(r.is_error);
  std::string all;
  for (const auto& c : chunks) all += c;
  EXPECT_EQ(all, "one\ntwo\n");
  EXPECT_GE(chunks.size(), 2u);
}

TEST_F(BashContract, ProgressFramesAreValidUtf8EvenWhenOutputSplitsACharacter) {
  std::vector<std::string> chunks;
  std::mutex mu;
  ctx_.progress = [&](std::string_view c) {
    std::lock_guard lock(mu);
    chunks.emplace_back(c);
  };
  // "é" is C3 A9: the first byte, a pause longer than the throttle, then the second.
  const auto r = run("bash", {{"command", "printf 'a\\303'; sleep 0.3; printf '\\251b\\n'"}});
  EXPECT_FALSE(r.is_error) << text(r);
  std::string all;
  for (const auto& c : chunks) {
    EXPECT_EQ(sanitize_utf8(c), c);
    all += c;
  }
  EXPECT_EQ(all,
            "a\xC3\xA9"
            "b\n");
  EXPECT_EQ(text(r),
            "a\xC3\xA9"
            "b\n");
}

TEST_F(BashContract, MissingCommandIsASchemaError) {
  const auto r = run("bash", {{"cmd", "ls"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(text(r).find("- command: required field is missing"), std::string::npos);
  EXPECT_NE(text(r).find("- cmd: unknown field (allowed: command, timeout)"), std::string::npos)
      << text(r);
}

}  // namespace
}  // namespace moat::tools::testing

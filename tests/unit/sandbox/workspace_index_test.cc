// tests/unit/sandbox/workspace_index_test.cc: the workspace index reports each created, modified,
// deleted and renamed file (symlinks as their target) with its hashes before and after, nothing
// for an unchanged tree, and caps its list.
#include "sandbox/workspace_index.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/sys.h"
#include "sessions/digest.h"

namespace moat::sandbox {
namespace {

namespace fs = std::filesystem;

class WorkspaceIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "moat-index-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    fd_ = UniqueFd(::open(dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(fd_.valid());
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& rel, const std::string& text) {
    fs::create_directories(fs::path(dir_ + "/" + rel).parent_path());
    std::ofstream(dir_ + "/" + rel, std::ios::binary | std::ios::trunc) << text;
  }
  std::unique_ptr<WorkspaceIndex> build(IndexLimits limits = {}) {
    auto index = WorkspaceIndex::build(fd_.get(), std::move(limits));
    EXPECT_TRUE(index) << index.error().message();
    return index ? std::move(*index) : nullptr;
  }
  static FileChanges diff(WorkspaceIndex& index) {
    auto d = index.diff();
    EXPECT_TRUE(d) << d.error().message();
    return d ? *d : FileChanges{};
  }
  template <typename F>
  static IndexLimits limits_with(F set) {
    IndexLimits l;
    set(l);
    return l;
  }
  static std::string sha(const std::string& text) { return sessions::sha256_hex(text); }

  std::string dir_;
  UniqueFd fd_;
};

TEST_F(WorkspaceIndexTest, AnUnchangedTreeReportsNothing) {
  write("a.txt", "a");
  write("sub/b.txt", "b");
  auto index = build();
  ASSERT_TRUE(index);
  EXPECT_EQ(index->size(), 2u);
  EXPECT_TRUE(diff(*index).changes.empty());
}

TEST_F(WorkspaceIndexTest, ACreatedFileIsListedWithItsHashAndSize) {
  auto index = build();
  write("sub/new.txt", "hello");
  FileChanges d = diff(*index);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].op, FileOp::kCreate);
  EXPECT_EQ(d.changes[0].path, "sub/new.txt");
  EXPECT_FALSE(d.changes[0].before);
  ASSERT_TRUE(d.changes[0].after);
  EXPECT_EQ(d.changes[0].after->sha256, sha("hello"));
  EXPECT_EQ(d.changes[0].after->size, 5u);
  EXPECT_TRUE(diff(*index).changes.empty()) << "a change is reported once";
}

TEST_F(WorkspaceIndexTest, AModifiedFileCarriesTheHashesBeforeAndAfter) {
  write("f", "before");
  auto index = build();
  write("f", "after!");  // same size: the stat's times must tell
  FileChanges d = diff(*index);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].op, FileOp::kModify);
  EXPECT_EQ(d.changes[0].before->sha256, sha("before"));
  EXPECT_EQ(d.changes[0].after->sha256, sha("after!"));
}

TEST_F(WorkspaceIndexTest, ASameSizeWriteThatRestoresTheMtimeIsCaughtByTheCtime) {
  write("f", "aaaa");
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/f").c_str(), &st), 0);
  ::usleep(150'000);  // past the racy window: the index trusts this entry's stat
  auto index = build();
  write("f", "bbbb");
  const timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir_ + "/f").c_str(), times, 0), 0);
  FileChanges d = diff(*index);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].after->sha256, sha("bbbb"));
}

TEST_F(WorkspaceIndexTest, ATouchThatChangesNoByteIsNoChange) {
  write("f", "same");
  auto index = build();
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir_ + "/f").c_str(), nullptr, 0), 0);
  EXPECT_TRUE(diff(*index).changes.empty());
}

TEST_F(WorkspaceIndexTest, AChmodAloneIsAModifyWithEqualHashes) {
  write("run.sh", "echo hi\n");
  auto index = build();
  ASSERT_EQ(::chmod((dir_ + "/run.sh").c_str(), 0755), 0);
  FileChanges d = diff(*index);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].op, FileOp::kModify);
  EXPECT_EQ(d.changes[0].before->sha256, d.changes[0].after->sha256);
  EXPECT_EQ(d.changes[0].after->mode & 0777, 0755u);
}

TEST_F(WorkspaceIndexTest, ADeletedFileCarriesItsLastHash) {
  write("gone", "bye");
  auto index = build();
  fs::remove(dir_ + "/gone");
  FileChanges d = diff(*index);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].op, FileOp::kDelete);
  EXPECT_EQ(d.changes[0].before->sha256, sha("bye"));
  EXPECT_FALSE(d.changes[0].after);
}

TEST_F(WorkspaceIndexTest, AMoveIntoASubdirectoryIsOneRename) {
  write("f4", "four");
  write("d/keep", "k");
  auto index = build();
  fs::rename(dir_ + "/f4", dir_ + "/d/f5");
  FileChanges d = diff(*index);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].op, FileOp::kRename);
  EXPECT_EQ(d.changes[0].from, "f4");
  EXPECT_EQ(d.changes[0].path, "d/f5");
  EXPECT_EQ(d.changes[0].before->sha256, sha("four"));
  EXPECT_EQ(d.changes[0].after->sha256, sha("four"));
}

TEST_F(WorkspaceIndexTest, ACopyAndDeleteWithTheSameContentIsARename) {
  write("old", "content");
  auto index = build();
  fs::copy_file(dir_ + "/old", dir_ + "/new");
  fs::remove(dir_ + "/old");
  FileChanges d = diff(*index);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].op, FileOp::kRename);
  EXPECT_EQ(d.changes[0].from, "old");
}

TEST_F(WorkspaceIndexTest, ADeleteAndACreateWithOtherContentStayTwoChanges) {
  write("f3", "three");
  auto index = build();
  fs::remove(dir_ + "/f3");
  write("f6", "x\n");  // may reuse f3's inode number: content decides
  FileChanges d = diff(*index);
  ASSERT_EQ(d.changes.size(), 2u);
  EXPECT_EQ(d.changes[0].op, FileOp::kDelete);
  EXPECT_EQ(d.changes[0].path, "f3");
  EXPECT_EQ(d.changes[1].op, FileOp::kCreate);
  EXPECT_EQ(d.changes[1].path, "f6");
  EXPECT_EQ(d.changes[1].after->sha256, sha("x\n"));
}

TEST_F(WorkspaceIndexTest, ASymlinkIsHashedAsItsTargetAndNeverFollowed) {
  write("secret-outside-is-not-read", "s");
  auto index = build();
  fs::create_symlink("/etc/passwd", dir_ + "/link");
  fs::create_directory_symlink("/etc", dir_ + "/dirlink");
  FileChanges d = diff(*index);
  ASSERT_EQ(d.changes.size(), 2u) << "no file of /etc is listed";
  EXPECT_EQ(d.changes[0].path, "dirlink");
  EXPECT_EQ(d.changes[0].after->sha256, sha("/etc"));
  EXPECT_EQ(d.changes[1].path, "link");
  EXPECT_EQ(d.changes[1].after->sha256, sha("/etc/passwd"));
  EXPECT_TRUE(S_ISLNK(d.changes[1].after->mode));
  fs::remove(dir_ + "/link");
  fs::create_symlink("/etc/hosts", dir_ + "/link");
  d = diff(*index);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].op, FileOp::kModify);
  EXPECT_EQ(d.changes[0].before->sha256, sha("/etc/passwd"));
  EXPECT_EQ(d.changes[0].after->sha256, sha("/etc/hosts"));
}

TEST_F(WorkspaceIndexTest, GitDirectoriesAndSkippedPathsAreLeftOut) {
  auto index = build(limits_with([](IndexLimits& l) { l.skip = {"audit"}; }));
  write(".git/objects/ab/cdef", "blob");
  write("sub/.git/index", "i");
  write("audit/log.jsonl", "{}");
  write("kept", "k");
  FileChanges d = diff(*index);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].path, "kept");
}

TEST_F(WorkspaceIndexTest, AFileOverTheHashCapIsTrackedByItsStat) {
  write("big", std::string(100, 'a'));
  auto index = build(limits_with([](IndexLimits& l) { l.max_hash_bytes = 10; }));
  write("big", std::string(200, 'b'));
  FileChanges d = diff(*index);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].op, FileOp::kModify);
  EXPECT_EQ(d.changes[0].before->sha256, "");
  EXPECT_STREQ(d.changes[0].after->unhashed, "larger than the hash cap");
  EXPECT_EQ(d.changes[0].after->size, 200u);
}

TEST_F(WorkspaceIndexTest, TheListIsCappedAndSaysSo) {
  auto index = build(limits_with([](IndexLimits& l) { l.max_changes = 3; }));
  for (int i = 0; i < 5; ++i) write("f" + std::to_string(i), std::to_string(i));
  FileChanges d = diff(*index);
  EXPECT_EQ(d.changes.size(), 3u);
  EXPECT_TRUE(d.truncated);
  EXPECT_EQ(d.changes[0].path, "f0");
  EXPECT_FALSE(diff(*index).truncated) << "the index holds all five after the capped diff";
}

TEST_F(WorkspaceIndexTest, MoreEntriesThanTheLimitFailWithE2big) {
  for (int i = 0; i < 4; ++i) write("f" + std::to_string(i), "x");
  auto index =
      WorkspaceIndex::build(fd_.get(), limits_with([](IndexLimits& l) { l.max_entries = 3; }));
  ASSERT_FALSE(index);
  EXPECT_EQ(index.error().code, E2BIG);
}

TEST_F(WorkspaceIndexTest, ADiffPastTheEntryLimitFailsAndTheIndexStaysFailed) {
  write("f0", "x");
  auto index = build(limits_with([](IndexLimits& l) { l.max_entries = 2; }));
  write("f1", "x");
  write("f2", "x");
  auto d = index->diff();
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, E2BIG);
  fs::remove(dir_ + "/f2");
  d = index->diff();
  ASSERT_FALSE(d) << "a half-updated index would report wrong changes";
  EXPECT_EQ(d.error().code, E2BIG);
}

// The bytes this process read so far (read(2) and the like; getdents is not counted).
std::uint64_t bytes_read() {
  auto io = sys::read_file("/proc/self/io");
  EXPECT_TRUE(io) << io.error().message();
  const std::size_t at = io ? io->find("rchar: ") : std::string::npos;
  return at == std::string::npos ? 0 : std::stoull(io->substr(at + 7));
}

// A resident moatd's next session in a workspace hashes only what changed since the last one
// ended (issue 30): 2 MiB of unchanged files are not read again, and what the kept hashes say
// is what a fresh read says.
TEST_F(WorkspaceIndexTest, AnEndedIndexsHashesServeTheNextBuildOfTheSameWorkspace) {
  const std::string block(64 << 10, 'x');
  for (int i = 0; i < 32; ++i) write("d" + std::to_string(i % 4) + "/f" + std::to_string(i), block);
  ::usleep(150'000);  // past the racy window: the index trusts these entries' stat
  std::uint64_t before = bytes_read();
  auto first = build();
  ASSERT_TRUE(first);
  EXPECT_GE(bytes_read() - before, 32u * block.size()) << "the first build reads every file";
  first.reset();  // the session ended
  before = bytes_read();
  auto second = build();
  ASSERT_TRUE(second);
  EXPECT_LT(bytes_read() - before, 64u << 10) << "the second build read the files again";
  EXPECT_EQ(second->size(), 32u);
  fs::remove(dir_ + "/d1/f5");
  FileChanges d = diff(*second);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].op, FileOp::kDelete);
  EXPECT_EQ(d.changes[0].before->sha256, sha(block));
}

// A kept hash is trusted only where the stat is the same: a rewrite between two sessions (same
// size, the mtime set back) is read again, as a diff reads it between two calls.
TEST_F(WorkspaceIndexTest, AFileRewrittenBetweenTwoIndexesIsHashedAgain) {
  write("f", "aaaa");
  write("g", "gone");
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/f").c_str(), &st), 0);
  ::usleep(150'000);
  build().reset();
  write("f", "bbbb");
  const timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir_ + "/f").c_str(), times, 0), 0);
  fs::remove(dir_ + "/g");  // gone between the sessions: not the next session's delete
  auto index = build();
  ASSERT_TRUE(index);
  EXPECT_EQ(index->size(), 1u);
  fs::remove(dir_ + "/f");
  FileChanges d = diff(*index);
  ASSERT_EQ(d.changes.size(), 1u);
  EXPECT_EQ(d.changes[0].path, "f");
  EXPECT_EQ(d.changes[0].before->sha256, sha("bbbb"));
}

TEST_F(WorkspaceIndexTest, FifosAreNotOpened) {
  auto index = build();
  ASSERT_EQ(::mkfifo((dir_ + "/pipe").c_str(), 0600), 0);
  EXPECT_TRUE(diff(*index).changes.empty()) << "and the diff did not block on it";
}

}  // namespace
}  // namespace moat::sandbox

// tests/unit/sandbox/git_identity_test.cc: the person's git identity as moatd reads it (issue 30
// point 4): kept while git's global files are unchanged, read again after any edit to them (one
// that keeps the size within the same second too) and every time while one includes another,
// the same on concurrent hellos.
// Real git, through a wrapper that counts its runs.
#include "sandbox/git_identity.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <thread>
#include <vector>

namespace moat::sandbox {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

constexpr auto kSettle = 20ms;  // the tests' settle: tmpfs and ext4 stamp in ns

class GitIdentityReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/git", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/git on this host";
    std::string tmpl = (fs::temp_directory_path() / "moat-gitid-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    home_ = dir_ + "/home";
    fs::create_directories(home_ + "/.config/git");
    write_git_wrapper("");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // A git that notes each run in runs_ (after `before`, a shell line) and execs the real one.
  void write_git_wrapper(const std::string& before) {
    git_ = dir_ + "/git";
    std::ofstream(git_) << "#!/bin/sh\n" << before << "\necho run >> " << dir_
                        << "/runs\nexec /usr/bin/git \"$@\"\n";
    fs::permissions(git_, fs::perms::owner_all);
  }
  int runs() const {
    std::ifstream in(dir_ + "/runs");
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
  void write(const std::string& rel, const std::string& text) {
    std::ofstream(home_ + "/" + rel, std::ios::trunc) << text;
  }
  static std::string user(const std::string& name) {
    return "[user]\n\tname = " + name + "\n\temail = " + name + "@example.org\n";
  }

  std::string dir_, home_, git_;
};

TEST_F(GitIdentityReaderTest, AnUnchangedConfigIsReadOnceAndKept) {
  write(".gitconfig", user("Ada"));
  std::this_thread::sleep_for(2 * kSettle);
  GitIdentityReader reader(git_, kSettle);
  for (int i = 0; i < 3; ++i) {
    const GitIdentity id = reader.read(home_);
    EXPECT_EQ(id.name, "Ada");
    EXPECT_EQ(id.email, "Ada@example.org");
  }
  EXPECT_EQ(runs(), 1);
  // What a hello pays, with git itself: a run, then a kept answer (two stats).
  GitIdentityReader direct("/usr/bin/git", kSettle);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(direct.read(home_).name, "Ada");
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(direct.read(home_).name, "Ada");
  const auto t2 = std::chrono::steady_clock::now();
  std::printf("[ git identity ] git run %.0f us; kept answer %.0f us\n",
              std::chrono::duration<double, std::micro>(t1 - t0).count(),
              std::chrono::duration<double, std::micro>(t2 - t1).count());
}

// The same size and file, within the same second as the stamp that was kept: only the ns of
// ctime and mtime tell it apart (tmpfs and ext4 keep them; a filesystem stamping in whole
// seconds is what the 3 s settle is for). Tried again when the edit fell in the next second.
TEST_F(GitIdentityReaderTest, AnEditKeepingItsSizeWithinTheSecondIsSeen) {
  GitIdentityReader reader(git_, kSettle);
  bool same_second = false;
  for (int attempt = 0; attempt < 3 && !same_second; ++attempt) {
    write(".gitconfig", user("Ada"));
    std::this_thread::sleep_for(2 * kSettle);
    EXPECT_EQ(reader.read(home_).name, "Ada");
    EXPECT_EQ(reader.read(home_).name, "Ada");
    struct stat before {};
    ASSERT_EQ(::stat((home_ + "/.gitconfig").c_str(), &before), 0);
    write(".gitconfig", user("Bob"));
    struct stat after {};
    ASSERT_EQ(::stat((home_ + "/.gitconfig").c_str(), &after), 0);
    ASSERT_EQ(before.st_size, after.st_size);
    ASSERT_EQ(before.st_ino, after.st_ino);
    same_second = before.st_mtim.tv_sec == after.st_mtim.tv_sec;
    EXPECT_EQ(reader.read(home_).name, "Bob");
  }
  EXPECT_TRUE(same_second);
}

// And the other file git reads: created, then ~/.gitconfig removed.
TEST_F(GitIdentityReaderTest, TheXdgConfigIsStampedToo) {
  write(".gitconfig", user("Bob"));
  std::this_thread::sleep_for(2 * kSettle);
  GitIdentityReader reader(git_, kSettle);
  EXPECT_EQ(reader.read(home_).name, "Bob");
  EXPECT_EQ(reader.read(home_).name, "Bob");
  write(".config/git/config", "[user]\n\tname = Cy\n");
  EXPECT_EQ(reader.read(home_).name, "Bob");  // ~/.gitconfig is read after it, and wins
  fs::remove(home_ + "/.gitconfig");
  EXPECT_EQ(reader.read(home_).name, "Cy");
  EXPECT_EQ(runs(), 3);
}

// A file that comes and goes while git runs (here: the wrapper makes ~/.gitconfig for its
// first run only) is absent before and after: its directory's stamp tells.
TEST_F(GitIdentityReaderTest, AFileThatCameAndWentDuringTheReadIsNotKept) {
  write(".config/git/config", user("Ada"));
  const std::string transient = home_ + "/.gitconfig";
  write_git_wrapper("if [ ! -e " + dir_ + "/runs ]; then printf '[user]\\n\\tname = Zed\\n' > " +
                    transient + "; /usr/bin/git \"$@\" > " + dir_ + "/out; rc=$?; rm " +
                    transient + "; echo run >> " + dir_ + "/runs; cat " + dir_ +
                    "/out; exit $rc; fi");
  std::this_thread::sleep_for(2 * kSettle);
  GitIdentityReader reader(git_, kSettle);
  EXPECT_EQ(reader.read(home_).name, "Zed");  // git read it
  EXPECT_FALSE(fs::exists(transient));
  EXPECT_EQ(reader.read(home_).name, "Ada");
  EXPECT_EQ(runs(), 2);
}

// A file written just before the read may be written again within its timestamp tick, keeping
// its stamp: it is not kept until it settled (100 ms by default on a filesystem stamping in ns).
TEST_F(GitIdentityReaderTest, AJustWrittenConfigIsNotKept) {
  write(".gitconfig", user("Ada"));
  GitIdentityReader reader(git_);
  EXPECT_EQ(reader.read(home_).name, "Ada");
  EXPECT_EQ(reader.read(home_).name, "Ada");
  EXPECT_EQ(runs(), 2);
}

// An included file has no stamp, so a config that includes one is never kept. (`git config
// --global` reads no included file, as git-config(1) documents for a named file: the identity
// is ~/.gitconfig's own; were --includes given, a kept answer could miss an edit to one.)
TEST_F(GitIdentityReaderTest, AConfigThatIncludesIsReadEveryTime) {
  write(".gitconfig", user("Ada") + "[InClude]\n\tpath = ~/other\n");
  write("other", "[user]\n\tname = Bob\n");
  std::this_thread::sleep_for(2 * kSettle);
  GitIdentityReader reader(git_, kSettle);
  EXPECT_EQ(reader.read(home_).name, "Ada");
  EXPECT_EQ(reader.read(home_).name, "Ada");
  EXPECT_EQ(runs(), 2);
  write(".gitconfig", user("Ada") + "[includeIf \"gitdir:/\"]\n\tpath = ~/other\n");
  std::this_thread::sleep_for(2 * kSettle);
  EXPECT_EQ(reader.read(home_).name, "Ada");
  EXPECT_EQ(reader.read(home_).name, "Ada");
  EXPECT_EQ(runs(), 4);
}

TEST_F(GitIdentityReaderTest, ConcurrentReadsAgree) {
  write(".gitconfig", user("Ada"));
  std::this_thread::sleep_for(2 * kSettle);
  GitIdentityReader reader(git_, kSettle);
  std::vector<std::future<GitIdentity>> reads;
  for (int i = 0; i < 8; ++i)
    reads.push_back(std::async(std::launch::async, [&] { return reader.read(home_); }));
  for (auto& r : reads) EXPECT_EQ(r.get(), (GitIdentity{"Ada", "Ada@example.org"}));
  EXPECT_EQ(reader.read(home_), (GitIdentity{"Ada", "Ada@example.org"}));
  EXPECT_LE(runs(), 8);
}

// Neither of git's global files exists: git could give nothing, so it is not run.
TEST_F(GitIdentityReaderTest, NoConfigFileMeansNoGitRun) {
  GitIdentityReader reader(git_, kSettle);
  EXPECT_EQ(reader.read(home_), GitIdentity{});
  EXPECT_EQ(reader.read(home_), GitIdentity{});
  EXPECT_EQ(runs(), 0);
  write(".config/git/config", user("Cy"));
  EXPECT_EQ(reader.read(home_).name, "Cy");
  EXPECT_EQ(runs(), 1);
}

// A private moatd serves one hello: the answer kept by one process serves the next (another
// reader) from the kept file, 0600, until a file's stamp changes.
TEST_F(GitIdentityReaderTest, AKeptFileServesTheNextProcessUntilAnEdit) {
  const std::string kept = dir_ + "/state/git-identity";
  write(".gitconfig", user("Ada"));
  std::this_thread::sleep_for(2 * kSettle);
  EXPECT_EQ(GitIdentityReader(git_, kSettle, kept).read(home_),
            (GitIdentity{"Ada", "Ada@example.org"}));
  EXPECT_EQ(runs(), 1);
  struct stat st {};
  ASSERT_EQ(::stat(kept.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(GitIdentityReader(git_, kSettle, kept).read(home_),
            (GitIdentity{"Ada", "Ada@example.org"}));
  EXPECT_EQ(runs(), 1);
  write(".gitconfig", user("Bob"));
  std::this_thread::sleep_for(2 * kSettle);
  EXPECT_EQ(GitIdentityReader(git_, kSettle, kept).read(home_).name, "Bob");
  EXPECT_EQ(GitIdentityReader(git_, kSettle, kept).read(home_).name, "Bob");
  EXPECT_EQ(runs(), 2);
  // Kept for another home: not this one's.
  const std::string other = dir_ + "/other";
  fs::create_directories(other);
  std::ofstream(other + "/.gitconfig") << user("Cy");
  std::this_thread::sleep_for(2 * kSettle);
  EXPECT_EQ(GitIdentityReader(git_, kSettle, kept).read(other).name, "Cy");
  EXPECT_EQ(GitIdentityReader(git_, kSettle, kept).read(home_).name, "Bob");
  EXPECT_EQ(runs(), 4);
}

// The kept file is trusted for a name and an email, only when it is this uid's own regular file
// that no other user may write, and whole: otherwise git is run (and the file written again).
TEST_F(GitIdentityReaderTest, AForeignOrCorruptKeptFileIsPassedOver) {
  const std::string kept = dir_ + "/state/git-identity";
  write(".gitconfig", user("Ada"));
  std::this_thread::sleep_for(2 * kSettle);
  EXPECT_EQ(GitIdentityReader(git_, kSettle, kept).read(home_).name, "Ada");
  ASSERT_EQ(runs(), 1);
  std::ifstream in(kept);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string key = text.substr(0, text.size() - std::string("Ada\nAda@example.org\n").size());
  auto put = [&](const std::string& body, mode_t mode) {
    fs::remove(kept);
    std::ofstream(kept) << body;
    ASSERT_EQ(::chmod(kept.c_str(), mode), 0);
  };
  int expected_runs = 1;
  auto read_with_git = [&](const char* why) {
    EXPECT_EQ(GitIdentityReader(git_, kSettle, kept).read(home_).name, "Ada") << why;
    EXPECT_EQ(runs(), ++expected_runs) << why;
  };
  put(key + "Eve\neve@example.org\n", 0600);  // what the file says, it gives: a name and an email
  EXPECT_EQ(GitIdentityReader(git_, kSettle, kept).read(home_).name, "Eve");
  EXPECT_EQ(runs(), expected_runs);
  put(key + "Eve\neve@example.org\n", 0620);
  read_with_git("writable by its group");
  put(key + "Eve\neve@example.org\n", 0602);
  read_with_git("writable by others");
  put(key + "Eve\n", 0600);
  read_with_git("no email line");
  put(key + "Eve\neve@example.org\nmore\n", 0600);
  read_with_git("a third line");
  put(key + "Eve\x1b[1m\neve@example.org\n", 0600);
  read_with_git("a control character");
  put("moat-git-identity/0" + key.substr(key.find('\n')) + "Eve\neve@example.org\n", 0600);
  read_with_git("another format");
  put(key.substr(0, key.rfind('\n', key.size() - 2) + 1) + "1 1 1 1 1 1\nEve\neve@example.org\n",
      0600);
  read_with_git("another stamp");
  const std::string target = dir_ + "/target";
  std::ofstream(target) << key << "Eve\neve@example.org\n";
  ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
  fs::remove(kept);
  fs::create_symlink(target, kept);
  read_with_git("a symlink");
  EXPECT_FALSE(fs::is_symlink(kept));  // replaced by the answer git gave
  EXPECT_EQ(GitIdentityReader(git_, kSettle, kept).read(home_).name, "Ada");
  EXPECT_EQ(runs(), expected_runs);
}

// An answer longer than moatd takes (git blocked writing the rest into a full pipe) is left out
// at once, its git ended: not a read whose thread waits for that git forever (A2, attack on
// 5db90c0: such a thread held one of the kMaxGitReadsAhead slots, and a hello's own read hung).
TEST_F(GitIdentityReaderTest, AnAnswerLongerThanItTakesIsLeftOutAndGitEnded) {
  write(".gitconfig", user(std::string(200000, 'a')));
  const pid_t child = ::fork();
  if (child == 0) {
    GitIdentityReader reader(git_, kSettle);
    _exit(reader.read(home_).name.empty() ? 0 : 1);
  }
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 1000 && done == 0; ++i) {
    std::this_thread::sleep_for(10ms);
    done = ::waitpid(child, &status, WNOHANG);
  }
  if (done == 0) {
    ::kill(child, SIGKILL);  // its git then gets EPIPE and ends
    ::waitpid(child, &status, 0);
  }
  ASSERT_EQ(done, child) << "the read still waited for git after 10 s";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a name longer than it takes";
}

}  // namespace
}  // namespace moat::sandbox

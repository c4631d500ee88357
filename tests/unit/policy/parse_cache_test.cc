// tests/unit/policy/parse_cache_test.cc: a kept parse is used only while its file is the one
// parsed: an edit between two loads is seen, whatever it keeps (size, mtime), and a file changed
// too recently to be told from its next version is read again.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>

#include <chrono>
#include <string>
#include <thread>

#include "policy/parse_cache.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using testing::PolicyWorld;
using testing::write_file;

// Two rules of the same length: an edit from one to the other keeps the file's size.
constexpr const char* kDenyMake =
    "schema = 1\n[[command]]\nid = \"u.make\"\ndecision = \"deny\"\nprogram = \"make\"\n";
constexpr const char* kAskMake =
    "schema = 1\n[[command]]\nid = \"u.make\"\ndecision = \"ask\"\n program = \"make\"\n";

class ParseCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { write_file(file_, kDenyMake); }
  Verdict make_verdict() { return w_.load()->decide_command("make", w_.workspace).verdict; }
  // Until the file's last change is older than kSettledAfter: its parse may be kept from then.
  static void let_settle() {
    std::this_thread::sleep_for(kSettledAfter + std::chrono::milliseconds(20));
  }
  static std::uint64_t kept_used() { return parse_cache_counts().kept_used; }
  static std::uint64_t parsed() { return parse_cache_counts().parsed; }

  PolicyWorld w_;
  const std::string file_ = w_.options.user_dir + "/10-mine.toml";
};

TEST_F(ParseCacheTest, ASettledFileIsParsedOnceAndItsParseUsedAfter) {
  let_settle();
  ASSERT_EQ(make_verdict(), Verdict::kDeny);
  const std::uint64_t used = kept_used();
  const std::uint64_t parses = parsed();
  EXPECT_EQ(make_verdict(), Verdict::kDeny);
  EXPECT_EQ(make_verdict(), Verdict::kDeny);
  EXPECT_EQ(kept_used(), used + 2);
  EXPECT_EQ(parsed(), parses);
}

TEST_F(ParseCacheTest, AnEditBetweenTwoLoadsIsSeen) {
  let_settle();
  ASSERT_EQ(make_verdict(), Verdict::kDeny);
  ASSERT_EQ(make_verdict(), Verdict::kDeny);  // from the kept parse
  write_file(file_, kAskMake);                // the same size
  EXPECT_EQ(make_verdict(), Verdict::kAsk);
}

TEST_F(ParseCacheTest, AnEditThatRestoresTheMtimeIsSeen) {
  let_settle();
  ASSERT_EQ(make_verdict(), Verdict::kDeny);
  struct stat st {};
  ASSERT_EQ(::stat(file_.c_str(), &st), 0);
  write_file(file_, kAskMake);
  // touch -d: mtime and size as before; only the ctime (which no caller sets) moved.
  const timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, file_.c_str(), times, 0), 0);
  EXPECT_EQ(make_verdict(), Verdict::kAsk);
}

TEST_F(ParseCacheTest, AFileReplacedByRenameIsSeen) {
  let_settle();
  ASSERT_EQ(make_verdict(), Verdict::kDeny);
  write_file(file_ + ".new", kAskMake);
  ASSERT_EQ(::rename((file_ + ".new").c_str(), file_.c_str()), 0);
  EXPECT_EQ(make_verdict(), Verdict::kAsk);
}

TEST_F(ParseCacheTest, AFileChangedJustNowIsReadAgainAtEveryLoad) {
  const auto written = std::chrono::steady_clock::now();
  write_file(file_, kAskMake);  // its change is younger than kSettledAfter
  const std::uint64_t parses = parsed();
  EXPECT_EQ(make_verdict(), Verdict::kAsk);
  EXPECT_EQ(make_verdict(), Verdict::kAsk);
  if (std::chrono::steady_clock::now() - written >= kSettledAfter)
    GTEST_SKIP() << "the two loads took longer than kSettledAfter (a loaded machine)";
  EXPECT_EQ(parsed(), parses + 2);
}

}  // namespace
}  // namespace moat::policy

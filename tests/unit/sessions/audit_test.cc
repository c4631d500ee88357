// tests/unit/sessions/audit_test.cc: AuditLog appends and the verifier's view of tampering.
#include "sessions/audit.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "sessions/audit_verify.h"
#include "sessions/jcs.h"
#include "sessions/json_util.h"
#include "sessions/jsonl.h"
#include "temp_dir.h"

namespace moat::sessions {
namespace {

using testing::slurp;
using testing::spit;
using testing::TempDir;

constexpr const char* kSession = "01890a5d-ac96-774b-bcce-b302099a8057";
constexpr const char* kPolicy = "sha256:5e1c";

// A finished session: start, decisions and execs, end.
std::string write_log(const TempDir& dir, int n_middle) {
  auto log = AuditLog::open(dir.path(), kSession, kPolicy);
  EXPECT_TRUE(log.has_value()) << log.error().message();
  EXPECT_TRUE((*log)->append("session.start", {{"version", "0.1.0"}, {"uid", 1000}}).has_value());
  for (int i = 0; i < n_middle; ++i) {
    EXPECT_TRUE((*log)
                    ->append("decision", {{"tool", "bash"},
                                          {"result", i % 2 ? "allow" : "deny"},
                                          {"input", {{"argv", {"git", "status"}}}}})
                    .has_value());
  }
  EXPECT_TRUE((*log)->append("session.end", nlohmann::json::object()).has_value());
  return (*log)->path();
}

std::vector<std::string> split_lines(const std::string& data) {
  std::vector<std::string> out;
  for (const Line& l : whole_lines(data)) out.emplace_back(l.text);
  return out;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// moatd's logs: create() never looks for a log of the session to continue (a stat of each
// <date> folder's at every hello). A log of that name in another day's folder is left as it
// is and a new chain starts in today's; one in today's folder fails the open, never joined.
TEST(AuditLog, CreateStartsANewChainInTodaysFolderWithoutContinuingAnother) {
  TempDir dir;
  const std::string old_day = dir.path() + "/2020-01-01";
  ASSERT_TRUE(make_dirs(old_day, 0700));
  const std::string old_path = old_day + "/" + kSession + ".jsonl";
  spit(old_path, "");
  {
    auto continued = AuditLog::open(dir.path(), kSession, kPolicy);
    ASSERT_TRUE(continued) << continued.error().message();
    EXPECT_EQ((*continued)->path(), old_path);  // what open() does: the chain goes on there
  }
  auto created = AuditLog::create(dir.path(), kSession, kPolicy);
  ASSERT_TRUE(created) << created.error().message();
  EXPECT_NE((*created)->path(), old_path);
  EXPECT_EQ(dirname_of(dirname_of((*created)->path())), dir.path());
  ASSERT_TRUE((*created)->append("session.start", {{"version", "0.1.0"}}));
  EXPECT_EQ((*created)->last_seq(), 1u);
  EXPECT_EQ(slurp(old_path), "");
  auto again = AuditLog::create(dir.path(), kSession, kPolicy);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, EEXIST);
}

// An exec record may wait for the next synced record: it is written at once (a reader sees
// it, in chain order) and the chain stays whole; the log syncs it at the latest on close.
TEST(AuditLog, RecordsSyncedWithTheNextOneKeepTheirPlaceInTheChain) {
  TempDir dir;
  std::string path;
  {
    auto log = AuditLog::open(dir.path(), kSession, kPolicy);
    ASSERT_TRUE(log) << log.error().message();
    path = (*log)->path();
    ASSERT_TRUE((*log)->append("session.start", {{"version", "0.1.0"}}));
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE((*log)->append("decision", {{"tool", "bash"}, {"result", "allow"}}));
      ASSERT_TRUE((*log)->append("exec", {{"argv", {"true"}}, {"exit_code", 0}},
                                 AuditLog::Sync::kWithNext));
      EXPECT_EQ(split_lines(slurp(path)).size(), 3u + 2u * static_cast<size_t>(i))
          << "the deferred record is in the file before the next append";
    }
    ASSERT_TRUE((*log)->append("exec", {{"argv", {"true"}}}, AuditLog::Sync::kWithNext));
    EXPECT_EQ((*log)->last_seq(), 8u);
  }  // closed with a deferred record last: synced on close
  const AuditVerdict v = verify_audit(slurp(path), /*require_end=*/false);
  EXPECT_TRUE(v.ok()) << v.detail;
  EXPECT_EQ(v.records, 8u);
}

TEST(AuditLog, RecordsCarryTheSchemaFieldsAndChain) {
  TempDir dir;
  const std::string path = write_log(dir, 2);
  const auto lines = split_lines(slurp(path));
  ASSERT_EQ(lines.size(), 4u);
  std::string prev = audit_genesis(kSession, kPolicy);
  for (size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json r = parse_json(lines[i]);
    EXPECT_EQ(int_field(r, "v"), 1);
    EXPECT_EQ(int_field(r, "seq"), static_cast<int64_t>(i + 1));
    EXPECT_EQ(str_field(r, "session"), kSession);
    EXPECT_EQ(str_field(r, "id").size(), 36u);
    EXPECT_EQ(str_field(r, "id")[14], '7');  // UUID version 7
    const std::string ts = str_field(r, "ts");
    ASSERT_EQ(ts.size(), 30u) << ts;  // 2026-03-04T10:15:02.118233140Z
    EXPECT_EQ(ts.back(), 'Z');
    EXPECT_EQ(str_field(r, "prev"), prev);
    EXPECT_EQ(str_field(r, "hash"), *audit_record_hash(r));
    EXPECT_EQ(*canonical_json(r), lines[i]);  // each line is canonical JSON
    prev = str_field(r, "hash");
  }
  EXPECT_EQ(str_field(parse_json(lines[0]), "policy_hash"), kPolicy);
}

TEST(AuditLog, FileIs0600AndDirectories0700) {
  TempDir dir;
  const std::string root = dir.path() + "/audit";
  auto log = AuditLog::open(root, kSession, kPolicy);
  ASSERT_TRUE(log.has_value());
  struct stat st {};
  ASSERT_EQ(::stat((*log)->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(root.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(dirname_of((*log)->path()).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(AuditLog, ReservedFieldNamesAreRefusedWithEinval) {
  TempDir dir;
  auto log = AuditLog::open(dir.path(), kSession, kPolicy);
  ASSERT_TRUE(log.has_value());
  for (const char* key : {"v", "seq", "ts", "type", "session", "id", "prev", "hash"}) {
    auto r = (*log)->append("decision", {{key, 1}});
    ASSERT_FALSE(r.has_value()) << key;
    EXPECT_EQ(r.error().code, EINVAL);
  }
  EXPECT_EQ((*log)->last_seq(), 0u);
}

TEST(AuditLog, SessionIdThatCouldLeaveTheDirectoryIsRefused) {
  TempDir dir;
  EXPECT_EQ(AuditLog::open(dir.path(), "../x", kPolicy).error().code, EINVAL);
  EXPECT_EQ(AuditLog::open(dir.path(), "", kPolicy).error().code, EINVAL);
}

TEST(AuditLog, SharedDirectoryIsRefusedWithEperm) {
  TempDir dir;
  ASSERT_EQ(::chmod(dir.path().c_str(), 0777), 0);
  auto log = AuditLog::open(dir.path(), kSession, kPolicy);
  ASSERT_FALSE(log.has_value());
  EXPECT_EQ(log.error().code, EPERM);
}

TEST(AuditLog, ReopeningContinuesTheChain) {
  TempDir dir;
  std::string path;
  {
    auto log = AuditLog::open(dir.path(), kSession, kPolicy);
    ASSERT_TRUE(log.has_value());
    ASSERT_TRUE((*log)->append("session.start", nlohmann::json::object()).has_value());
    path = (*log)->path();
  }
  spit(path, slurp(path) + "{\"v\":1,\"se");  // a record torn by a crash
  auto log = AuditLog::open(dir.path(), kSession, kPolicy);
  ASSERT_TRUE(log.has_value()) << log.error().message();
  EXPECT_EQ((*log)->path(), path);
  EXPECT_EQ((*log)->last_seq(), 1u);
  ASSERT_TRUE((*log)->append("session.end", nlohmann::json::object()).has_value());
  const AuditVerdict v = *verify_audit_file(path);
  EXPECT_TRUE(v.ok()) << v.detail;
  EXPECT_EQ(v.records, 2u);
}

TEST(AuditLog, ConcurrentAppendsKeepOneContiguousChain) {
  TempDir dir;
  auto log = AuditLog::open(dir.path(), kSession, kPolicy);
  ASSERT_TRUE(log.has_value());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) EXPECT_TRUE((*log)->append("decision", {{"n", i}}).has_value());
    });
  for (auto& t : threads) t.join();
  ASSERT_TRUE((*log)->append("session.end", nlohmann::json::object()).has_value());
  const AuditVerdict v = *verify_audit_file((*log)->path());
  EXPECT_TRUE(v.ok()) << v.detail;
  EXPECT_EQ(v.records, 41u);
}

// What the sync hook saw: each fdatasync with the file's size when it began, and whether it
// has returned. Slow on purpose (5 ms), so appends from other threads arrive during a sync.
struct SyncRecorder {
  std::mutex mu;
  std::vector<std::pair<off_t, bool>> syncs;  // {size at start, done}
  bool fail = false;

  // The largest size a finished sync began at: every byte below it is on disk.
  off_t durable() {
    std::lock_guard<std::mutex> lock(mu);
    off_t out = 0;
    for (const auto& [size, done] : syncs)
      if (done) out = std::max(out, size);
    return out;
  }
};
SyncRecorder* g_recorder = nullptr;

int recording_sync(int fd) {
  struct stat st {};
  ::fstat(fd, &st);
  if (S_ISDIR(st.st_mode)) return ::fsync(fd);  // a new log's directory: not the file's bytes
  std::size_t i = 0;
  {
    std::lock_guard<std::mutex> lock(g_recorder->mu);
    i = g_recorder->syncs.size();
    g_recorder->syncs.push_back({st.st_size, false});
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int rc = g_recorder->fail ? (errno = EIO, -1) : ::fdatasync(fd);
  std::lock_guard<std::mutex> lock(g_recorder->mu);
  g_recorder->syncs[i].second = true;
  return rc;
}

class AuditGroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_recorder = &recorder_;
    previous_ = set_audit_sync_for_tests(recording_sync);
  }
  void TearDown() override {
    set_audit_sync_for_tests(previous_);
    g_recorder = nullptr;
  }
  SyncRecorder recorder_;
  AuditSyncForTests previous_ = nullptr;
};

// Decisions that arrive together share a sync, and still none returns (lets its action run)
// before a sync that began after its record was in the file has finished.
TEST_F(AuditGroupCommitTest, ConcurrentDecisionsShareSyncsAndEachReturnsOnlyOnceOnDisk) {
  TempDir dir;
  auto log = AuditLog::open(dir.path(), kSession, kPolicy);
  ASSERT_TRUE(log.has_value());
  constexpr int kThreads = 8, kEach = 10;
  std::vector<off_t> durable_at_return(kThreads * kEach, -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const int n = t * kEach + i;
        EXPECT_TRUE((*log)->append("decision", {{"n", n}}).has_value());
        durable_at_return[static_cast<std::size_t>(n)] = recorder_.durable();
      }
    });
  for (auto& t : threads) t.join();
  const std::string data = slurp((*log)->path());
  for (const Line& line : whole_lines(data)) {
    const nlohmann::json rec = nlohmann::json::parse(line.text);
    const off_t end = static_cast<off_t>(line.offset + line.text.size() + 1);
    const int n = rec.at("n").get<int>();
    EXPECT_LE(end, durable_at_return[static_cast<std::size_t>(n)])
        << "decision " << n << " (bytes up to " << end << ") returned before it was synced";
  }
  EXPECT_LT(recorder_.syncs.size(), static_cast<std::size_t>(kThreads * kEach))
      << "every decision paid for a sync of its own";
  ASSERT_TRUE((*log)->append("session.end", nlohmann::json::object()).has_value());
  const AuditVerdict v = *verify_audit_file((*log)->path());
  EXPECT_TRUE(v.ok()) << v.detail;
}

// A sync that fails refuses the append that waited for it and every later one: an action
// whose decision may not be on disk does not run.
TEST_F(AuditGroupCommitTest, AFailedSyncRefusesItsAppendAndEveryLaterOne) {
  TempDir dir;
  auto log = AuditLog::open(dir.path(), kSession, kPolicy);
  ASSERT_TRUE(log.has_value());
  ASSERT_TRUE((*log)->append("decision", {{"n", 0}}).has_value());
  recorder_.fail = true;
  auto failed = (*log)->append("decision", {{"n", 1}});
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().code, EIO) << failed.error().message();
  recorder_.fail = false;
  EXPECT_FALSE((*log)->append("decision", {{"n", 2}}).has_value());
  EXPECT_FALSE((*log)->append("exec", {{"n", 3}}, AuditLog::Sync::kWithNext).has_value());
}

// The directory sync of a new log, slowed to kSlowDirSync: when it ended, and whether it fails.
struct DirSync {
  std::atomic<bool> done{false};
  std::atomic<bool> fail{false};
};
DirSync* g_dir_sync = nullptr;
constexpr auto kSlowDirSync = std::chrono::milliseconds(300);

int slow_dir_sync(int fd) {
  struct stat st {};
  ::fstat(fd, &st);
  if (!S_ISDIR(st.st_mode)) return ::fdatasync(fd);
  std::this_thread::sleep_for(kSlowDirSync);
  if (g_dir_sync->fail) return errno = EIO, -1;
  const int rc = ::fsync(fd);
  g_dir_sync->done = rc == 0;
  return rc;
}

class AuditNewLogDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_dir_sync = &dir_sync_;
    previous_ = set_audit_sync_for_tests(slow_dir_sync);
  }
  void TearDown() override {
    set_audit_sync_for_tests(previous_);
    g_dir_sync = nullptr;
  }
  DirSync dir_sync_;
  AuditSyncForTests previous_ = nullptr;
};

// A new log's directory entry is synced from the file's creation on, beside what the session
// builds meanwhile, not after its first decision's fdatasync, where it delayed the command; the
// first durable record still returns only once it is on disk (docs/sessions.md).
TEST_F(AuditNewLogDirTest, ItsSyncBeginsAtTheOpeningAndTheFirstDurableRecordWaitsForIt) {
  TempDir dir;
  using Clock = std::chrono::steady_clock;
  auto built = AuditLog::open(dir.path() + "/built", kSession, kPolicy);
  ASSERT_TRUE(built.has_value()) << built.error().message();
  const auto unsynced = AuditLog::Sync::kWithNext;
  ASSERT_TRUE((*built)->append("session.start", nlohmann::json::object(), unsynced).has_value());
  std::this_thread::sleep_for(kSlowDirSync + std::chrono::milliseconds(100));  // the build
  auto t0 = Clock::now();
  ASSERT_TRUE((*built)->append("decision", {{"n", 1}}).has_value());
  EXPECT_LT(Clock::now() - t0, kSlowDirSync * 2 / 3)
      << "the first decision waited for a directory sync that began only with it";
  dir_sync_.done = false;
  auto at_once = AuditLog::open(dir.path() + "/at-once", kSession, kPolicy);
  ASSERT_TRUE(at_once.has_value()) << at_once.error().message();
  t0 = Clock::now();
  ASSERT_TRUE((*at_once)->append("decision", {{"n", 1}}).has_value());
  EXPECT_TRUE(dir_sync_.done) << "the first durable record returned before its directory";
  EXPECT_GE(Clock::now() - t0, kSlowDirSync / 2);
}

// The directories a new log's syncs reached, by their paths (the tests' hook sees their fds).
std::mutex g_synced_dirs_mu;
std::vector<std::string> g_synced_dirs;

int recording_dir_sync(int fd) {
  struct stat st {};
  ::fstat(fd, &st);
  if (!S_ISDIR(st.st_mode)) return ::fdatasync(fd);
  char target[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target);
  std::lock_guard<std::mutex> lock(g_synced_dirs_mu);
  if (n > 0) g_synced_dirs.emplace_back(target, static_cast<std::size_t>(n));
  return ::fsync(fd);
}

// A log's day directory is made by the first session of a UTC day: its name in the audit
// directory must reach the disk too, or a crash can lose the directory with every log in it
// that was reported durable (found by the attack on bcc7e6d). The first durable record
// returns only once the log's directory and the one holding it are synced.
TEST(AuditNewLogDir, ItsFirstDurableRecordWaitsForTheDayDirectoryAndTheOneHoldingIt) {
  TempDir dir;
  g_synced_dirs.clear();
  const AuditSyncForTests previous = set_audit_sync_for_tests(recording_dir_sync);
  auto log = AuditLog::open(dir.path() + "/audit", kSession, kPolicy);
  ASSERT_TRUE(log.has_value()) << log.error().message();
  ASSERT_TRUE((*log)->append("decision", {{"n", 1}}).has_value());
  std::vector<std::string> synced;
  {
    std::lock_guard<std::mutex> lock(g_synced_dirs_mu);
    synced = g_synced_dirs;
  }
  log->reset();
  set_audit_sync_for_tests(previous);
  const std::string audit = std::filesystem::canonical(dir.path() + "/audit").string();
  std::string day_dir;
  for (const auto& e : std::filesystem::directory_iterator(audit))
    if (e.is_directory()) day_dir = e.path().string();
  ASSERT_FALSE(day_dir.empty());
  EXPECT_NE(std::find(synced.begin(), synced.end(), day_dir), synced.end())
      << "the log's own directory was not synced";
  EXPECT_NE(std::find(synced.begin(), synced.end(), audit), synced.end())
      << "the directory holding the new day directory was not synced";
  // The day's next log finds its directory made: only that directory is synced again (one
  // command's cold start syncs one directory, ColdStart.OneCommandSyncs...).
  g_synced_dirs.clear();
  set_audit_sync_for_tests(recording_dir_sync);
  auto next =
      AuditLog::open(dir.path() + "/audit", "01890a5d-ac96-774b-bcce-b302099a8058", kPolicy);
  ASSERT_TRUE(next.has_value()) << next.error().message();
  ASSERT_TRUE((*next)->append("decision", {{"n", 1}}).has_value());
  next->reset();
  set_audit_sync_for_tests(previous);
  std::lock_guard<std::mutex> lock(g_synced_dirs_mu);
  EXPECT_EQ(g_synced_dirs, std::vector<std::string>{day_dir});
}

// A directory sync that fails refuses the first durable record, naming the directory, and every
// later one: nothing runs on a log whose name may not survive a crash.
TEST_F(AuditNewLogDirTest, ItsFailedSyncRefusesTheFirstDurableRecordAndEveryLaterOne) {
  TempDir dir;
  dir_sync_.fail = true;
  auto log = AuditLog::open(dir.path(), kSession, kPolicy);
  ASSERT_TRUE(log.has_value()) << log.error().message();
  auto refused = (*log)->append("decision", {{"n", 1}});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().code, EIO) << refused.error().message();
  EXPECT_NE(refused.error().message().find(dirname_of((*log)->path())), std::string::npos)
      << refused.error().message();
  EXPECT_FALSE((*log)->append("decision", {{"n", 2}}).has_value());
}

TEST(AuditVerify, IntactLogPasses) {
  TempDir dir;
  const AuditVerdict v = *verify_audit_file(write_log(dir, 5));
  EXPECT_TRUE(v.ok()) << v.detail;
  EXPECT_EQ(v.records, 7u);
  EXPECT_EQ(v.session, kSession);
}

// Write-ahead means every exec names a decision recorded before it; a log that chains
// but lacks one (a decision that was never written) fails, naming the exec.
TEST(AuditVerify, AnExecWithoutItsDecisionIsReported) {
  TempDir dir;
  auto log = AuditLog::open(dir.path(), kSession, kPolicy);
  ASSERT_TRUE((*log)->append("session.start", nlohmann::json::object()).has_value());
  ASSERT_TRUE((*log)->append("decision", {{"decision_id", "d1"}}).has_value());
  ASSERT_TRUE((*log)->append("exec", {{"decision_id", "d1"}}).has_value());
  EXPECT_TRUE(verify_audit_file((*log)->path(), /*require_end=*/false)->ok());
  ASSERT_TRUE((*log)->append("exec", {{"decision_id", "d2"}}).has_value());
  ASSERT_TRUE((*log)->append("session.end", nlohmann::json::object()).has_value());
  const AuditVerdict v = *verify_audit_file((*log)->path());
  EXPECT_EQ(v.problem, AuditProblem::kNoDecision);
  EXPECT_EQ(v.seq, 4u);
  EXPECT_EQ(v.records, 3u);
  EXPECT_EQ(v.detail, "exec record names decision_id 'd2', which no decision record before it has");
}

// The per-call record is "call" since exec records per program exist (issue 14); the rule
// moves with it, and a program's exec record (it has an exec_id) is not a call.
TEST(AuditVerify, ACallWithoutItsDecisionIsReported) {
  TempDir dir;
  auto log = AuditLog::open(dir.path(), kSession, kPolicy);
  ASSERT_TRUE((*log)->append("session.start", nlohmann::json::object()).has_value());
  ASSERT_TRUE((*log)->append("decision", {{"decision_id", "d1"}}).has_value());
  ASSERT_TRUE((*log)->append("exec", {{"decision_id", "d1"}, {"exec_id", "e1"}}).has_value());
  ASSERT_TRUE((*log)->append("call", {{"decision_id", "d1"}}).has_value());
  EXPECT_TRUE(verify_audit_file((*log)->path(), /*require_end=*/false)->ok());
  ASSERT_TRUE((*log)->append("call", {{"decision_id", "d2"}}).has_value());
  const AuditVerdict v = *verify_audit_file((*log)->path(), /*require_end=*/false);
  EXPECT_EQ(v.problem, AuditProblem::kNoDecision);
  EXPECT_EQ(v.seq, 5u);
  EXPECT_EQ(v.detail, "call record names decision_id 'd2', which no decision record before it has");
}

TEST(AuditVerify, RunningSessionPassesOnlyWithoutRequireEnd) {
  TempDir dir;
  auto log = AuditLog::open(dir.path(), kSession, kPolicy);
  ASSERT_TRUE((*log)->append("session.start", nlohmann::json::object()).has_value());
  EXPECT_EQ(verify_audit_file((*log)->path())->problem, AuditProblem::kIncomplete);
  EXPECT_TRUE(verify_audit_file((*log)->path(), /*require_end=*/false)->ok());
}

TEST(AuditVerify, EveryFlippedByteIsCaught) {
  TempDir dir;
  const std::string data = slurp(write_log(dir, 2));
  for (size_t i = 0; i < data.size(); ++i) {
    SCOPED_TRACE("flip at byte " + std::to_string(i));
    std::string bad = data;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    const AuditVerdict v = verify_audit(bad);
    ASSERT_FALSE(v.ok());
    // The break is reported at the record holding the byte (or, for a flipped newline, at
    // the record it glued to its neighbour).
    const size_t line_start = data.rfind('\n', i == 0 ? 0 : i - 1);
    const size_t expect_offset = (i == 0 || line_start == std::string::npos) ? 0 : line_start + 1;
    EXPECT_EQ(v.offset, expect_offset) << v.detail;
  }
}

TEST(AuditVerify, DeletedRecordIsReportedMissingBySeqAndOffset) {
  TempDir dir;
  auto lines = split_lines(slurp(write_log(dir, 4)));
  const size_t offset = lines[0].size() + 1 + lines[1].size() + 1;
  lines.erase(lines.begin() + 2);  // seq 3
  const AuditVerdict v = verify_audit(join_lines(lines));
  EXPECT_EQ(v.problem, AuditProblem::kMissing) << v.detail;
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.offset, offset);
  EXPECT_EQ(v.records, 2u);
}

TEST(AuditVerify, SwappedRecordsAreReportedReordered) {
  TempDir dir;
  auto lines = split_lines(slurp(write_log(dir, 4)));
  std::swap(lines[2], lines[3]);  // seq 3 and 4
  const AuditVerdict v = verify_audit(join_lines(lines));
  EXPECT_EQ(v.problem, AuditProblem::kReordered) << v.detail;
  EXPECT_EQ(v.seq, 3u);
  EXPECT_EQ(v.offset, lines[0].size() + 1 + lines[1].size() + 1);
}

TEST(AuditVerify, RenumberedRecordFailsItsHash) {
  TempDir dir;
  auto lines = split_lines(slurp(write_log(dir, 3)));
  const size_t at = lines[2].find("\"seq\":3");
  ASSERT_NE(at, std::string::npos);
  lines[2].replace(at, 7, "\"seq\":9");
  const AuditVerdict v = verify_audit(join_lines(lines));
  EXPECT_EQ(v.problem, AuditProblem::kChanged);
  EXPECT_EQ(v.seq, 3u);
}

TEST(AuditVerify, RecordFromAnotherChainFailsPrev) {
  TempDir a, b;
  auto la = split_lines(slurp(write_log(a, 3)));
  auto lb = split_lines(slurp(write_log(b, 3)));
  la[2] = lb[2];  // same session and seq, a valid record, but another chain
  const AuditVerdict v = verify_audit(join_lines(la));
  EXPECT_EQ(v.problem, AuditProblem::kWrongPrev) << v.detail;
  EXPECT_EQ(v.seq, 3u);
}

TEST(AuditVerify, AnyTruncationIsReportedAtTheCut) {
  TempDir dir;
  const std::string data = slurp(write_log(dir, 3));
  const auto lines = whole_lines(data);
  for (size_t cut = 0; cut < data.size(); ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    const AuditVerdict v = verify_audit(std::string_view(data).substr(0, cut));
    ASSERT_FALSE(v.ok());
    const uint64_t whole =
        static_cast<uint64_t>(std::count(data.begin(), data.begin() + cut, '\n'));
    EXPECT_EQ(v.records, whole);
    EXPECT_EQ(v.seq, whole + 1);
    if (cut == 0) {
      EXPECT_EQ(v.problem, AuditProblem::kEmpty);
    } else if (data[cut - 1] == '\n') {
      EXPECT_EQ(v.problem, AuditProblem::kIncomplete);
      EXPECT_EQ(v.offset, cut);
    } else {
      EXPECT_EQ(v.problem, AuditProblem::kTruncated);
      EXPECT_EQ(v.offset, lines[whole].offset);
    }
  }
  EXPECT_TRUE(verify_audit(data).ok());
}

}  // namespace
}  // namespace moat::sessions

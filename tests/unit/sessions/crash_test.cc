// tests/unit/sessions/crash_test.cc: SIGKILL a writer mid-append, then reopen: everything
// that append acknowledged is there, and the file takes new appends.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "sessions/audit.h"
#include "sessions/audit_verify.h"
#include "sessions/json_util.h"
#include "sessions/store.h"
#include "temp_dir.h"

namespace moat::sessions {
namespace {

using testing::TempDir;

// Reads the acknowledgements a killed child wrote to `fd`: one uint32 per acknowledged append.
std::set<uint32_t> read_acks(int fd) {
  std::set<uint32_t> acks;
  uint32_t v;
  while (::read(fd, &v, sizeof v) == static_cast<ssize_t>(sizeof v)) acks.insert(v);
  return acks;
}

// Runs `body(ack_fd)` in a child, lets it work for `delay_us`, then SIGKILLs it.
template <typename Body>
std::set<uint32_t> run_and_kill(int delay_us, Body body) {
  int p[2];
  EXPECT_EQ(::pipe(p), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(p[0]);
    body(p[1]);
    ::_exit(0);
  }
  ::close(p[1]);
  ::usleep(static_cast<useconds_t>(delay_us));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::set<uint32_t> acks = read_acks(p[0]);
  ::close(p[0]);
  return acks;
}

TEST(SessionStoreCrash, SigkillMidAppendLosesNothingAcknowledged) {
  for (int round = 0; round < 8; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    TempDir dir;
    auto created = SessionStore::create(dir.path(), "/w");
    ASSERT_TRUE(created);
    const std::string path = (*created)->path();
    created->reset();
    const std::set<uint32_t> acks = run_and_kill(3000 + round * 4000, [&](int ack_fd) {
      auto s = SessionStore::open(path);
      if (!s) ::_exit(3);
      for (uint32_t i = 0;; ++i) {
        Entry e = {{"type", "message"},
                   {"message",
                    {{"role", "user"}, {"n", i}, {"content", std::string(300 + i % 700, 'x')}}}};
        if (!(*s)->append(std::move(e))) ::_exit(4);
        if (::write(ack_fd, &i, sizeof i) != static_cast<ssize_t>(sizeof i)) ::_exit(5);
      }
    });
    auto s = SessionStore::open(path);
    ASSERT_TRUE(s) << s.error().message();
    std::set<uint32_t> found;
    for (const Entry& e : (*s)->entries())
      found.insert(static_cast<uint32_t>(int_field(e["message"], "n")));
    for (uint32_t a : acks) EXPECT_EQ(found.count(a), 1u) << "acknowledged entry " << a << " lost";
    EXPECT_LE(found.size(), acks.size() + 1);  // at most the one in flight
    ASSERT_TRUE((*s)->append({{"type", "session_info"}, {"name", "resumed"}}));
    EXPECT_EQ((*s)->path_to_leaf().size(), found.size() + 1);
  }
}

TEST(AuditLogCrash, SigkillMidAppendKeepsAVerifiableChain) {
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    TempDir dir;
    const std::string session = "01900000-0000-7000-8000-00000000000" + std::to_string(round);
    const std::set<uint32_t> acks = run_and_kill(20000 + round * 15000, [&](int ack_fd) {
      auto log = AuditLog::open(dir.path(), session, "sha256:p");
      if (!log) ::_exit(3);
      for (uint32_t i = 1;; ++i) {
        if (!(*log)->append("decision", {{"n", i}, {"pad", std::string(200, 'y')}})) ::_exit(4);
        if (::write(ack_fd, &i, sizeof i) != static_cast<ssize_t>(sizeof i)) ::_exit(5);
      }
    });
    auto log = AuditLog::open(dir.path(), session, "sha256:p");  // drops a torn record
    ASSERT_TRUE(log) << log.error().message();
    EXPECT_GE((*log)->last_seq(), acks.empty() ? 0u : *acks.rbegin());
    ASSERT_TRUE((*log)->append("session.end", nlohmann::json::object()));
    const AuditVerdict v = *verify_audit_file((*log)->path());
    EXPECT_TRUE(v.ok()) << v.detail;
  }
}

}  // namespace
}  // namespace moat::sessions

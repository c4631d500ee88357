// tests/integration/e2e/audit_quota_test.cc: moatd.toml's [quota] audit_bytes_per_day (issue 30
// point 3): the bytes of audit records a user's sessions write in a UTC day, counted in a file
// per uid that outlives moatd; once reached, no call runs and no session starts for that user.
#include <gtest/gtest.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "moatd_fixture.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string utc_today() {
  const std::time_t now = std::time(nullptr);
  std::tm parts{};
  ::gmtime_r(&now, &parts);
  char out[16];
  std::strftime(out, sizeof out, "%Y-%m-%d", &parts);
  return out;
}

class AuditQuotaTest : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << "a session needs a sandbox: " << why;
    make_workspace();
    counter_ = dir_.path() + "/audit/quota/audit-bytes-" + std::to_string(::getuid());
  }
  void start_with_quota(const std::string& quota) {
    const std::string config = dir_.path() + "/moatd.toml";
    std::ofstream(config) << "[quota]\naudit_bytes_per_day = " << quota << "\n";
    start_moatd(default_policy_flags(), {"MOAT_MOATD_CONFIG=" + config});
    ASSERT_TRUE(eventually([&] { return RawClient(socket_).connected(); })) << moatd_log();
  }
  // The day's counter as moatd keeps it, before moatd starts.
  void write_counter(const std::string& text) {
    fs::create_directories(fs::path(counter_).parent_path());
    std::ofstream(counter_) << text;
  }
  json hello(RawClient& c) {
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    return c.read_frame();
  }
  json bash(RawClient& c, const std::string& id) {
    c.send_json({{"type", "call"}, {"id", id}, {"tool", "bash"},
                 {"arguments", {{"command", "true"}}}});
    return c.read_result();
  }

  std::string counter_;
};

// A small quota reached by a few calls: the next call is refused naming the quota (it never
// runs: its decision could not be written), and so is the next hello; the session's end is
// still written, and the counter holds every byte the log took.
TEST_F(AuditQuotaTest, AReachedQuotaRefusesTheNextCallAndHelloAndTheSessionStillEnds) {
  start_with_quota("8192");
  RawClient c(socket_);
  const json welcome = hello(c);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  int ran = 0;
  json refused;
  for (int i = 0; i < 40 && refused.is_null(); ++i) {
    const json r = bash(c, "c" + std::to_string(i));
    if (r.value("isError", false)) refused = r;
    else ++ran;
  }
  ASSERT_FALSE(refused.is_null()) << "40 calls ran under a quota of 8192 bytes";
  EXPECT_GT(ran, 0);
  EXPECT_NE(refused.dump().find("quota.audit_bytes_per_day = 8192 in "), std::string::npos)
      << refused.dump();
  EXPECT_NE(refused.dump().find("(moatd's quota, set by its operator)"), std::string::npos);
  RawClient next(socket_);
  const json refusal = hello(next);
  EXPECT_EQ(refusal.value("code", ""), "quota") << refusal.dump();
  EXPECT_NE(refusal.value("message", "").find("quota.audit_bytes_per_day = 8192"),
            std::string::npos)
      << refusal.dump();
  c.send_json({{"type", "bye"}});
  ASSERT_EQ(c.read_frame().value("type", ""), "bye") << moatd_log();
  const std::string log = welcome.value("audit", "");
  bool ended = false;
  for (const json& r : records_of(log)) ended = ended || r.value("type", "") == "session.end";
  EXPECT_TRUE(ended) << read_file(log);
  EXPECT_EQ(read_file(counter_),
            utc_today() + " " + std::to_string(fs::file_size(log)) + "\n");
}

// The count outlives moatd: a counter of today over the quota refuses the first hello of a
// new moatd. A counter of another day is that day's: the session starts at 0 and runs.
TEST_F(AuditQuotaTest, TheCountOutlivesMoatdAndANewUtcDayStartsAtZero) {
  write_counter(utc_today() + " 5000\n");
  start_with_quota("\"4KiB\"");
  RawClient first(socket_);
  const json refusal = hello(first);
  EXPECT_EQ(refusal.value("code", ""), "quota") << refusal.dump();
  EXPECT_NE(refusal.value("message", "").find("wrote 5000 bytes of audit records on " +
                                              utc_today()),
            std::string::npos)
      << refusal.dump();
  stop_moatd();
  write_counter("2000-01-01 999999\n");
  start_with_quota("\"4KiB\"");
  RawClient next(socket_);
  ASSERT_EQ(hello(next).value("type", ""), "welcome") << moatd_log();
  EXPECT_FALSE(bash(next, "a").value("isError", true)) << moatd_log();
  next.send_json({{"type", "bye"}});  // the count is written when the log ends
  ASSERT_EQ(next.read_frame().value("type", ""), "bye") << moatd_log();
  EXPECT_EQ(read_file(counter_).rfind(utc_today() + " ", 0), 0u) << read_file(counter_);
}

// A counter file that is not one stops that user's sessions (fail closed), naming the file.
TEST_F(AuditQuotaTest, ACounterThatIsNotOneRefusesTheHelloNamingIt) {
  write_counter("yesterday lots\n");
  start_with_quota("\"1G\"");
  RawClient c(socket_);
  const json refusal = hello(c);
  EXPECT_EQ(refusal.value("code", ""), "quota") << refusal.dump();
  EXPECT_NE(refusal.value("message", "").find(counter_ + " is not \"YYYY-MM-DD BYTES\""),
            std::string::npos)
      << refusal.dump();
}

// One user's quota is theirs: root's spent day refuses root's `moat sandbox exec` naming the
// quota, while another uid's runs on the same moatd.
TEST_F(AuditQuotaTest, AnotherUsersSessionsAreNotRefusedByOnesSpentQuota) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root to connect as another uid";
  write_counter(utc_today() + " 5000\n");
  start_with_quota("\"4KiB\"");
  const e2e::Run mine =
      run({moat_bin(), "sandbox", "exec", "--connect", socket_, "-C", ws_, "--", "true"});
  EXPECT_NE(mine.exit_code, 0);
  EXPECT_NE(mine.out.find("quota.audit_bytes_per_day = 4096"), std::string::npos) << mine.out;
  const std::string ws = dir_.path() + "/other", home = dir_.path() + "/other-home";
  for (const std::string& d : {ws, home}) {
    fs::create_directories(d);
    ASSERT_EQ(::chown(d.c_str(), 54321, 54321), 0);
  }
  const e2e::Run other =
      run({"setpriv", "--reuid=54321", "--regid=54321", "--clear-groups", moat_bin(), "sandbox",
           "exec", "--connect", socket_, "-C", ws, "--", "true"},
          {"HOME=" + home});
  EXPECT_EQ(other.exit_code, 0) << other.out << moatd_log();
}

}  // namespace
}  // namespace moat::e2e

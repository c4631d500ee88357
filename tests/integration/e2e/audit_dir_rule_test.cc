// tests/integration/e2e/audit_dir_rule_test.cc: the policy's $AUDIT_DIR is the directory this
// moatd writes its audit logs to (issue 13 item 7), wherever --audit-dir or MOAT_AUDIT_DIR put
// it: the rule default.protected-meta refuses a write there, by name, and the log is there.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "e2e_support.h"
#include "moatd_fixture.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class AuditDirRuleTest : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    make_workspace();
    fs::create_directories(dir_.path() + "/no-policy");
  }

  void start_moatd(const std::vector<std::string>& args, std::vector<std::string> env) {
    std::vector<std::string> flags = {"--system-policy-dir", dir_.path() + "/no-policy"};
    flags.insert(flags.end(), args.begin(), args.end());
    env.insert(env.begin(),
               {"HOME=" + dir_.path() + "/home", "XDG_CONFIG_HOME=" + dir_.path() + "/home/.config",
                "XDG_STATE_HOME=" + dir_.path() + "/home/.local/state"});
    MoatdProcess::start_moatd(flags, env);
  }

  // Writes a file into `audit_dir` (inside the workspace) through the write tool, and
  // returns the result; the session's audit log must be in `audit_dir` by then.
  json write_into(const std::string& audit_dir) {
    RawClient c(socket_);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    json welcome = c.read_frame();
    EXPECT_EQ(welcome.value("type", ""), "welcome") << welcome.dump();
    EXPECT_EQ(welcome.value("audit", "").rfind(audit_dir + "/", 0), 0u) << welcome.dump();
    c.send_json({{"type", "call"},
                 {"id", "1"},
                 {"tool", "write"},
                 {"arguments", {{"path", audit_dir + "/planted.txt"}, {"content", "x"}}}});
    json r = c.read_result();
    c.send_json({{"type", "bye"}});
    c.read_frame();
    return r;
  }

  static std::string text_of(const json& result) {
    return result.contains("content") && !result["content"].empty()
               ? result["content"][0].value("text", "")
               : result.dump();
  }
};

TEST_F(AuditDirRuleTest, ProtectedMetaNamesTheDirectoryMoatdWritesToWithAuditDir) {
  const std::string audit_dir = ws_ + "/logs/audit";
  start_moatd({"--audit-dir", audit_dir}, {"MOAT_AUDIT_DIR="});
  json r = write_into(audit_dir);
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_NE(text_of(r).find("rule default.protected-meta"), std::string::npos) << r.dump();
  EXPECT_FALSE(fs::exists(audit_dir + "/planted.txt"));
}

TEST_F(AuditDirRuleTest, ProtectedMetaNamesTheDirectoryMoatdWritesToWithMoatAuditDir) {
  const std::string audit_dir = ws_ + "/audit-env";
  start_moatd({}, {"MOAT_AUDIT_DIR=" + audit_dir});
  json r = write_into(audit_dir);
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_NE(text_of(r).find("rule default.protected-meta"), std::string::npos) << r.dump();
  EXPECT_FALSE(fs::exists(audit_dir + "/planted.txt"));
}

}  // namespace
}  // namespace moat::e2e

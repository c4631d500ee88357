// tests/integration/e2e/system_audit_test.cc: a system moatd's audit logs, one folder per user
// (issue 30 point 3, sessions/audit_access.h): uid 65534's log is readable by 65534 (`moat audit
// verify` and `moat audit show` as 65534 read it) and root, neither writable nor removable by
// 65534, and another uid can neither read nor list it. A filesystem without ACLs stops moatd.
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "moatd_fixture.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

class SystemAuditTest : public MoatdProcess {
 protected:
  // `argv` as `uid` (its own group, no other), with `home` as its HOME and state.
  e2e::Run run_as(int uid, const std::string& home, std::vector<std::string> argv) {
    const std::string id = std::to_string(uid);
    argv.insert(argv.begin(), {"setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups"});
    return run(argv, {"HOME=" + home, "XDG_STATE_HOME=" + home + "/.state",
                      "MOAT_MOATD_CONFIG=" + config_});
  }
  // A home (and workspace, home/ws) owned by `uid`.
  std::string home_of(int uid) {
    const std::string home = dir_.path() + "/home" + std::to_string(uid);
    fs::create_directories(home + "/ws");
    for (const std::string& p : {home, home + "/ws"}) EXPECT_EQ(::chown(p.c_str(), uid, uid), 0);
    return home;
  }
  // The one audit log under `dir`, or "".
  static std::string only_log(const std::string& dir) {
    std::vector<std::string> logs;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      if (e.path().extension() == ".jsonl") logs.push_back(e.path());
    return logs.size() == 1 ? logs.front() : "";
  }
  std::string config_;
};

TEST_F(SystemAuditTest, AUsersLogIsReadableByThatUserAndRootAloneAndTheUserCannotChangeIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "a system moatd is root's (serves other users)";
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << "a session needs a sandbox: " << why;
  const std::string audit = dir_.path() + "/audit";
  config_ = dir_.path() + "/moatd.toml";
  start_moatd(default_policy_flags());
  ASSERT_TRUE(eventually([&] { return fs::exists(socket_); })) << moatd_log();
  ::chmod(socket_.c_str(), 0666);  // systemd's SocketMode: every user may connect
  std::ofstream(config_) << "[system]\nsocket = \"" << socket_ << "\"\naudit_dir = \"" << audit
                         << "\"\n";
  const std::string home = home_of(65534);
  // moat as 65534 uses the configured system moatd (no --connect).
  e2e::Run r = run_as(65534, home,
                 {moat_bin(), "sandbox", "exec", "-C", home + "/ws", "--", "echo", "marker-4711"});
  ASSERT_EQ(r.exit_code, 0) << r.out << moatd_log();
  const std::string mine = audit + "/users/65534";
  const std::string log = only_log(mine);
  ASSERT_FALSE(log.empty()) << "no one log in " << mine << "\n" << moatd_log();
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u) << "the user's log is root's";
  EXPECT_EQ(st.st_mode & 07777, 0640u);

  // 65534 reads it: moat audit verify on the file, moat audit show finding it by itself.
  r = run_as(65534, home, {moat_bin(), "audit", "verify", log});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find(": ok, "), std::string::npos) << r.out;
  r = run_as(65534, home, {moat_bin(), "audit", "show"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("marker-4711"), std::string::npos) << r.out;
  // ... and can neither change, remove nor add to it.
  const std::string before = read_file(log);
  for (const std::string& cmd :
       {"echo forged >> " + log, "rm -f " + log, "mv " + log + " " + log + ".x",
        "touch " + fs::path(log).parent_path().string() + "/new.jsonl", "chmod 0666 " + log,
        "touch " + mine + "/new"}) {
    r = run_as(65534, home, {"sh", "-c", cmd});
    EXPECT_NE(r.exit_code, 0) << "65534 could: " << cmd;
  }
  EXPECT_EQ(read_file(log), before);

  // Another uid can neither read it nor list any folder on the way.
  const std::string other = home_of(65533);
  for (const std::string& cmd : {"cat " + log, "ls " + mine, "ls " + audit + "/users",
                                 "ls " + audit, "ls " + fs::path(log).parent_path().string()}) {
    r = run_as(65533, other, {"sh", "-c", cmd});
    EXPECT_NE(r.exit_code, 0) << "uid 65533 could: " << cmd << "\n" << r.out;
  }
  r = run_as(65533, other, {moat_bin(), "audit", "show"});
  EXPECT_EQ(r.out.find("marker-4711"), std::string::npos) << r.out;
}

// ramfs takes no extended attributes, so no ACL: moatd stops, naming the folder and why.
TEST_F(SystemAuditTest, AnAuditFolderWithoutAclsStopsTheSystemMoatdNamingIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "a system moatd is root's (serves other users)";
  const std::string noacl = dir_.path() + "/noacl";
  fs::create_directories(noacl);
  if (::mount("ramfs", noacl.c_str(), "ramfs", 0, nullptr) != 0)
    GTEST_SKIP() << "cannot mount a ramfs (a filesystem without ACLs): " << strerror(errno);
  std::vector<std::string> flags = default_policy_flags();
  flags[1] = noacl + "/audit";  // --audit-dir's value
  start_moatd(flags);
  EXPECT_EQ(wait_exit(pid_, 20), 2) << moatd_log();
  pid_ = -1;
  EXPECT_NE(moatd_log().find("POSIX ACLs"), std::string::npos) << moatd_log();
  EXPECT_NE(moatd_log().find(noacl + "/audit/users"), std::string::npos) << moatd_log();
  ::umount2(noacl.c_str(), MNT_DETACH);
}

}  // namespace
}  // namespace moat::e2e

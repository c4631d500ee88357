// tests/integration/e2e/files_changed_test.cc: each tool call's audit record lists the workspace
// files the call created, modified, deleted or renamed, with SHA-256 before and after, whether
// a file tool or any process under bash changed them (issue 14 item 4), through the real moatd.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "e2e_support.h"
#include "moatd_fixture.h"
#include "sessions/digest.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string sha(const std::string& text) { return sessions::sha256_hex(text); }

class FilesChangedTest : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    make_workspace();
    start_moatd(default_policy_flags());
  }
  void write(const std::string& rel, const std::string& text) {
    std::ofstream(ws_ + "/" + rel, std::ios::binary | std::ios::trunc) << text;
  }
  // Greets moatd; returns the session's audit log path.
  std::string hello(RawClient& c) {
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    json welcome = c.read_frame();
    EXPECT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
    return welcome.value("audit", "");
  }
  json call(RawClient& c, const std::string& id, const std::string& tool, const json& args) {
    c.send_json({{"type", "call"}, {"id", id}, {"tool", tool}, {"arguments", args}});
    json r = c.read_result();
    EXPECT_FALSE(r.value("isError", true)) << r.dump();
    return r;
  }
  void bye(RawClient& c) {
    c.send_json({{"type", "bye"}});
    EXPECT_EQ(c.read_frame().value("type", ""), "bye");
  }
  // The files_changed of the call `id`'s record, by path (the tool call's record is the one
  // that carries the list, whatever its type is named).
  static std::map<std::string, json> changes_of(const std::string& log, const std::string& id) {
    std::ifstream in(log);
    std::map<std::string, json> out;
    for (std::string line; std::getline(in, line);) {
      json r = json::parse(line, nullptr, false);
      if (!r.is_object() || r.value("call_id", "") != id || !r.contains("files_changed")) continue;
      EXPECT_TRUE(r["files_changed"].is_array()) << r.dump();
      EXPECT_FALSE(r.value("files_changed_truncated", true));
      for (const json& c : r["files_changed"]) out[c.value("path", "")] = c;
    }
    return out;
  }
};

TEST_F(FilesChangedTest, EveryFileABashCommandChangedIsListedWithItsHashes) {
  write("f1", "a1\n");
  write("f2", "a2\n");
  write("f3", "three\n");
  write("f4", "four\n");
  write("untouched", "u\n");
  RawClient c(socket_);
  const std::string log = hello(c);
  call(c, "b", "bash", {{"command", "sed -i s/a/b/ f1 f2 && rm f3 && mv f4 f5 && echo x > f6"}});
  bye(c);
  const auto changes = changes_of(log, "b");
  ASSERT_EQ(changes.size(), 5u) << json(changes).dump(1);
  const json& f1 = changes.at(ws_ + "/f1");
  EXPECT_EQ(f1["op"], "modify");
  EXPECT_EQ(f1["before"]["sha256"], sha("a1\n"));
  EXPECT_EQ(f1["after"]["sha256"], sha("b1\n"));
  EXPECT_EQ(f1["after"]["size"], 3);
  const json& f2 = changes.at(ws_ + "/f2");
  EXPECT_EQ(f2["op"], "modify");
  EXPECT_EQ(f2["before"]["sha256"], sha("a2\n"));
  EXPECT_EQ(f2["after"]["sha256"], sha("b2\n"));
  const json& f3 = changes.at(ws_ + "/f3");
  EXPECT_EQ(f3["op"], "delete");
  EXPECT_EQ(f3["before"]["sha256"], sha("three\n"));
  EXPECT_TRUE(f3["after"].is_null());
  const json& f5 = changes.at(ws_ + "/f5");
  EXPECT_EQ(f5["op"], "rename");
  EXPECT_EQ(f5["from"], ws_ + "/f4");
  EXPECT_EQ(f5["before"]["sha256"], sha("four\n"));
  EXPECT_EQ(f5["after"]["sha256"], sha("four\n"));
  const json& f6 = changes.at(ws_ + "/f6");
  EXPECT_EQ(f6["op"], "create");
  EXPECT_TRUE(f6["before"].is_null());
  EXPECT_EQ(f6["after"]["sha256"], sha("x\n"));
  e2e::Run v = run({moat_bin(), "audit", "verify", log});
  EXPECT_EQ(v.exit_code, 0) << v.out;
}

TEST_F(FilesChangedTest, AWriteToolCallListsItsFileAndAnUnchangingCallListsNone) {
  write("old.txt", "old\n");
  RawClient c(socket_);
  const std::string log = hello(c);
  call(c, "w", "write", {{"path", ws_ + "/old.txt"}, {"content", "new\n"}});
  call(c, "r", "read", {{"path", ws_ + "/old.txt"}});
  bye(c);
  const auto written = changes_of(log, "w");
  ASSERT_EQ(written.size(), 1u) << json(written).dump(1);
  const json& f = written.at(ws_ + "/old.txt");
  EXPECT_EQ(f["op"], "modify");
  EXPECT_EQ(f["before"]["sha256"], sha("old\n"));
  EXPECT_EQ(f["after"]["sha256"], sha("new\n"));
  EXPECT_TRUE(changes_of(log, "r").empty());
}

// A digest of a file the model may not read tells whoever can guess its content that the guess
// is right: its change is listed, its hashes are not. (The sandbox cannot write .env, which is
// hidden from it; here the person's editor changes it while a call runs.)
TEST_F(FilesChangedTest, AReadDeniedFileIsListedWithoutItsHashes) {
  write(".env", "TOKEN=1\n");
  RawClient c(socket_);
  const std::string log = hello(c);
  write(".env", "TOKEN=22\n");
  call(c, "b", "bash", {{"command", "true"}});
  bye(c);
  const auto changes = changes_of(log, "b");
  ASSERT_EQ(changes.size(), 1u) << json(changes).dump(1);
  const json& env = changes.at(ws_ + "/.env");
  EXPECT_EQ(env["op"], "modify");
  EXPECT_TRUE(env["before"]["sha256"].is_null());
  EXPECT_TRUE(env["after"]["sha256"].is_null());
  EXPECT_EQ(env["after"]["size"], 9);
  std::ifstream in(log);
  const std::string text(std::istreambuf_iterator<char>(in), {});
  EXPECT_EQ(text.find(sha("TOKEN=22\n")), std::string::npos);
  EXPECT_EQ(text.find(sha("TOKEN=1\n")), std::string::npos);
}

// moatd appends to the session's audit log while a call runs; when the log lies inside the
// workspace (a workspace at or above the home directory), it is not the call's change.
TEST_F(FilesChangedTest, AnAuditLogInsideTheWorkspaceIsNotListed) {
  const std::string socket = dir_.path() + "/inner.sock";
  const pid_t inner =
      start({moatd_bin(), "--socket", socket, "--audit-dir", ws_ + "/audit", "--system-policy-dir",
             dir_.path() + "/no-policy", "--user-policy-dir", dir_.path() + "/no-policy"},
            dir_.path() + "/inner.log");
  std::string log;
  {
    RawClient c(socket);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    json welcome = c.read_frame();
    ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump();
    log = welcome.value("audit", "");
    call(c, "b", "bash", {{"command", "echo x > made"}});
    bye(c);
  }
  kill(inner, SIGTERM);
  wait_exit(inner, 10);
  ASSERT_EQ(log.rfind(ws_ + "/audit/", 0), 0u) << log;
  const auto changes = changes_of(log, "b");
  ASSERT_EQ(changes.size(), 1u) << json(changes).dump(1);
  EXPECT_EQ(changes.begin()->first, ws_ + "/made");
}

}  // namespace
}  // namespace moat::e2e

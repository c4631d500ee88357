// tests/integration/e2e/audit_record_test.cc: nothing runs without its decision on disk
// (issue 12, item 3), through the real moatd and moat binaries: host bytes that are not
// UTF-8 are recorded losslessly, a decision that cannot be written refuses its call,
// `moat audit verify` fails on an exec whose decision is missing, and NUL never reaches a
// path.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "base/base64.h"
#include "e2e_support.h"
#include "moatd_fixture.h"
#include "sessions/audit.h"
#include "sessions/jcs.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class AuditRecordTest : public MoatdProcess {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    make_workspace();
    start_moatd(default_policy_flags());
  }
  // Greets moatd for `workspace`; returns the welcome frame.
  json hello(RawClient& c, const std::string& workspace) {
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", workspace}, {"headless", true}});
    return c.read_frame();
  }
  json call(RawClient& c, const std::string& id, const std::string& tool, const json& args) {
    c.send_json({{"type", "call"}, {"id", id}, {"tool", tool}, {"arguments", args}});
    return c.read_result();
  }
  static std::string text_of(const json& result) {
    return result.contains("content") ? result["content"][0].value("text", "") : result.dump();
  }
  // Runs one bash command in a fresh session and returns the session's audit log path.
  std::string session_running(const std::string& command) {
    RawClient c(socket_);
    json welcome = hello(c, ws_);
    EXPECT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
    json r = call(c, "b", "bash", {{"command", command}});
    EXPECT_FALSE(r.value("isError", true)) << r.dump();
    c.send_json({{"type", "bye"}});
    EXPECT_EQ(c.read_frame().value("type", ""), "bye");
    return welcome.value("audit", "");
  }
};

// Who ran the session and where (issue 27 item 21): session.start names the OS user (name,
// uid) and the host, and `moat audit show` prints them.
TEST_F(AuditRecordTest, SessionStartNamesTheOsUserAndTheHostAndShowPrintsThem) {
  const std::string log = session_running("true");
  ASSERT_FALSE(log.empty()) << moatd_log();
  const json start = records_of(log).at(0);
  ASSERT_EQ(start.value("type", ""), "session.start") << start.dump();
  const passwd* me = ::getpwuid(::geteuid());
  ASSERT_NE(me, nullptr);
  utsname u{};
  ASSERT_EQ(::uname(&u), 0);
  EXPECT_EQ(start["peer"].value("user", ""), me->pw_name) << start.dump();
  EXPECT_EQ(start["peer"].value("uid", -1), static_cast<int>(::geteuid())) << start.dump();
  EXPECT_EQ(start.value("host", ""), u.nodename) << start.dump();
  e2e::Run show = run({moat_bin(), "audit", "show", log});
  EXPECT_NE(show.out.find("user " + std::string(me->pw_name) +
                          " (uid " + std::to_string(::geteuid())),
            std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("on host " + std::string(u.nodename)), std::string::npos) << show.out;
}

// A policy file named by a relative path (moatd --policy, --user-policy-dir) is recorded by
// its absolute path: session.start's layers and every rule's file (issue 27 item 21).
TEST_F(AuditRecordTest, APolicyFileNamedRelativeIsRecordedByItsAbsolutePath) {
  fs::create_directories(dir_.path() + "/rel");
  std::ofstream(dir_.path() + "/rel/narrow.toml")
      << "schema = 1\n[[command]]\nid = \"cli.no-tar\"\ndecision = \"deny\"\nprogram = "
         "\"tar\"\nreason = \"Not today.\"\n";
  const std::string socket = dir_.path() + "/rel.sock";
  const pid_t pid = start({"/bin/sh", "-c",
                           "cd '" + dir_.path() + "' && exec '" + moatd_bin() +
                               "' --socket rel.sock --audit-dir audit-rel --system-policy-dir "
                               "no-policy --user-policy-dir no-policy --policy rel/narrow.toml"},
                          dir_.path() + "/moatd-rel.log");
  std::string log;
  {
    RawClient c(socket);
    const json welcome = hello(c, ws_);
    ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump();
    log = welcome.value("audit", "");
    EXPECT_TRUE(call(c, "t", "bash", {{"command", "tar --version"}}).value("isError", false));
    c.send_json({{"type", "bye"}});
    (void)c.read_frame();
  }
  kill(pid, SIGTERM);
  wait_exit(pid, 10);
  const std::string want = dir_.path() + "/rel/narrow.toml";
  bool layer = false, rule = false;
  for (const json& r : records_of(fs::path(log).is_absolute() ? log : dir_.path() + "/" + log)) {
    if (r.value("type", "") == "session.start")
      for (const json& l : r["layers"]) layer |= l.value("file", "") == want;
    if (r.value("type", "") == "decision" && r["deciding_rule"].value("id", "") == "cli.no-tar")
      rule = r["deciding_rule"].value("file", "") == want;
  }
  EXPECT_TRUE(layer) << "session.start's layers do not name " << want;
  EXPECT_TRUE(rule) << "the decision's rule does not name " << want;
}

// A call the person cancels (the agent sends a cancel frame on Ctrl-C; moatd kills its
// processes) is recorded as cancelled by the person, the signal kept (issue 27 item 21).
TEST_F(AuditRecordTest, ACallThePersonCancelsIsRecordedAsCancelledByThePerson) {
  std::string log;
  {
    RawClient c(socket_);
    const json welcome = hello(c, ws_);
    ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
    log = welcome.value("audit", "");
    c.send_json({{"type", "call"},
                 {"id", "s"},
                 {"tool", "bash"},
                 {"arguments", {{"command", "sleep 30"}}}});
    ::usleep(700 * 1000);  // the sleep is running (its decision is written first)
    c.send_json({{"type", "cancel"}, {"id", "s"}});
    (void)c.read_result();
    c.send_json({{"type", "bye"}});
    (void)c.read_frame();
  }
  json rec;
  for (const json& r : records_of(log))
    if (r.value("type", "") == "call" && r.value("call_id", "") == "s") rec = r;
  ASSERT_TRUE(rec.is_object()) << "no call record";
  EXPECT_EQ(rec.value("cancelled", ""), "person") << rec.dump();
  EXPECT_FALSE(rec["signal"].is_null()) << rec.dump();
  e2e::Run show = run({moat_bin(), "audit", "show", log});
  EXPECT_NE(show.out.find("cancelled by the person"), std::string::npos) << show.out;
}

// `echo $'\xff'` is ASCII on the wire, but the shell word the policy judged is the byte 0xff.
// Canonical JSON cannot hold it as a string: the decision used to be dropped (only logged)
// while the command ran, and its exec record named a decision that appeared nowhere.
TEST_F(AuditRecordTest, ANonUtf8CommandGetsItsDecisionRecordAndTheLogVerifies) {
  const std::string log = session_running("echo $'\\xff' > out.bin");
  ASSERT_FALSE(log.empty()) << moatd_log();
  std::ifstream out(ws_ + "/out.bin");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(out), {}), "\xff\n");
  std::set<std::string> decisions;
  bool bytes_recorded = false;
  for (const json& r : records_of(log)) {
    ASSERT_TRUE(r.is_object());
    if (r.value("type", "") == "decision") {
      decisions.insert(r.value("decision_id", ""));
      // The unit the policy judged, `echo <0xff>`, is recorded with its exact bytes.
      bytes_recorded |=
          r.dump().find("{\"bytes\":\"" + base64_encode("echo \xff") + "\"}") != std::string::npos;
    }
    if (r.value("type", "") == "exec" || r.value("type", "") == "call") {
      EXPECT_EQ(decisions.count(r.value("decision_id", "")), 1u)
          << "exec without its decision: " << r.dump();
    }
  }
  EXPECT_TRUE(bytes_recorded) << "no decision records the unit `echo <0xff>`";
  e2e::Run v = run({moat_bin(), "audit", "verify", log});
  EXPECT_EQ(v.exit_code, 0) << v.out;
}

// Whoever can rewrite an unsigned log can also recompute its chain: the chain then holds,
// but an exec whose decision is gone must still fail verification, naming the exec.
TEST_F(AuditRecordTest, VerifyFailsOnAnExecWhoseDecisionRecordIsMissing) {
  const std::string log = session_running("echo hi");
  ASSERT_FALSE(log.empty()) << moatd_log();
  std::vector<json> kept;
  for (json& r : records_of(log)) {
    const std::string type = r.value("type", "");
    // Drop the bash call's decision, and the checkpoints that signed the old chain.
    if (type == "checkpoint" || (type == "decision" && r.value("tool", "") == "bash")) continue;
    kept.push_back(std::move(r));
  }
  ASSERT_GE(kept.size(), 3u);
  std::string rewritten;
  std::string prev = sessions::audit_genesis(kept[0]["session"], kept[0]["policy_hash"]);
  uint64_t seq = 0;
  uint64_t exec_seq = 0;
  for (json& r : kept) {
    r["seq"] = ++seq;
    r["prev"] = prev;
    // The first record that names the dropped decision: the call's first program.
    if ((r["type"] == "exec" || r["type"] == "call") && exec_seq == 0) exec_seq = seq;
    auto hash = sessions::audit_record_hash(r);
    ASSERT_TRUE(hash.has_value());
    r["hash"] = *hash;
    prev = *hash;
    auto line = sessions::canonical_json(r);
    ASSERT_TRUE(line.has_value());
    rewritten += *line + "\n";
  }
  ASSERT_NE(exec_seq, 0u);
  const std::string forged = dir_.path() + "/forged.jsonl";
  std::ofstream(forged) << rewritten;
  e2e::Run v = run({moat_bin(), "audit", "verify", forged});
  EXPECT_EQ(v.exit_code, 1) << v.out;
  EXPECT_NE(v.out.find("BROKEN (no-decision) at seq " + std::to_string(exec_seq)),
            std::string::npos)
      << v.out;
  EXPECT_NE(v.out.find("names decision_id"), std::string::npos) << v.out;
}

// A decision that cannot reach the disk refuses its call: the command does not run. The log
// is held at its size by RLIMIT_FSIZE on moatd (set from outside, after the session started),
// so the next append fails with EFBIG, whatever the policy says of audit_required.
TEST_F(AuditRecordTest, ADecisionThatCannotBeWrittenRefusesTheCall) {
  RawClient c(socket_);
  json welcome = hello(c, ws_);
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  struct stat st {};
  ASSERT_EQ(::stat(welcome.value("audit", "").c_str(), &st), 0);
  const rlimit at_size{static_cast<rlim_t>(st.st_size), RLIM_INFINITY};
  ASSERT_EQ(::prlimit(pid_, RLIMIT_FSIZE, &at_size, nullptr), 0) << strerror(errno);
  json r = call(c, "b", "bash", {{"command", "touch ran"}});
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_NE(text_of(r).find("audit log could not be written"), std::string::npos) << r.dump();
  EXPECT_FALSE(fs::exists(ws_ + "/ran")) << "the command ran without its decision on disk";
  EXPECT_EQ(::kill(pid_, 0), 0) << "moatd survived its log's size limit";
}

// `server.pem\0` was judged (and audited) as a name `*.pem` does not match, then opened as
// `server.pem`: the default policy's secrets rule was bypassed.
TEST_F(AuditRecordTest, AWritePathHoldingANulIsRefusedAndNothingIsWritten) {
  RawClient c(socket_);
  ASSERT_EQ(hello(c, ws_).value("type", ""), "welcome") << moatd_log();
  json r = call(c, "w", "write", {{"path", std::string("server.pem\0", 11)}, {"content", "KEY"}});
  EXPECT_TRUE(r.value("isError", false)) << r.dump();
  EXPECT_NE(text_of(r).find("argument 'path' holds a NUL byte"), std::string::npos) << r.dump();
  EXPECT_FALSE(fs::exists(ws_ + "/server.pem"));
  // The same for a path nested in the arguments and a command: both end at the NUL in argv.
  r = call(c, "b", "bash", {{"command", std::string("echo ok\0; touch x", 17)}});
  EXPECT_NE(text_of(r).find("argument 'command' holds a NUL byte"), std::string::npos) << r.dump();
  // File content is bytes: a NUL there is data, and is written.
  r = call(c, "c", "write", {{"path", "data.bin"}, {"content", std::string("a\0b", 3)}});
  EXPECT_FALSE(r.value("isError", true)) << r.dump();
}

TEST_F(AuditRecordTest, AHelloWorkspaceHoldingANulIsRefusedNamingTheField) {
  RawClient c(socket_);
  json e = hello(c, ws_ + std::string("\0/elsewhere", 11));
  EXPECT_EQ(e.value("type", ""), "error") << e.dump();
  EXPECT_EQ(e.value("message", ""), "'hello' frame field 'workspace' holds a NUL byte") << e.dump();
  EXPECT_TRUE(c.closed_by_peer());
}

}  // namespace
}  // namespace moat::e2e

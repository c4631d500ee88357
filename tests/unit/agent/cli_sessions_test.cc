// tests/unit/agent/cli_sessions_test.cc: `moat sessions ...` and `moat audit ...` through the
// binary.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <simdjson.h>

#include "sessions/audit.h"
#include "sessions/jsonl.h"
#include "sessions/store.h"
#include "tests/unit/agent/moat_cli.h"
#include "tests/unit/sessions/audit_fixture.h"
#include "tests/unit/sessions/temp_dir.h"

namespace moat::sessions {
namespace {

using moat::testing::CliRun;
using moat::testing::moat;
using testing::slurp;
using testing::spit;
using testing::TempDir;

class MoatCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("MOAT_BIN");
    if (bin == nullptr || ::access(bin, X_OK) != 0) GTEST_SKIP() << "MOAT_BIN is not built";
  }
  std::string write_audit(int decisions) {
    auto log =
        AuditLog::open(dir_.path() + "/audit", "01900000-0000-7000-8000-000000000001", "sha256:p");
    EXPECT_TRUE(log.has_value());
    EXPECT_TRUE((*log)->append("session.start", {{"version", "t"}}));
    for (int i = 0; i < decisions; ++i)
      EXPECT_TRUE((*log)->append("decision", {{"tool", "bash"},
                                              {"result", i % 2 ? "allow" : "deny"},
                                              {"input", {{"argv", {"cmd" + std::to_string(i)}}}}}));
    EXPECT_TRUE((*log)->append("session.end", nlohmann::json::object()));
    return (*log)->path();
  }
  TempDir dir_;
};

TEST_F(MoatCliTest, AuditVerifyPassesAnIntactLog) {
  const CliRun r = moat("audit verify " + write_audit(3));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("ok, 5 records"), std::string::npos) << r.out;
}

// agent/libcrypto_loader.cc: libcrypto is opened when a command first hashes or signs, not at
// every start (about 1 ms of each `moat sandbox exec`). The dynamic loader lists what it loads
// at start; the verify below hashes every record through the forwarders.
TEST_F(MoatCliTest, MoatStartsWithoutLibcryptoAndOpensItToVerifyALog) {
  // Set by env(1) for moat alone: the shell and env are loaded before it is.
  CliRun listed;
  FILE* p = ::popen(("env LD_TRACE_LOADED_OBJECTS=1 " + std::string(std::getenv("MOAT_BIN")) +
                     " version")
                        .c_str(),
                    "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) listed.out.append(buf, n);
  ::pclose(p);
  EXPECT_NE(listed.out.find(" => "), std::string::npos) << listed.out;  // the loader's list
  EXPECT_NE(listed.out.find("libc.so"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("libcrypto"), std::string::npos) << listed.out;
  const CliRun r = moat("audit verify " + write_audit(2));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("ok, 4 records"), std::string::npos) << r.out;
}

// agent/simdjson_loader.cc: libsimdjson is opened when a command first reads a session, not at
// every start. The show parses every line through the forwarded implementation, and a damaged
// line's error is the library's own text for it, read from its table of messages.
TEST_F(MoatCliTest, MoatStartsWithoutSimdjsonAndOpensItToShowASession) {
  CliRun listed;
  FILE* p = ::popen(("env LD_TRACE_LOADED_OBJECTS=1 " + std::string(std::getenv("MOAT_BIN")) +
                     " version")
                        .c_str(),
                    "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) listed.out.append(buf, n);
  ::pclose(p);
  EXPECT_NE(listed.out.find("libc.so"), std::string::npos) << listed.out;  // the loader's list
  EXPECT_EQ(listed.out.find("libsimdjson"), std::string::npos) << listed.out;

  auto s = SessionStore::create(dir_.path() + "/s", "/w/repo");
  ASSERT_TRUE(s);
  ASSERT_TRUE((*s)->append(
      {{"type", "message"},
       {"message", {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "hello simd"}}}}}}}));
  const std::string id = (*s)->id(), path = (*s)->path();
  const std::string show = "sessions --dir " + dir_.path() + "/s show " + id;
  CliRun r = moat(show);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("user: hello simd"), std::string::npos) << r.out;
  spit(path, slurp(path) + "{\"type\":\"message\",\"id\":\"x\",\"text\":\"\xff\"}\n");
  r = moat(show);
  EXPECT_NE(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find(std::string("not valid JSON (") + simdjson::error_message(simdjson::UTF8_ERROR) +
                       ")"),
            std::string::npos)
      << r.out;
}

TEST_F(MoatCliTest, AuditVerifyNamesTheDeletedRecordAndExits1) {
  const std::string path = write_audit(3);
  const std::string data = slurp(path);
  const auto lines = whole_lines(data);
  spit(path, data.substr(0, lines[2].offset) + data.substr(lines[3].offset));  // drop seq 3
  const CliRun r = moat("audit verify " + path);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("BROKEN (missing) at seq 3, byte offset " + std::to_string(lines[2].offset)),
            std::string::npos)
      << r.out;
}

TEST_F(MoatCliTest, AuditVerifyReportsATruncatedLog) {
  const std::string path = write_audit(2);
  const std::string data = slurp(path);
  spit(path, data.substr(0, data.size() - 10));
  const CliRun r = moat("audit verify " + path);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("BROKEN (truncated) at seq 4"), std::string::npos) << r.out;
}

TEST_F(MoatCliTest, AuditShowFiltersByDecision) {
  const CliRun r = moat("audit show --decision deny " + write_audit(4));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("deny  cmd0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("deny  cmd2"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("allow"), std::string::npos) << r.out;
}

TEST_F(MoatCliTest, AuditExportWritesAnHtmlTimeline) {
  const std::string out = dir_.path() + "/a.html";
  const CliRun r = moat("audit export --html -o " + out + " " + write_audit(2));
  EXPECT_EQ(r.rc, 0) << r.out;
  const std::string html = slurp(out);
  EXPECT_NE(html.find("Chain verified: 4 records"), std::string::npos);
  EXPECT_NE(html.find("cmd1"), std::string::npos);
}

// A forged row (its content changed, its hash left) must not be shown as if it were a record:
// show and export warn, naming the file, the seq and why, and exit 1 (issue 14 item 6).
TEST_F(MoatCliTest, AuditShowAndExportWarnAndExit1OnAForgedRow) {
  const std::string path = write_audit(3);
  std::string data = slurp(path);
  const size_t at = data.find("\"cmd1\"");
  ASSERT_NE(at, std::string::npos);
  data.replace(at, 6, "\"cmdX\"");  // seq 3: the second decision
  spit(path, data);
  CliRun r = moat("audit show " + path);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("warning: " + path + " does not verify: BROKEN (changed) at seq 3"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("cmdX  [unverified]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("cmd0  [unverified]"), std::string::npos) << r.out;
  const std::string out = dir_.path() + "/a.html";
  r = moat("audit export --html -o " + out + " " + path);
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("warning: " + path + " does not verify: BROKEN (changed) at seq 3"),
            std::string::npos)
      << r.out;
  const std::string html = slurp(out);
  EXPECT_NE(html.find("Chain BROKEN (changed) at seq 3"), std::string::npos);
  EXPECT_NE(html.find("<td>3 <span class=\"bad\">unverified</span></td>"), std::string::npos);
  EXPECT_EQ(html.find("<td>2 <span class=\"bad\">unverified</span></td>"), std::string::npos);
}

// A running session's log has no session.end yet: show says so unless --allow-open.
TEST_F(MoatCliTest, AuditShowOfAnOpenLogNeedsAllowOpen) {
  auto log =
      AuditLog::open(dir_.path() + "/audit", "01900000-0000-7000-8000-000000000002", "sha256:p");
  ASSERT_TRUE(log.has_value());
  ASSERT_TRUE((*log)->append("session.start", {{"version", "t"}}));
  CliRun r = moat("audit show " + (*log)->path());
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("BROKEN (incomplete)"), std::string::npos) << r.out;
  r = moat("audit show --allow-open " + (*log)->path());
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
}

// Two sessions' logs read as one timeline: each row names its session, rows sorted by time.
TEST_F(MoatCliTest, AuditShowOverSeveralFilesAddsASessionColumnAndSortsByTime) {
  const std::string a_id = "01900000-0000-7000-8000-00000000000a";
  const std::string b_id = "01900000-0000-7000-8000-00000000000b";
  auto a = AuditLog::open(dir_.path() + "/audit", a_id, "sha256:p");
  auto b = AuditLog::open(dir_.path() + "/audit", b_id, "sha256:p");
  ASSERT_TRUE(a.has_value() && b.has_value());
  ASSERT_TRUE((*a)->append("session.start", {{"version", "first-a"}}));
  ASSERT_TRUE((*b)->append("session.start", {{"version", "then-b"}}));
  ASSERT_TRUE((*a)->append("session.end", nlohmann::json::object()));
  ASSERT_TRUE((*b)->append("session.end", nlohmann::json::object()));
  const CliRun r = moat("audit show --type session.start " + (*b)->path() + " " + (*a)->path());
  EXPECT_EQ(r.rc, 0) << r.out;
  const size_t first = r.out.find(a_id + "     1 ");
  const size_t then = r.out.find(b_id + "     1 ");
  ASSERT_NE(first, std::string::npos) << r.out;
  ASSERT_NE(then, std::string::npos) << r.out;
  EXPECT_LT(first, then) << r.out;
  EXPECT_NE(r.out.find("first-a"), std::string::npos) << r.out;
}

TEST_F(MoatCliTest, AuditShowTreeAndJson) {
  const std::string path = testing::write_fixture_audit(dir_.path() + "/audit");
  ASSERT_FALSE(path.empty());
  CliRun r = moat("audit show --tree " + path);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("           |- curl x.example  REFUSED (policy, rule org.no-curl)"),
            std::string::npos)
      << r.out;
  r = moat("audit show --json --type call " + path);
  EXPECT_EQ(r.rc, 0) << r.out;
  const auto lines = whole_lines(r.out);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  EXPECT_EQ(nlohmann::json::parse(lines[0].text)["command"], "sh run_tests.sh");
}

TEST_F(MoatCliTest, SessionsListShowTreeAndExport) {
  auto s = SessionStore::create(dir_.path() + "/s", "/w/repo");
  ASSERT_TRUE(s);
  auto a = (*s)->append(
      {{"type", "message"},
       {"message", {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "hello moat"}}}}}}});
  ASSERT_TRUE(a);
  ASSERT_TRUE((*s)->append({{"type", "label"}, {"targetId", *a}, {"label", "start"}}));
  const std::string id = (*s)->id();
  const std::string d = "sessions --dir " + dir_.path() + "/s ";
  CliRun r = moat(d + "list --workspace /w/repo");
  EXPECT_EQ(r.rc, 0) << r.out;
  // The short form (issue 27 item 19: the id's random tail), which show and --resume take.
  EXPECT_EQ(r.out.rfind(id.substr(id.size() - 8) + "  ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("hello moat"), std::string::npos) << r.out;
  r = moat(d + "show " + id.substr(0, 20) + "@start");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("user: hello moat"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("label"), std::string::npos) << r.out;  // the path ends at the label target
  r = moat(d + "tree " + id);
  EXPECT_NE(r.out.find("[start]"), std::string::npos) << r.out;
  r = moat(d + "export --html " + id + " -o " + dir_.path() + "/s.html");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(slurp(dir_.path() + "/s.html").find("hello moat"), std::string::npos);
  r = moat(d + "show nosuchsession");
  EXPECT_EQ(r.rc, 2) << r.out;
}

TEST_F(MoatCliTest, SessionsLabelNamesAnEntryForShowAndResume) {
  std::string first, id;
  {
    auto s = SessionStore::create(dir_.path() + "/s", "/w/repo");
    ASSERT_TRUE(s);
    auto a = (*s)->append(
        {{"type", "message"},
         {"message",
          {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "first task"}}}}}}});
    ASSERT_TRUE(a);
    first = *a;
    ASSERT_TRUE((*s)->append(
        {{"type", "message"},
         {"message",
          {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "second task"}}}}}}}));
    ASSERT_TRUE((*s)->sync());
    id = (*s)->id();
    // The store holds the file's lock while open: labelling now is refused, clearly.
    const CliRun busy = moat("sessions --dir " + dir_.path() + "/s label " + id + "@" +
                             first.substr(0, 12) + " before");
    EXPECT_EQ(busy.rc, 2) << busy.out;
    EXPECT_NE(busy.out.find("running moat"), std::string::npos) << busy.out;
  }
  const std::string d = "sessions --dir " + dir_.path() + "/s ";
  CliRun r = moat(d + "label " + id + "@" + first.substr(0, 12) + " before");
  ASSERT_EQ(r.rc, 0) << r.out;
  r = moat(d + "show " + id + "@before");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("first task"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("second task"), std::string::npos) << "the path ends at the labelled entry\n"
                                                          << r.out;
  r = moat(d + "label " + id + " bad@name");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("may not contain"), std::string::npos) << r.out;
  // The label entry went to the end of the file; nothing before it changed.
  auto reloaded = SessionStore::open_read_only((*resolve_session_ref(dir_.path() + "/s", id)).path);
  ASSERT_TRUE(reloaded);
  ASSERT_EQ((*reloaded)->entries().size(), 3u);
  EXPECT_EQ((*reloaded)->entries().back()["type"], "label");
}

TEST_F(MoatCliTest, ALabelWithoutAnEntryNamesTheNewestMessageEvenAfterAnotherLabel) {
  std::string message, id;
  {
    auto s = SessionStore::create(dir_.path() + "/s", "/w/repo");
    ASSERT_TRUE(s);
    auto a = (*s)->append(
        {{"type", "message"},
         {"message", {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "the task"}}}}}}});
    ASSERT_TRUE(a);
    message = *a;
    ASSERT_TRUE((*s)->append({{"type", "session_info"}, {"name", "a name"}}));
    ASSERT_TRUE((*s)->sync());
    id = (*s)->id();
  }
  const std::string d = "sessions --dir " + dir_.path() + "/s ";
  CliRun r = moat(d + "label " + id + " first");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find(id + "@" + message + " labelled"), std::string::npos) << r.out;
  // The leaf is now the first label entry; a second label still names the message.
  r = moat(d + "label " + id + " second");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find(id + "@" + message + " labelled"), std::string::npos) << r.out;
  auto reloaded = SessionStore::open_read_only((*resolve_session_ref(dir_.path() + "/s", id)).path);
  ASSERT_TRUE(reloaded);
  for (const auto& [target, label] : labels_of(**reloaded)) EXPECT_EQ(target, message) << label;
  r = moat(d + "show " + id + "@second");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("the task"), std::string::npos) << r.out;
}

TEST_F(MoatCliTest, AShortIdThatMatchesSeveralSessionsListsTheCandidates) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto s = SessionStore::create(dir_.path() + "/s", "/w/repo" + std::to_string(i));
    ASSERT_TRUE(s);
    ids.push_back((*s)->id());
  }
  // uuidv7 ids made in the same minute share their first hex digits.
  const std::string prefix = ids[0].substr(0, 4);
  for (const auto& id : ids) ASSERT_EQ(id.substr(0, 4), prefix);
  for (const char* cmd : {"show ", "tree ", "label "}) {
    const CliRun r =
        moat("sessions --dir " + dir_.path() + "/s " + cmd + prefix + (cmd[0] == 'l' ? " x" : ""));
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_NE(r.out.find("ambiguous"), std::string::npos) << r.out;
    for (const auto& id : ids) EXPECT_NE(r.out.find(id), std::string::npos) << cmd << r.out;
  }
}

}  // namespace
}  // namespace moat::sessions

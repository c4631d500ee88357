// tests/unit/sandbox/audit_records_test.cc: the typed audit records (sandbox/audit_records.h)
// are the ones docs/sessions.md's "Record fields" table documents, each encoder writes exactly
// its fields, and the names of who decided and of exec memory have one spelling each.
#include "sandbox/audit_records.h"

#include "sessions/digest.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace moat::sandbox::audit {
namespace {

using Fields = std::set<std::string>;

template <typename Record>
std::pair<std::string, Fields> declared() {
  return {std::string(Record::kType), Fields(std::begin(Record::kFields), std::end(Record::kFields))};
}

std::map<std::string, Fields> typed_records() {
  return std::map<std::string, Fields>{declared<SessionStart>(), declared<SessionRefused>(),
                                       declared<SessionEnd>(),   declared<Decision>(),
                                       declared<Call>(),         declared<Exec>(),
                                       declared<ExecEnd>(),      declared<Net>(),
                                       declared<McpServer>(),    declared<McpCall>()};
}

// The rows of the table that follows "| type | fields |" in docs/sessions.md.
std::map<std::string, Fields> documented_records() {
  std::ifstream in(std::string(MOAT_SOURCE_ROOT) + "/docs/sessions.md");
  std::map<std::string, Fields> out;
  static const std::regex kRow(R"(^\| `([a-z.]+)` \| (.*) \|$)");
  static const std::regex kName("`([A-Za-z0-9_]+)`");
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "| type | fields |") in_table = true;
    if (!in_table) continue;
    if (line.empty()) break;
    std::smatch row;
    if (!std::regex_match(line, row, kRow)) continue;
    const std::string cells = row[2];
    Fields& fields = out[row[1]];
    for (std::sregex_iterator it(cells.begin(), cells.end(), kName), end; it != end; ++it)
      fields.insert((*it)[1]);
  }
  return out;
}

Fields keys(const json& j) {
  Fields out;
  for (const auto& [k, v] : j.items()) out.insert(k);
  return out;
}

TEST(AuditRecords, EveryTypeAndFieldHereIsATypedRecordsAndNoOther) {
  const auto documented = documented_records();
  ASSERT_FALSE(documented.empty()) << "docs/sessions.md lost its \"| type | fields |\" table";
  const auto typed = typed_records();
  for (const auto& [type, fields] : documented) {
    ASSERT_EQ(typed.count(type), 1u) << type << " is documented but has no typed record";
    EXPECT_EQ(fields, typed.at(type)) << "fields of " << type;
  }
  for (const auto& [type, fields] : typed)
    EXPECT_EQ(documented.count(type), 1u) << type << " is a typed record docs/sessions.md omits";
}

TEST(AuditRecords, EachEncoderWritesExactlyItsFieldsWhenEveryOptionalIsSet) {
  SessionStart start;
  start.binds = json::array();
  start.project_policy = json::object();
  EXPECT_EQ(keys(start.to_json()), declared<SessionStart>().second);
  EXPECT_EQ(keys(SessionRefused{"why", json::object()}.to_json()), declared<SessionRefused>().second);
  EXPECT_EQ(keys(SessionEnd{1, 2.5, json::array(), "why"}.to_json()), declared<SessionEnd>().second);
  Decision d;
  d.units = json::array();
  EXPECT_EQ(keys(d.to_json()), declared<Decision>().second);
  Call c;
  c.command = c.output = c.nested_git_reason = c.cancelled = c.files_changed_error = "x";
  c.duration_ms = 1;
  c.flagged = c.exit_code = c.signal = c.output_bytes = c.processes = c.files_mutated = c.path =
      c.full_output_path = c.timed_out = c.nested_git_removed = json(1);
  c.files_changed_truncated = true;
  EXPECT_EQ(keys(c.to_json()), declared<Call>().second);
  Exec e;
  e.parent_exec = e.flagged = e.interpreter = e.sha256 = e.reason = "x";
  e.rule = e.user = json::object();
  e.runs = e.loads = std::vector<std::string>{"y"};
  e.unnamed = true;
  EXPECT_EQ(keys(e.to_json()), declared<Exec>().second);
  EXPECT_EQ(keys(ExecEnd{"c1", "c1.1", 0, std::nullopt, 3, "note"}.to_json()),
            declared<ExecEnd>().second);
  McpServer ms;
  ms.tools = std::vector<std::string>{"mcp__s__t"};
  ms.env = std::vector<std::string>{"GITHUB_TOKEN"};
  ms.limits = json::object();
  ms.exit = json::object();
  ms.error = "x";
  EXPECT_EQ(keys(ms.to_json()), declared<McpServer>().second);
  McpCall mc;
  mc.args_sha256 = mc.error = mc.cancelled = "x";
  EXPECT_EQ(keys(mc.to_json()), declared<McpCall>().second);
}

// The records moatd wrote inline before they were typed, field for field: the bytes of the
// log (canonical JSON, keys sorted) are the same.
TEST(AuditRecords, ADecisionAndAnExecEncodeAsTheInlineRecordsDid) {
  Decision d{"d1", "bash", "c1", {{"tool", "bash"}}, policy::Verdict::kAllow,
             {{"id", "person"}}, {"a", "b"}, policy::DecidedBy::kUser, true, "sha256:x",
             std::nullopt};
  EXPECT_EQ(d.to_json(), json::parse(R"({"decision_id":"d1","tool":"bash","call_id":"c1",
      "input":{"tool":"bash"},"result":"allow","deciding_rule":{"id":"person"},
      "matched":["a","b"],"decided_by":"user","channel":"console","interactive":true,
      "mode":"ask","policy_hash":"sha256:x"})"));
  d.decided_by = policy::DecidedBy::kDefault;
  d.interactive = false;
  EXPECT_EQ(d.to_json()["channel"], "policy");
  EXPECT_EQ(d.to_json()["mode"], "auto");
  Exec e;
  e.call_id = "c1";
  e.decision_id = "d1";
  e.exec_id = "c1.1";
  e.pid = 42;
  e.argv = {"sh"};
  e.path = e.exe = "/bin/sh";
  e.cwd = "/w";
  e.memory = ExecMemory::kChanged;
  e.decided_by = policy::DecidedBy::kMoat;
  EXPECT_EQ(e.to_json(), json::parse(R"({"call_id":"c1","decision_id":"d1","exec_id":"c1.1",
      "parent_exec":null,"pid":42,"argv":["sh"],"path":"/bin/sh","exe":"/bin/sh","cwd":"/w",
      "memory":"changed","result":"deny","decided_by":"moat","rule":null})"));
  EXPECT_EQ(ExecEnd({"c1", "c1.2", std::nullopt, 9, 41, std::nullopt}).to_json(),
            json::parse(R"({"call_id":"c1","exec_id":"c1.2","exit":{"code":null,"signal":9},
                "duration_ms":41})"));
}

TEST(DecidedBy, EachNameReadsBackAsItsValueAndNoOtherNameDoes) {
  for (std::size_t i = 0; i < std::size(policy::kDecidedByNames); ++i) {
    const auto by = static_cast<policy::DecidedBy>(i);
    EXPECT_EQ(policy::decided_by_from_name(policy::decided_by_name(by)), by);
  }
  EXPECT_EQ(policy::decided_by_from_name("person"), std::nullopt);
  EXPECT_EQ(policy::decided_by_from_name(""), std::nullopt);
}

TEST(ExecMemory, EachValueHasTheNameTheExecRecordWrites) {
  EXPECT_EQ(exec_memory_name(ExecMemory::kExclusive), "exclusive");
  EXPECT_EQ(exec_memory_name(ExecMemory::kShared), "shared");
  EXPECT_EQ(exec_memory_name(ExecMemory::kChanged), "changed");
}

// An MCP call's arguments: whole when short; cut on a UTF-8 boundary at kMaxArgsBytes and
// hashed (the whole text's sha256) when longer.
TEST(AuditRecords, AnMcpCallsLongArgumentsAreCutAndHashed) {
  McpCall shortc;
  shortc.set_args({{"path", "a.txt"}});
  EXPECT_EQ(shortc.args, R"({"path":"a.txt"})");
  EXPECT_EQ(shortc.args_bytes, shortc.args.size());
  EXPECT_FALSE(shortc.args_sha256);
  McpCall longc;
  const json big = {{"text", std::string(McpCall::kMaxArgsBytes, 'x') + "\u00e9\u00e9"}};
  const std::string whole = big.dump();
  longc.set_args(big);
  EXPECT_EQ(longc.args_bytes, whole.size());
  EXPECT_LE(longc.args.size(), McpCall::kMaxArgsBytes);
  EXPECT_EQ(whole.rfind(longc.args, 0), 0u) << "a prefix of the whole";
  ASSERT_TRUE(longc.args_sha256);
  EXPECT_EQ(*longc.args_sha256, "sha256:" + sessions::sha256_hex(whole));
}

}  // namespace
}  // namespace moat::sandbox::audit

// tests/unit/sandbox/call_gate_test.cc: decide -> ask -> write-ahead audit -> run, with a fake
// audit log and a fake sandbox: what runs, what is refused, and what the log holds first.
#include "sandbox/call_gate.h"

#include <gtest/gtest.h>

#include "sandbox/session_runner.h"
#include "tests/unit/sandbox/supervisor_fakes.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;
using testing::AuditRecords;
using testing::FakeAuditLog;
using testing::FakeSession;
using testing::SandboxTouches;
using testing::TempWorld;

class CallGateTest : public ::testing::Test {
 protected:
  CallGateTest() : asks_(/*headless=*/true) {
    audit_ = std::make_shared<AuditRecords>();
    touches_ = std::make_shared<SandboxTouches>();
    touches_->audit = audit_;
    session_.headless = true;
    session_.workspace = world_.workspace;
    session_.policy = world_.load_policy();
    session_.audit = std::make_unique<FakeAuditLog>(audit_);
    session_.session = std::make_unique<FakeSession>(touches_);
    session_.runner = std::make_unique<SessionRunner>(*session_.session);
    session_.granted = {"read", "bash", "edit", "write", "grep", "find", "ls"};
  }

  tools::ToolResult call(const std::string& tool, json args) {
    CallGate gate(session_, asks_, mutations_);
    return gate.run(GateCall{"call-1", tool, std::move(args), cancel_, nullptr, nullptr});
  }

  static std::string text_of(const tools::ToolResult& r) {
    return r.content.empty() ? "" : r.content[0].value("text", "");
  }

  TempWorld world_;
  SessionState session_;
  AskBroker asks_;
  tools::MutationQueue mutations_;
  std::shared_ptr<CallCancel> cancel_ = std::make_shared<CallCancel>();
  std::shared_ptr<AuditRecords> audit_;
  std::shared_ptr<SandboxTouches> touches_;
};

TEST_F(CallGateTest, ADecisionThatCannotBeAuditedDoesNotRun) {
  audit_->failing_types = {"decision"};
  // read is allowed by the default policy: only the audit log stands in its way.
  auto r = call("read", {{"path", "notes.txt"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(text_of(r).find("refused: the audit log could not be written"), std::string::npos)
      << text_of(r);
  EXPECT_EQ(touches_->calls, 0);
  EXPECT_TRUE(audit_->of_type("call").empty());
}

// The decision of an allowed call is written, then synced while the sandbox gets ready: a sync
// that fails refuses the call before anything reaches the sandbox, a command (bash, whose
// worker waits for it) or a file tool (read, run in a handler worker).
TEST_F(CallGateTest, ADecisionWhoseSyncFailsRunsNothing) {
  audit_->failing_types = {"sync"};
  for (const auto& [tool, args] : std::vector<std::pair<std::string, json>>{
           {"bash", {{"command", "true"}}}, {"read", {{"path", "notes.txt"}}}}) {
    auto r = call(tool, args);
    EXPECT_TRUE(r.is_error) << tool;
    EXPECT_NE(text_of(r).find("refused: the audit log could not be written"), std::string::npos)
        << tool << ": " << text_of(r);
    EXPECT_EQ(touches_->calls, 0) << tool;
  }
  EXPECT_EQ(audit_->of_type("decision").size(), 2u);
}

TEST_F(CallGateTest, AnUnknownToolIsAuditedAsARefusal) {
  auto r = call("launch_missiles", json::object());
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(text_of(r).find("unknown or refused tool"), std::string::npos) << text_of(r);
  EXPECT_EQ(touches_->calls, 0);
  auto decisions = audit_->of_type("decision");
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0]["result"], "deny");
  EXPECT_EQ(decisions[0]["tool"], "launch_missiles");
  EXPECT_EQ(decisions[0]["call_id"], "call-1");
  EXPECT_TRUE(audit_->of_type("call").empty());
}

TEST_F(CallGateTest, AnAllowedCallRunsOnlyAfterItsDecisionIsWritten) {
  auto r = call("read", {{"path", "notes.txt"}});
  EXPECT_TRUE(r.is_error) << "the fake sandbox runs no handler";
  EXPECT_GE(touches_->calls, 1);
  EXPECT_GE(touches_->records_at_first_call, 1u) << "the decision was not on record first";
  auto decisions = audit_->of_type("decision");
  ASSERT_FALSE(decisions.empty());
  EXPECT_EQ(decisions[0]["result"], "allow");
  auto execs = audit_->of_type("call");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["decision_id"], decisions[0]["decision_id"]);
}

TEST_F(CallGateTest, ACommandLineIsJudgedAndRecordedAsTheCommand) {
  // The default policy asks before rm -rf; headless, ask is deny: nothing runs.
  auto r = call("bash", {{"command", "rm -rf /"}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(text_of(r).find("refused by policy"), std::string::npos) << text_of(r);
  EXPECT_EQ(touches_->calls, 0);
  auto decisions = audit_->of_type("decision");
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0]["input"]["command"], "rm -rf /");
  EXPECT_EQ(decisions[0]["input"]["cwd"], world_.workspace);
  EXPECT_NE(decisions[0]["result"], "allow");
}

TEST_F(CallGateTest, AnArgumentHoldingANulIsRefusedBeforeThePolicySeesIt) {
  auto r = call("read", {{"path", std::string("server.pem\0", 11)}});
  EXPECT_TRUE(r.is_error);
  EXPECT_NE(text_of(r).find("holds a NUL byte"), std::string::npos) << text_of(r);
  EXPECT_EQ(touches_->calls, 0);
  EXPECT_EQ(audit_->size(), 0u);
}

}  // namespace
}  // namespace moat::sandbox

// tests/unit/sandbox/supervisor_test.cc: the hello's checklist over a socketpair, with the
// policy loader, the audit opener and the session factory replaced by fakes: no root, no
// namespaces. A failed step names itself in the error frame; a good hello is welcomed.
#include "sandbox/supervisor.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "policy/layer.h"
#include "policy/policy.h"
#include "sandbox/protocol.h"
#include "tools/registry.h"
#include "tests/unit/sandbox/supervisor_fakes.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;
using testing::AuditRecords;
using testing::FakeAuditLog;
using testing::FakeSession;
using testing::SandboxTouches;
using testing::TempWorld;

class SupervisorTest : public ::testing::Test {
 protected:
  SupervisorTest() {
    audit_ = std::make_shared<AuditRecords>();
    touches_ = std::make_shared<SandboxTouches>();
    options_.policy = world_.policy;
    options_.audit_dir = world_.root + "/audit";
    options_.sessions_dir = world_.root + "/sessions";
    deps_.open_audit = [this](const SupervisorOptions&, const std::string&, const std::string&,
                              uid_t) -> Result<OpenedAudit> {
      return OpenedAudit{std::make_unique<FakeAuditLog>(audit_), "off: a fake"};
    };
    deps_.create_session = [this](const SessionConfig&) -> Result<std::unique_ptr<Session>> {
      return std::unique_ptr<Session>(std::make_unique<FakeSession>(touches_));
    };
  }

  // Serves one connection on a socketpair, sends `hello` and returns moatd's first frame.
  json first_reply_to(const json& hello) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    UniqueFd client(sv[1]);
    Supervisor supervisor(options_, deps_);
    std::thread server([&] { supervisor.serve_connection(UniqueFd(sv[0])); });
    EXPECT_TRUE(send_frame(client.get(), hello).has_value());
    json reply = read_frame(client.get());
    (void)send_frame(client.get(), {{"type", "bye"}});
    ::shutdown(client.get(), SHUT_WR);
    server.join();
    return reply;
  }

  static json read_frame(int fd) {
    FrameDecoder decoder;
    char buf[65536];
    for (;;) {
      auto frame = decoder.next();
      if (!frame) return json{{"decode_error", frame.error().message()}};
      if (frame->has_value()) return **frame;
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) return json{{"closed", true}};
      decoder.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }

  json hello() const {
    return {{"type", "hello"},
            {"version", kProtocolVersion},
            {"workspace", world_.workspace},
            {"headless", true}};
  }

  TempWorld world_;
  SupervisorOptions options_;
  SupervisorDeps deps_;
  std::shared_ptr<AuditRecords> audit_;
  std::shared_ptr<SandboxTouches> touches_;
};

TEST_F(SupervisorTest, AHelloWithEveryStepPassingIsWelcomedAndRecorded) {
  json reply = first_reply_to(hello());
  ASSERT_EQ(reply.value("type", ""), "welcome") << reply.dump();
  EXPECT_EQ(reply["workspace"], world_.workspace);
  EXPECT_FALSE(reply["tools"].empty());
  auto starts = audit_->of_type("session.start");
  ASSERT_EQ(starts.size(), 1u);
  EXPECT_EQ(starts[0]["audit_signing"], "off: a fake");
  EXPECT_EQ(starts[0]["sandbox"]["uid_map"], "fake");
  EXPECT_EQ(audit_->of_type("session.end").size(), 1u);
}

TEST_F(SupervisorTest, AnUnsupportedVersionIsAProtocolError) {
  json h = hello();
  h["version"] = kProtocolVersion + 1;
  json reply = first_reply_to(h);
  EXPECT_EQ(reply.value("type", ""), "error") << reply.dump();
  EXPECT_EQ(reply.value("code", ""), "protocol");
  EXPECT_NE(reply.value("message", "").find("protocol version"), std::string::npos);
}

TEST_F(SupervisorTest, AMissingWorkspaceIsAWorkspaceError) {
  json h = hello();
  h["workspace"] = world_.root + "/no-such-dir";
  json reply = first_reply_to(h);
  EXPECT_EQ(reply.value("code", ""), "workspace") << reply.dump();
  EXPECT_EQ(reply.value("message", "").rfind("workspace ", 0), 0u) << reply.dump();
}

TEST_F(SupervisorTest, APolicyThatDoesNotLoadNamesThePolicyStep) {
  deps_.load_policy = [](const policy::LoadOptions&) -> Result<std::unique_ptr<policy::Policy>> {
    return fail(std::string("layer x.toml:3: unknown key 'allwo'"));
  };
  json reply = first_reply_to(hello());
  EXPECT_EQ(reply.value("code", ""), "policy") << reply.dump();
  EXPECT_EQ(reply.value("message", ""), "policy: layer x.toml:3: unknown key 'allwo'");
  EXPECT_EQ(audit_->size(), 0u) << "no log is opened before the policy that governs it";
}

TEST_F(SupervisorTest, ASandboxThatCannotBeBuiltNamesTheSandboxStepAndIsRecordedAsRefused) {
  deps_.create_session = [](const SessionConfig&) -> Result<std::unique_ptr<Session>> {
    return fail(Error::from_errno("unshare", EPERM, "CLONE_NEWUSER"));
  };
  json reply = first_reply_to(hello());
  EXPECT_EQ(reply.value("code", ""), "sandbox") << reply.dump();
  EXPECT_EQ(reply.value("message", "").rfind("sandbox: unshare", 0), 0u) << reply.dump();
  auto refused = audit_->of_type("session.refused");
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].value("reason", "").find("unshare"), std::string::npos);
  EXPECT_TRUE(audit_->of_type("session.start").empty());
  EXPECT_EQ(touches_->calls, 0);
}

TEST_F(SupervisorTest, AnAuditLogThatCannotRecordTheStartNamesTheAuditStep) {
  // The policy does not require an audit log, so the hello goes on past the open; but no
  // session starts without its session.start on record.
  deps_.open_audit = [](const SupervisorOptions&, const std::string&, const std::string&,
                        uid_t) -> Result<OpenedAudit> {
    return fail(Error::from_errno("open", EACCES, "/var/log/moat"));
  };
  json reply = first_reply_to(hello());
  EXPECT_EQ(reply.value("code", ""), "audit") << reply.dump();
  EXPECT_EQ(reply.value("message", "").rfind("audit log: ", 0), 0u) << reply.dump();
}

// The session's limits are the policy's ceilings, every one: Limits' own defaults once said
// 300 s of CPU while the policy's said 600 s.
TEST_F(SupervisorTest, ASessionFromTheDefaultPolicyGetsThePolicysCeilings) {
  std::optional<Limits> got;
  deps_.create_session = [&](const SessionConfig& c) -> Result<std::unique_ptr<Session>> {
    got = c.limits;
    return std::unique_ptr<Session>(std::make_unique<FakeSession>(touches_));
  };
  ASSERT_EQ(first_reply_to(hello()).value("type", ""), "welcome");
  ASSERT_TRUE(got.has_value());
  auto policy = world_.load_policy();
  ASSERT_TRUE(policy);
  const policy::ResourceCeilings want = policy->resources();
  EXPECT_EQ(got->cpu_time_s, 600u);
  EXPECT_EQ(got->wall_time_s, static_cast<double>(want.wall_time_s));
  EXPECT_EQ(got->cpu_time_s, static_cast<std::uint64_t>(want.cpu_time_s));
  EXPECT_EQ(got->memory_bytes, static_cast<std::uint64_t>(want.memory_bytes));
  EXPECT_EQ(got->pids, static_cast<std::uint64_t>(want.pids));
  EXPECT_EQ(got->output_bytes, static_cast<std::uint64_t>(want.output_bytes));
  EXPECT_EQ(got->file_size, static_cast<std::uint64_t>(want.file_size));
  EXPECT_EQ(got->open_files, static_cast<std::uint64_t>(want.open_files));
  // A session built without a policy starts from the same values.
  const Limits unset;
  EXPECT_EQ(unset.wall_time_s, got->wall_time_s);
  EXPECT_EQ(unset.cpu_time_s, got->cpu_time_s);
  EXPECT_EQ(unset.memory_bytes, got->memory_bytes);
  EXPECT_EQ(unset.pids, got->pids);
  EXPECT_EQ(unset.output_bytes, got->output_bytes);
  EXPECT_EQ(unset.file_size, got->file_size);
  EXPECT_EQ(unset.open_files, got->open_files);
}

TEST_F(SupervisorTest, EveryCeilingALayerNarrowsReachesTheSession) {
  std::optional<Limits> got;
  deps_.create_session = [&](const SessionConfig& c) -> Result<std::unique_ptr<Session>> {
    got = c.limits;
    return std::unique_ptr<Session>(std::make_unique<FakeSession>(touches_));
  };
  std::filesystem::create_directories(options_.policy.user_dir);
  std::ofstream(options_.policy.user_dir + "/10.toml")
      << "schema = 1\nresources = { wall_time = 7, cpu_time = 11, memory = \"13MiB\", pids = 17,"
         " output = \"19KiB\", file_size = \"23KiB\", open_files = 29 }\n";
  ASSERT_EQ(first_reply_to(hello()).value("type", ""), "welcome");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->wall_time_s, 7.0);
  EXPECT_EQ(got->cpu_time_s, 11u);
  EXPECT_EQ(got->memory_bytes, 13u << 20);
  EXPECT_EQ(got->pids, 17u);
  EXPECT_EQ(got->output_bytes, 19u << 10);
  EXPECT_EQ(got->file_size, 23u << 10);
  EXPECT_EQ(got->open_files, 29u);
}

// A moatd builds the tools' specs once per limits and keeps them (hello_steps.cc): each hello's
// welcome still states its own policy's limits, whichever hello came before it.
TEST_F(SupervisorTest, EachHellosToolSpecsStateItsOwnPolicysLimits) {
  auto specs_json = [](const tools::ToolLimits& limits) {
    json out = json::array();
    for (const tools::ToolSpec& t : tools::all_tools(limits)) out.push_back(t.to_json());
    return out;
  };
  const json first = first_reply_to(hello());
  ASSERT_EQ(first.value("type", ""), "welcome") << first.dump();
  std::filesystem::create_directories(options_.policy.user_dir);
  std::ofstream(options_.policy.user_dir + "/10.toml")
      << "schema = 1\nresources = { wall_time = 7, output = \"19KiB\" }\n";
  const json narrowed = first_reply_to(hello());
  ASSERT_EQ(narrowed.value("type", ""), "welcome") << narrowed.dump();
  std::filesystem::remove(options_.policy.user_dir + "/10.toml");
  const json again = first_reply_to(hello());
  ASSERT_EQ(again.value("type", ""), "welcome") << again.dump();
  EXPECT_EQ(narrowed["tools"], specs_json(tools::ToolLimits::for_session(7, 19u << 10)));
  EXPECT_NE(narrowed["tools"], first["tools"]);
  EXPECT_EQ(again["tools"], first["tools"]);
}

TEST_F(SupervisorTest, TheAuditDirectoryIsThePolicysAuditDir) {
  std::string seen;
  deps_.load_policy = [&seen](const policy::LoadOptions& lo) {
    seen = lo.path_vars.count("AUDIT_DIR") ? lo.path_vars.at("AUDIT_DIR") : "";
    return policy::Policy::load(lo);
  };
  options_.policy.path_vars.clear();
  json reply = first_reply_to(hello());
  ASSERT_EQ(reply.value("type", ""), "welcome") << reply.dump();
  EXPECT_EQ(seen, options_.audit_dir);
}

// A trusted project whose only declaration file is .mcp.json: moatd checks that workspace's
// own files against the pin, and does not look for a .moat/policy.toml that was never there
// (the pre-fix moatd opened it, got ENOENT and refused the session).
TEST_F(SupervisorTest, ATrustedWorkspaceWhoseOnlyProjectFileIsMcpJsonIsWelcomed) {
  std::ofstream(world_.workspace + "/.mcp.json")
      << R"({"mcpServers": {"files": {"command": "node", "args": ["server.js"]}}})";
  auto trust = policy::project_trust(world_.workspace, world_.policy.trust_dir);
  ASSERT_TRUE(trust) << trust.error().message();
  ASSERT_TRUE(policy::pin_project(world_.workspace, world_.policy.trust_dir, trust->sha256));
  json reply = first_reply_to(hello());
  EXPECT_EQ(reply.value("type", ""), "welcome") << reply.dump();
}

// The loader read the project's files by path; here .mcp.json changes right after that read.
// The session would run with text nobody pinned beside it: moatd re-reads every project file
// beneath the workspace fd, recomputes the pin's hash and refuses (the pre-fix moatd compared
// .moat/policy.toml only, and welcomed this hello).
TEST_F(SupervisorTest, AnMcpJsonChangedBetweenTheLoadAndTheHelloIsRefused) {
  std::filesystem::create_directories(world_.workspace + "/.moat");
  std::ofstream(world_.workspace + "/.moat/policy.toml") << "schema = 1\n";
  std::ofstream(world_.workspace + "/.mcp.json") << R"({"mcpServers": {}})";
  auto trust = policy::project_trust(world_.workspace, world_.policy.trust_dir);
  ASSERT_TRUE(trust) << trust.error().message();
  ASSERT_TRUE(policy::pin_project(world_.workspace, world_.policy.trust_dir, trust->sha256));
  const std::string mcp_json = world_.workspace + "/.mcp.json";
  deps_.load_policy = [mcp_json](const policy::LoadOptions& lo) {
    auto loaded = policy::Policy::load(lo);
    std::ofstream(mcp_json, std::ios::trunc)
        << R"({"mcpServers": {"x": {"command": "sh", "args": ["-c", "id"]}}})";
    return loaded;
  };
  json reply = first_reply_to(hello());
  EXPECT_EQ(reply.value("type", ""), "error") << reply.dump();
  EXPECT_EQ(reply.value("code", ""), "policy") << reply.dump();
  EXPECT_NE(reply.value("message", "").find("not the workspace's own"), std::string::npos)
      << reply.dump();
}

}  // namespace
}  // namespace moat::sandbox

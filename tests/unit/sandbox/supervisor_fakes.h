// tests/unit/sandbox/supervisor_fakes.h: stand-ins for what moatd builds a session from (the
// audit log, the sandbox session, the runner) and a hermetic policy, so the supervisor's
// orchestration runs on a machine without namespaces or root.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "sandbox/session.h"
#include "sessions/audit.h"

namespace moat::sandbox::testing {

// What the fake log was asked to write, shared with the test after the log is handed over.
struct AuditRecords {
  std::mutex mu;
  std::vector<std::pair<std::string, nlohmann::json>> records;  // (type, fields)
  std::set<std::string> failing_types;  // appends of these types fail (EIO); "sync": make_durable

  std::vector<nlohmann::json> of_type(const std::string& type) {
    std::lock_guard<std::mutex> lock(mu);
    std::vector<nlohmann::json> out;
    for (const auto& [t, f] : records)
      if (t == type) out.push_back(f);
    return out;
  }
  std::size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return records.size();
  }
};

class FakeAuditLog final : public sessions::AuditLog {
 public:
  explicit FakeAuditLog(std::shared_ptr<AuditRecords> records) : records_(std::move(records)) {}
  Result<void> append(const std::string& type, nlohmann::json fields, Sync) override {
    std::lock_guard<std::mutex> lock(records_->mu);
    if (records_->failing_types.count(type) != 0)
      return fail(Error::from_errno("write", EIO, "fake audit log"));
    records_->records.emplace_back(type, std::move(fields));
    return {};
  }
  void set_admit(Admit) override {}  // the fake writes no bytes to count
  Result<uint64_t> append_pending(const std::string& type, nlohmann::json fields) override {
    MOAT_TRY(append(type, std::move(fields), Sync::kWithNext));
    return last_seq();
  }
  Result<void> make_durable(uint64_t) override {
    std::lock_guard<std::mutex> lock(records_->mu);
    if (records_->failing_types.count("sync") != 0)
      return fail(Error::from_errno("fdatasync", EIO, "fake audit log"));
    return {};
  }
  std::string path() const override { return "/fake/audit.jsonl"; }
  uint64_t last_seq() const override {
    std::lock_guard<std::mutex> lock(records_->mu);
    return records_->records.size();
  }
  std::string head() const override { return ""; }

 private:
  std::shared_ptr<AuditRecords> records_;
};

// Counts what reaches the sandbox, and how many records the log held when it did: a call
// that runs must find its decision already written.
struct SandboxTouches {
  std::mutex mu;
  int calls = 0;
  std::size_t records_at_first_call = 0;
  std::shared_ptr<AuditRecords> audit;

  void touch() {
    std::lock_guard<std::mutex> lock(mu);
    if (calls++ == 0 && audit) records_at_first_call = audit->size();
  }
};

class FakeSession final : public Session {
 public:
  explicit FakeSession(std::shared_ptr<SandboxTouches> touches) : touches_(std::move(touches)) {}
  Result<tools::ExecStatus> exec(const ExecSpec& spec, const std::function<void(std::string_view)>&,
                                 StopFlags) override {
    // As the real session: nothing of the command runs before its decision is durable.
    if (spec.durable) MOAT_TRY(spec.durable());
    touches_->touch();
    tools::ExecStatus out;
    out.exit_code = 0;
    return out;
  }
  Result<std::string> run_handler(std::string_view) override {
    touches_->touch();
    return fail(std::string("the fake sandbox runs no handler"));
  }
  Result<UniqueFd> create_file(const std::string&) override {
    touches_->touch();
    return fail(std::string("the fake sandbox creates no file"));
  }
  const SessionDescription& describe() const override { return describe_; }
  pid_t init_pid() const override { return -1; }

 private:
  std::shared_ptr<SandboxTouches> touches_;
  SessionDescription describe_ = [] {
    SessionDescription d;
    d.uid_map = "fake";
    return d;
  }();
};

// A temporary directory holding a workspace, with the built-in default policy's load options
// pointed at it (no system layer, no user layer, no trust pins of the host's).
struct TempWorld {
  TempWorld() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "moat-supervisor-XXXXXX").string();
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
    root = std::filesystem::canonical(tmpl).string();
    workspace = root + "/ws";
    std::filesystem::create_directories(workspace);
    policy.system_dir = root + "/no-system";
    policy.user_dir = root + "/no-user";
    policy.trust_dir = root + "/trust";
    policy.home = root + "/home";
    policy.workspace = workspace;
    policy.path_vars = {{"AUDIT_DIR", root + "/audit"}};
  }
  ~TempWorld() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  std::unique_ptr<policy::Policy> load_policy() {
    auto p = policy::Policy::load(policy);
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message());
    return p ? std::move(*p) : nullptr;
  }

  std::string root, workspace;
  policy::LoadOptions policy;
};

}  // namespace moat::sandbox::testing

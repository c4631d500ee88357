// sandbox/auditing_runner.h: the audit's own view of a call's processes: wraps the session's
// runner for one call and records every process it executes from what moatd observed.
#pragma once

#include <nlohmann/json.hpp>

#include <mutex>

#include "tools/runner.h"

namespace moat::sandbox {

// Every process the call executes is recorded (argv, cwd, start, pid, exit, signal, the limit
// that killed it, output bytes and their SHA-256) from what moatd itself observed, not from
// what the tool reports. Thread-safe: a tool may run processes from several threads.
class AuditingRunner final : public tools::SandboxRunner {
 public:
  explicit AuditingRunner(tools::SandboxRunner& inner) : inner_(inner) {}

  Result<tools::ExecStatus> exec(const std::vector<std::string>& argv, const std::string& cwd,
                                 double timeout_s,
                                 const std::function<void(std::string_view)>& on_output,
                                 StopFlags stop) override;
  Result<std::string> run_handler(std::string_view request) override {
    return inner_.run_handler(request);
  }
  Result<UniqueFd> create_file(const std::string& sandbox_path) override {
    return inner_.create_file(sandbox_path);
  }
  // The records of the processes run so far, in the order they ended (the exec record's
  // "processes").
  nlohmann::json processes() const;

 private:
  tools::SandboxRunner& inner_;
  mutable std::mutex mu_;
  nlohmann::json processes_ = nlohmann::json::array();
};

// argv for an audit record: a word longer than any exec accepts is cut, with its length.
nlohmann::json argv_for_audit(const std::vector<std::string>& argv);

}  // namespace moat::sandbox

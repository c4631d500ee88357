// sandbox/session_runner.h: adapts a sandbox Session to the tools' SandboxRunner.
#pragma once

#include <utility>

#include "sandbox/session.h"
#include "tools/runner.h"

namespace moat::sandbox {

class SessionRunner final : public tools::SandboxRunner {
 public:
  // With an observer, every program a command starts is judged and recorded through it.
  // With `durable`, nothing reaches the sandbox before it has returned (ExecSpec::durable:
  // a command's worker is started meanwhile); an error refuses each action.
  explicit SessionRunner(Session& session, ExecObserver* observer = nullptr,
                         DurableFn durable = nullptr)
      : session_(session), observer_(observer), durable_(std::move(durable)) {}

  Result<tools::ExecStatus> exec(const std::vector<std::string>& argv, const std::string& cwd,
                                 double timeout_s,
                                 const std::function<void(std::string_view)>& on_output,
                                 StopFlags stop) override {
    ExecSpec spec;
    spec.argv = argv;
    spec.cwd = cwd;
    spec.timeout_s = timeout_s;
    spec.observer = observer_;
    spec.durable = durable_;
    return session_.exec(spec, on_output, stop);
  }
  Result<std::string> run_handler(std::string_view request) override {
    if (durable_) MOAT_TRY(durable_());
    return session_.run_handler(request);
  }
  Result<UniqueFd> create_file(const std::string& sandbox_path) override {
    if (durable_) MOAT_TRY(durable_());
    return session_.create_file(sandbox_path);
  }

 private:
  Session& session_;
  ExecObserver* observer_;
  DurableFn durable_;
};

}  // namespace moat::sandbox

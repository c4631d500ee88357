// tests/unit/tools/local_runner.h: a small real SandboxRunner for unit tests: commands run
// with fork/exec on the host (own process group, stdin /dev/null, output interleaved), the
// handler runs in-process. No namespaces: the contract tests run against the real sandbox
// in tests/integration/tools.
#pragma once

#include "tools/runner.h"

namespace moat::tools::testing {

class LocalRunner final : public SandboxRunner {
 public:
  Result<ExecStatus> exec(const std::vector<std::string>& argv, const std::string& cwd,
                          double timeout_s, const std::function<void(std::string_view)>& on_output,
                          StopFlags stop) override;
  Result<std::string> run_handler(std::string_view request) override;
  Result<UniqueFd> create_file(const std::string& sandbox_path) override;

  int handler_calls() const { return handler_calls_.load(); }

 private:
  std::atomic<int> handler_calls_{0};
};

}  // namespace moat::tools::testing

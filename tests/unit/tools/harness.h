// tests/unit/tools/harness.h: where the tool contract tests run. The unit build links a
// harness over LocalRunner; the integration build links one over the real sandbox
// session, so the same contract tests cover both.
#pragma once

#include <memory>
#include <string>

#include "tools/runner.h"

namespace moat::tools::testing {

class Harness {
 public:
  virtual ~Harness() = default;
  virtual SandboxRunner* runner() = 0;
  // Non-empty: the contract tests skip with this reason (no namespaces on this host).
  virtual std::string skip_reason() const { return ""; }
  // Non-empty: the harness should have worked on this host and did not; the test fails.
  virtual std::string setup_error() const { return ""; }
  // Whether commands see the host's view (rg/fdfind availability is then the host's).
  virtual bool is_sandboxed() const = 0;
};

// A scratch directory the harness can use as a workspace (host path == sandbox path).
std::string make_workspace_dir();
std::unique_ptr<Harness> make_harness(const std::string& workspace);

}  // namespace moat::tools::testing

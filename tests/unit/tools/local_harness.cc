// tests/unit/tools/local_harness.cc: the contract tests over LocalRunner.
#include <cstdlib>
#include <string>

#include "tests/unit/tools/harness.h"
#include "tests/unit/tools/local_runner.h"

namespace moat::tools::testing {
namespace {

class LocalHarness final : public Harness {
 public:
  SandboxRunner* runner() override { return &runner_; }
  bool is_sandboxed() const override { return false; }

 private:
  LocalRunner runner_;
};

}  // namespace

std::string make_workspace_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/moat-tools-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

std::unique_ptr<Harness> make_harness(const std::string&) {
  return std::make_unique<LocalHarness>();
}

}  // namespace moat::tools::testing

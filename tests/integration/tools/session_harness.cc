// tests/integration/tools/session_harness.cc: the tool contract tests against the real
// sandbox: a sandbox::Session (namespaces, seccomp, dropped capabilities) adapted by
// SessionRunner, with tools::handle_in_sandbox as the worker handler.
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "sandbox/session.h"
#include "sandbox/session_runner.h"
#include "tests/unit/tools/harness.h"
#include "tools/registry.h"

namespace moat::tools::testing {
namespace {

// Whether this process could create a user namespace (the sandbox needs one when not root).
bool can_create_user_namespace() {
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) ::_exit(::unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

class SessionHarness final : public Harness {
 public:
  explicit SessionHarness(const std::string& workspace) {
    if (::geteuid() != 0 && !can_create_user_namespace()) {
      skip_ = "needs root or unprivileged user namespaces, and this host allows neither";
      return;
    }
    sandbox::SessionConfig config;
    config.workspace = workspace;
    config.handler = &handle_in_sandbox;
    // The tools' contracts do not depend on these optional layers; the sandbox's own
    // tests cover them.
    config.allow_without = {"landlock", "cgroup", "idmap"};
    auto session = sandbox::Session::create(config);
    if (!session) {
      error_ = "Session::create: " + session.error().message();
      return;
    }
    session_ = std::move(*session);
    runner_ = std::make_unique<sandbox::SessionRunner>(*session_);
  }
  SandboxRunner* runner() override { return runner_.get(); }
  std::string skip_reason() const override { return skip_; }
  std::string setup_error() const override { return error_; }
  bool is_sandboxed() const override { return true; }

 private:
  std::string skip_;
  std::string error_;
  std::unique_ptr<sandbox::Session> session_;
  std::unique_ptr<sandbox::SessionRunner> runner_;
};

}  // namespace

// Under the build tree when it is writable: the sandbox gives /tmp its own tmpfs, and a
// workspace there would be hidden behind it.
std::string make_workspace_dir() {
  for (const char* var : {"MOAT_BUILD_ROOT", "TMPDIR"}) {
    const char* base = std::getenv(var);
    if (base == nullptr || *base == '\0' || ::access(base, W_OK) != 0) continue;
    std::string tmpl = std::string(base) + "/moat-tools-it-XXXXXX";
    if (::mkdtemp(tmpl.data()) != nullptr) return tmpl;
  }
  std::string tmpl = "/var/tmp/moat-tools-it-XXXXXX";
  if (::mkdtemp(tmpl.data()) != nullptr) return tmpl;
  return "";
}

std::unique_ptr<Harness> make_harness(const std::string& workspace) {
  return std::make_unique<SessionHarness>(workspace);
}

}  // namespace moat::tools::testing

// tests/compat/compat_projects.h: the compatibility suite's projects (issue 25 item 5), shared
// by tests/integration/e2e/compat_test.cc and tests/bench/compat_bench.cc. Each project is a
// folder of tests/compat whose README.md says how it is built and tested (its third line:
// "Build: `BUILD`, then test: `TEST`"), the one home of those commands.
#pragma once

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/integration/e2e/e2e_support.h"

namespace moat::compat {

// What a project needs besides its folder.
enum class Needs {
  kNothing,
  // node and npm on the host, and the registry of tests/compat/registry reached through
  // moatd's proxy (so a network rule in the person's layer, and sandbox exec's --network)
  kNpmRegistry,
};

struct Project {
  const char* dir;     // its folder under tests/compat
  const char* passed;  // what its tests print when they pass (they ran, not only exited 0)
  Needs needs;
  bool is_repository = false;  // its copy is made a git repository first, as a clone would be
};

inline constexpr Project kCWithMakeAndATestBinary = {"c-make", "c-make tests passed",
                                                     Needs::kNothing};
inline constexpr Project kCMakeWithCTest = {
    "cmake-ctest", "100% tests passed, 0 tests failed out of 2", Needs::kNothing};
inline constexpr Project kAutotoolsStyleConfigureAndMakeCheck = {
    "autotools-style", "autotools-style checks passed", Needs::kNothing};
inline constexpr Project kPythonVenvWithALocalWheelAndPytest = {"python-venv", "2 passed",
                                                                Needs::kNothing};
inline constexpr Project kNodeWithNpmCiFromALocalRegistry = {"node-npm", "node-npm tests passed",
                                                             Needs::kNpmRegistry};
inline constexpr Project kGitCommitWithAnAuthor = {
    "git-commit", "Compat Tester <compat@example.org>", Needs::kNothing, true};
// Named as the tests say them (CompatTest.CMakeWithCTestPassesUnderMoatSandboxExec).
inline constexpr const Project* kProjects[] = {&kCWithMakeAndATestBinary,
                                               &kCMakeWithCTest,
                                               &kAutotoolsStyleConfigureAndMakeCheck,
                                               &kPythonVenvWithALocalWheelAndPytest,
                                               &kNodeWithNpmCiFromALocalRegistry,
                                               &kGitCommitWithAnAuthor};

// The host address the registry listens on. Not 127.0.0.1: moat sets NO_PROXY=localhost,
// 127.0.0.1 in the sandbox (sandbox/net_proxy.cc), where 127.0.0.1 is the sandbox's own
// loopback; npm must reach the host's registry through moatd's proxy like any other host.
inline constexpr const char* kRegistryAddress = "127.0.0.2";

inline std::string compat_root() { return e2e::source_root() + "/tests/compat"; }

// The README's build and test commands (its first two `...` spans after "Build:").
struct Commands {
  std::string build, test;
};
inline Commands commands_of(const Project& p) {
  const std::string readme = e2e::read_file(compat_root() + "/" + p.dir + "/README.md");
  const std::size_t line = readme.find("\nBuild: ");
  std::vector<std::string> spans;
  for (std::size_t at = line; line != std::string::npos && spans.size() < 2;) {
    const std::size_t open = readme.find('`', at);
    const std::size_t close = open == std::string::npos ? open : readme.find('`', open + 1);
    if (close == std::string::npos) break;
    spans.push_back(readme.substr(open + 1, close - open - 1));
    at = close + 1;
  }
  if (spans.size() < 2) return {};
  return {spans[0], spans[1]};
}

// Why the host cannot run the project ("" when it can).
inline std::string missing_for(const Project& p) {
  if (p.needs == Needs::kNothing) return "";
  if (e2e::run({"sh", "-c", "command -v node && command -v npm"}).exit_code != 0)
    return "node and npm are not installed (Debian: nodejs and npm), so the node-npm project "
           "cannot be built";
  return "";
}

// Copies the project's folder to `dest` (created).
inline bool copy_project(const Project& p, const std::string& dest) {
  std::error_code ec;
  std::filesystem::create_directories(dest, ec);
  std::filesystem::copy(compat_root() + "/" + p.dir, dest, std::filesystem::copy_options::recursive,
                        ec);
  return !ec;
}

// Makes `dir` a git repository whose one commit holds what it holds now (run on the host,
// hooks off, a fixed identity).
inline bool make_repository(const std::string& dir) {
  const std::vector<std::string> identity = {
      "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t",
      "GIT_COMMITTER_EMAIL=t@example.invalid"};
  for (const std::vector<std::string>& args : {std::vector<std::string>{"init", "-q"},
                                               {"add", "-A"},
                                               {"commit", "-q", "-m", "The project as it ships"}}) {
    std::vector<std::string> argv = {
        "git", "-C", dir, "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false"};
    argv.insert(argv.end(), args.begin(), args.end());
    if (e2e::run(argv, identity).exit_code != 0) return false;
  }
  return true;
}

// tests/compat/registry/serve.py on the host: serves the greet-tool package and writes each
// project folder's .npmrc and package-lock.json for its port. Killed when destroyed.
class NpmRegistry {
 public:
  NpmRegistry(const std::string& log_dir, const std::vector<std::string>& projects) {
    log_ = log_dir + "/registry.log";
    std::vector<std::string> argv = {"python3", compat_root() + "/registry/serve.py",
                                     kRegistryAddress, compat_root() + "/registry/greet-tool"};
    argv.insert(argv.end(), projects.begin(), projects.end());
    pid_ = e2e::start(argv, log_);
    e2e::eventually([&] { return e2e::read_file(log_).find('\n') != std::string::npos; },
                    std::chrono::seconds(20));
    port_ = std::atoi(e2e::read_file(log_).c_str());
  }
  ~NpmRegistry() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    e2e::wait_exit(pid_, 10);
  }
  NpmRegistry(const NpmRegistry&) = delete;
  NpmRegistry& operator=(const NpmRegistry&) = delete;
  int port() const { return port_; }
  std::string log() const { return e2e::read_file(log_); }
  // A user layer that lets sessions reach it: the person's own configuration, as docs/batch.md
  // shows for a git host.
  std::string user_layer() const {
    return "schema = 1\n[[network]]\nid = \"user.compat-registry\"\ndecision = \"allow\"\n"
           "domains = [\"" +
           std::string(kRegistryAddress) + "\"]\nports = [" + std::to_string(port_) +
           "]\nreason = \"The npm registry of moat's compatibility suite.\"\n";
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace moat::compat

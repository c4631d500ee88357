// tests/integration/sandbox/test_util.h: a temporary workspace and a session over it, and
// running a command through the session with its output collected.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "sandbox/session.h"

namespace moat::sandbox::testing {

// A mkdtemp directory (never a fixed path: tests also run as uid 65534), removed at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "moat-sbx-XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    if (made != nullptr) path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string file(const std::string& rel) const { return path_ + "/" + rel; }
  void write(const std::string& rel, const std::string& text) const {
    std::filesystem::create_directories(std::filesystem::path(file(rel)).parent_path());
    std::ofstream(file(rel)) << text;
  }
  std::string read(const std::string& rel) const {
    std::ifstream in(file(rel));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string path_;
};

struct Ran {
  tools::ExecStatus outcome;
  std::string output;
};

inline Result<Ran> run(Session& s, std::vector<std::string> argv, double timeout_s = 20) {
  ExecSpec spec;
  spec.argv = std::move(argv);
  spec.timeout_s = timeout_s;
  Ran ran;
  MOAT_ASSIGN_OR_RETURN(ran.outcome,
                        s.exec(
                            spec, [&](std::string_view c) { ran.output.append(c); }, nullptr));
  return ran;
}

inline Result<Ran> sh(Session& s, const std::string& script, double timeout_s = 20) {
  return run(s, {"/bin/sh", "-c", script}, timeout_s);
}

// Creates a session, or explains why this host cannot (the caller skips).
inline Result<std::unique_ptr<Session>> make_session(SessionConfig config) {
  return Session::create(config);
}

#define MOAT_SESSION_OR_SKIP(var, config)                                             \
  auto var##_made = ::moat::sandbox::testing::make_session(config);                   \
  if (!var##_made && var##_made.error().context.find("user_ns") != std::string::npos) \
    GTEST_SKIP() << "no user namespaces here: " << var##_made.error().message();      \
  ASSERT_TRUE(var##_made.has_value()) << var##_made.error().message();                \
  auto& var = *var##_made.value()

}  // namespace moat::sandbox::testing

namespace moat::sandbox::testing {

// The moat_probe binary built next to this test (MOAT_BUILD_ROOT, else next to /proc/self/exe).
inline std::string probe_binary() {
  const char* root = std::getenv("MOAT_BUILD_ROOT");
  if (root != nullptr) return std::string(root) + "/tests/integration/sandbox/moat_probe";
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "moat_probe").string();
}

// Copies moat_probe into the workspace (the sandbox sees only the workspace and system dirs).
inline void install_probe(const TempDir& ws) {
  std::filesystem::copy_file(probe_binary(), ws.file("moat_probe"),
                             std::filesystem::copy_options::overwrite_existing);
}

inline std::string probe(Session& s, const TempDir& ws, std::vector<std::string> args) {
  args.insert(args.begin(), ws.file("moat_probe"));
  auto r = run(s, args);
  if (!r) return "error: " + r.error().message();
  std::string out = r->output;
  if (!out.empty() && out.back() == '\n') out.pop_back();
  if (r->outcome.signal != 0) out += "signal:" + std::to_string(r->outcome.signal);
  return out;
}

}  // namespace moat::sandbox::testing

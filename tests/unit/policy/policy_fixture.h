// tests/unit/policy/policy_fixture.h: a hermetic world for policy decisions: a temporary
// workspace, home, a fake system bin directory (so program resolution does not depend on
// what the host has installed) and no system layer.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "policy/policy.h"

namespace moat::policy::testing {

inline std::string make_temp_dir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "moat-policy-XXXXXX").string();
  char* dir = ::mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return std::filesystem::canonical(tmpl).string();
}

inline void write_file(const std::string& path, const std::string& text, mode_t mode = 0644) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::trunc) << text;
  ::chmod(path.c_str(), mode);
}

class PolicyWorld {
 public:
  PolicyWorld() {
    root = make_temp_dir();
    workspace = root + "/ws";
    // Lexical only, never created: the default policy lets the sandbox write /tmp, where
    // the test's own directories live, and home must not look writable.
    home = "/home/moat-policy-test-nobody";
    bin = root + "/sysbin";
    std::filesystem::create_directories(workspace + "/src");
    std::filesystem::create_directories(workspace + "/.git/hooks");
    std::filesystem::create_directories(bin);
    for (const char* p : kPrograms) add_program(p);
    // Like Debian: sh is dash, python3 is python3.11, awk is mawk.
    add_program("dash");
    std::filesystem::create_symlink("dash", bin + "/sh");
    add_program("python3.11");
    std::filesystem::create_symlink("python3.11", bin + "/python3");
    add_program("mawk");
    std::filesystem::create_symlink("mawk", bin + "/awk");
    write_file(workspace + "/run_tests.sh", "#!/bin/sh\nexit 0\n", 0755);
    write_file(workspace + "/src/a.py", "x = 1\n");
    write_file(workspace + "/src/b.py", "y = 2\n");
    options.system_dir = root + "/no-system";
    options.user_dir = root + "/user.d";
    options.trust_dir = root + "/trust";
    options.workspace = workspace;
    options.home = home;
    options.search_path = {bin};
    options.writable_roots = {workspace, root + "/tmp"};
    options.headless = false;
    options.path_vars = {{"AUDIT_DIR", root + "/audit"}};
  }
  ~PolicyWorld() {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }

  void add_program(const std::string& name) { write_file(bin + "/" + name, "#!/bin/true\n", 0755); }

  // An organisation (system) layer of one file; it replaces the built-in default. A system
  // layer must be owned by root (layer.cc check_root_owned): false when this process is not
  // root, and the caller skips.
  bool set_system_layer(const std::string& text) {
    if (::geteuid() != 0) return false;
    const std::string dir = root + "/system.d";
    write_file(dir + "/00-org.toml", text);
    ::chmod(dir.c_str(), 0755);
    options.system_dir = dir;
    return true;
  }

  std::unique_ptr<Policy> load() {
    auto p = Policy::load(options);
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message());
    return p ? std::move(*p) : nullptr;
  }

  static constexpr const char* kPrograms[] = {
      "ls",    "cat",      "grep",   "git",       "rm",       "bash",    "zsh",      "make",
      "npm",   "cargo",    "go",     "node",      "perl",     "ruby",    "curl",     "wget",
      "ssh",   "nc",       "sed",    "tee",       "cp",       "mv",      "mkdir",    "touch",
      "chmod", "chown",    "dd",     "mkfs.ext4", "find",     "xargs",   "env",      "timeout",
      "nice",  "ionice",   "nohup",  "stdbuf",    "setsid",   "sudo",    "doas",     "busybox",
      "time",  "echo",     "printf", "head",      "tail",     "wc",      "sort",     "uniq",
      "cut",   "tr",       "diff",   "python",    "pytest",   "tar",     "jq",       "which",
      "id",    "date",     "ln",     "rmdir",     "truncate", "chroot",  "unshare",  "cmake",
      "gcc",   "awk-real", "true",   "false",     "test",     "[",       "yes",      "sleep",
      "stat",  "file",     "du",     "df",        "basename", "dirname", "realpath", "readlink",
      "tree",  "hash",     "shred"};

  std::string root, workspace, home, bin;
  LoadOptions options;
};

}  // namespace moat::policy::testing

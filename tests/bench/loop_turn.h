// tests/bench/loop_turn.h: a turn of `moat run` end to end against the mock, next to its parts
// measured in the same run (issue 19, item 2). See loop_turn.cc. Also the scratch directories
// and binaries a bench that runs the real moat uses (loop_turn.cc, cancel_bench.cc): one home.
#pragma once

#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace moat::bench {

// Runs `rounds` scripted sessions, prints each round and the medians; 0 when every run worked.
int run_turn_bench(int rounds);

// A fresh scratch tree for one bench's `moat run`s: the workspace, XDG config/state, the
// sessions and the audit directory (owner-only, as moatd wants it).
struct Dirs {
  std::string root, ws, config, state, sessions, audit;
};

// `prefix` names the bench in the temporary directory's name; exits when it cannot be made.
inline Dirs make_dirs(const char* prefix) {
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / (std::string(prefix) + "-XXXXXX")).string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::perror("mkdtemp");
    std::exit(1);
  }
  Dirs d{tmpl,           tmpl + "/ws", tmpl + "/config", tmpl + "/state", tmpl + "/sessions",
         tmpl + "/audit"};
  for (const auto& p : {d.ws, d.config + "/moat", d.state, d.sessions, d.audit})
    fs::create_directories(p);
  fs::permissions(d.audit, fs::perms::owner_all);
  return d;
}

// The binary `env` names, else `relative` to the build directory (benches live three below).
inline std::string binary(const char* env, const char* relative) {
  if (const char* bin = std::getenv(env); bin != nullptr && *bin != '\0') return bin;
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path().parent_path() /
          relative)
      .string();
}

}  // namespace moat::bench

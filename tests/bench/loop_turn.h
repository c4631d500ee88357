// tests/bench/loop_turn.h: a turn of `moat run` end to end against the mock, next to its parts
// measured in the same run (issue 19, item 2). See loop_turn.cc. Also the scratch directories
// and binaries a bench that runs the real moat uses (loop_turn.cc, cancel_bench.cc): one home.
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

// The load average (1 and 5 min), printed with a bench's figures: they move with it.
inline std::string load_average() {
  std::string one = "?", five = "?";
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    char a[32] = "", b[32] = "";
    if (std::fscanf(f, "%31s %31s", a, b) == 2) one = a, five = b;
    std::fclose(f);
  }
  return one + " (1 min), " + five + " (5 min)";
}

// Stops the resident moatd (issue 30) that moat started under `runtime_dir` (XDG_RUNTIME_DIR;
// not the bench's child): the pid its socket's peer credentials give, SIGTERM, then waits until
// it is gone.
inline void stop_resident_moatd(const std::string& runtime_dir) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  (runtime_dir + "/moat/moatd.sock").copy(addr.sun_path, sizeof addr.sun_path - 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ucred cred{};
  socklen_t len = sizeof cred;
  const bool found = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                     getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0;
  close(fd);
  if (!found) return;
  kill(cred.pid, SIGTERM);
  for (int i = 0; i < 500 && kill(cred.pid, 0) == 0; ++i) usleep(10000);
}

}  // namespace moat::bench

// tests/bench/loop_turn.h: a turn of `moat run` end to end against the mock, next to its parts
// measured in the same run (issue 19, item 2). See loop_turn.cc. Also the scratch directories
// and binaries a bench that runs the real moat uses (loop_turn.cc, cancel_bench.cc): one home.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

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

// A resident moatd (issue 30) for a bench's runs: `moatd --socket SOCKET FLAGS...`, with
// `--idle-exit 600` where this moatd has R1's flag, `env` (NAME=VALUE) its whole environment,
// its output in `log`. Its pid once the socket answers, else -1 (it is stopped).
inline pid_t start_resident_moatd(const std::string& moatd, const std::vector<std::string>& flags,
                                  const std::string& socket, const std::string& log,
                                  const std::vector<std::string>& env) {
  std::string help;
  if (FILE* p = popen((moatd + " --help").c_str(), "r")) {
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) help.append(buf, n);
    pclose(p);
  }
  std::vector<std::string> argv = {moatd, "--socket", socket};
  argv.insert(argv.end(), flags.begin(), flags.end());
  if (help.find("--idle-exit") != std::string::npos) argv.insert(argv.end(), {"--idle-exit", "600"});
  std::vector<std::string> vars = env;
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  for (auto& e : vars) envp.push_back(e.data());
  args.push_back(nullptr);
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(out, 2);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  socket.copy(addr.sun_path, sizeof addr.sun_path - 1);
  for (int i = 0; i < 200; ++i, usleep(10000)) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool up = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    if (up) return pid;
  }
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  return -1;
}

}  // namespace moat::bench

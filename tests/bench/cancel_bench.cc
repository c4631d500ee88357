// tests/bench/cancel_bench.cc: cancel latency (issue 28 point 4): from the person's stop to the
// call's end, for the two ways a person stops a call:
//   ctrl-c  SIGINT to `moat run --json`'s process group (what a terminal's Ctrl-C sends);
//   abort   an `abort` command to `moat run --rpc` (docs/events.md), the session going on.
// The real moat, moatd and sandbox run against the mock model server in this process; every
// answer is a bash call `echo started; sleep 30`. A round waits for the call's "started"
// output (its process runs), stops it, and times, on moat's own event stream:
//   to call end  the stop sent -> the call's tool_call_end event;
//   to result    the stop sent -> the run's result event.
// Usage: cancel_bench [ROUNDS] (default 20). Prints median and p90 of each, in ms.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tests/bench/loop_turn.h"
#include "tests/support/mock_model_server.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using moat::agent::providers::Api;
using moat::bench::binary;
using moat::bench::Dirs;
using nlohmann::json;

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "cancel_bench: %s\n", why.c_str());
  std::exit(1);
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// A `moat run` with pipes on its stdin and stdout, in a process group of its own.
class Moat {
 public:
  Moat(const Dirs& d, const std::vector<std::string>& mode) {
    std::vector<std::string> args = {binary("MOAT_BIN", "agent/moat"),
                                     "run",
                                     "--model",
                                     "mock/mock",
                                     "-C",
                                     d.ws,
                                     "--sessions-dir",
                                     d.sessions,
                                     "--audit-dir",
                                     d.audit};
    args.insert(args.end(), mode.begin(), mode.end());
    std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + d.root,
                                    "XDG_CONFIG_HOME=" + d.config, "XDG_STATE_HOME=" + d.state,
                                    "MOATD_BIN=" + binary("MOATD_BIN", "sandbox/moatd")};
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) die("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    const std::string log = d.root + "/moat.log";
    posix_spawn_file_actions_addopen(&fa, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // as a shell starts a job
    posix_spawnattr_setpgroup(&attr, 0);
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    for (auto& e : env) envp.push_back(e.data());
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    const int rc = posix_spawn(&pid_, argv[0], &fa, &attr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(in[0]);
    close(out[1]);
    if (rc != 0) die("spawning moat");
    in_ = in[1];
    out_ = out[0];
  }
  ~Moat() {
    close(in_);
    close(out_);
    int status;
    waitpid(pid_, &status, 0);
  }

  void send(const json& command) {
    const std::string line = command.dump() + "\n";
    if (write(in_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) die("write");
  }
  void interrupt() const { kill(-pid_, SIGINT); }
  // The next event of `type` (skipping the others); `chunk`, when given, must be in it.
  json until(const std::string& type, const std::string& chunk = "") {
    for (;;) {
      const json e = next_event();
      if (e.value("type", "") == type && (chunk.empty() || e.dump().find(chunk) != std::string::npos))
        return e;
    }
  }

 private:
  json next_event() {
    for (;;) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        const std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        auto e = json::parse(line, nullptr, false);
        if (e.is_object()) return e;
        continue;
      }
      char b[4096];
      const ssize_t n = read(out_, b, sizeof b);
      if (n <= 0) die("moat's events ended (see moat.log in the bench directory)");
      buf_.append(b, static_cast<size_t>(n));
    }
  }

  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  std::string buf_;
};

struct Latency {
  std::vector<double> call_end, result;
};

// Waits until the call's process runs, stops it with `stop`, and times its end and the run's.
void time_one(Moat& moat, Latency& l, const std::function<void()>& stop) {
  moat.until("tool_output", "started");
  const auto t0 = Clock::now();
  stop();
  const json end = moat.until("tool_call_end");
  l.call_end.push_back(ms_since(t0));
  const json result = moat.until("result");
  l.result.push_back(ms_since(t0));
  if (result.value("stop", "") != "cancelled") die("the run did not stop as cancelled: " + result.dump());
}

Latency ctrl_c_rounds(const Dirs& d, int rounds) {
  Latency l;
  for (int r = 0; r < rounds; ++r) {
    Moat moat(d, {"--json", "--headless", "wait"});
    time_one(moat, l, [&moat] { moat.interrupt(); });
  }
  return l;
}

Latency abort_rounds(const Dirs& d, int rounds) {
  Latency l;
  Moat moat(d, {"--rpc"});
  for (int r = 0; r < rounds; ++r) {
    moat.send({{"type", "prompt"}, {"id", 2 * r + 1}, {"message", "wait"}});
    time_one(moat, l, [&moat, r] { moat.send({{"type", "abort"}, {"id", 2 * r + 2}}); });
  }
  return l;
}

void print(const char* name, const Latency& l) {
  std::printf("%-8s %10.2f %10.2f %10.2f %10.2f\n", name, percentile(l.call_end, 0.5),
              percentile(l.call_end, 0.9), percentile(l.result, 0.5), percentile(l.result, 0.9));
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 20;
  if (rounds <= 0) die("ROUNDS must be a positive number, got '" + std::string(argv[1]) + "'");
  const Dirs d = moat::bench::make_dirs("moat-cancel-bench");
  moat::testing::MockModelServer server(Api::kOpenAiChat);
  server.set_responder([](const json&, size_t n) {
    moat::testing::ScriptedTurn t;
    t.text = "Waiting.";
    t.calls = {{"call_" + std::to_string(n), "bash", {{"command", "echo started; sleep 30"}}}};
    return t;
  });
  std::ofstream(d.config + "/moat/config.toml") << server.provider_toml("mock");
  const Latency ctrl_c = ctrl_c_rounds(d, rounds);
  const Latency abort = abort_rounds(d, rounds);
  std::printf("\ncancel latency, the stop sent -> (%d rounds), ms\n%-8s %10s %10s %10s %10s\n",
              rounds, "stop", "call p50", "call p90", "result p50", "result p90");
  print("ctrl-c", ctrl_c);
  print("abort", abort);
  std::error_code ec;
  fs::remove_all(d.root, ec);
  return 0;
}

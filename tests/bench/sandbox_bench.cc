// tests/bench/sandbox_bench.cc: what a sandboxed call costs. Prints, in one run, the median and
// p99 of `true` run
//   (1) by bare fork+exec on the host (/bin/true, and bash -c true: the bash tool runs bash),
//   (2) through a warm sandbox::Session (the sandbox alone: keeper, init, worker), also over
//       a 10,000-file workspace (masks and hidden-path globs are re-derived before each call),
//   (3) as a bash tool call through the real moatd binary on a warm session (the whole path:
//       protocol, policy decision, write-ahead audit record, worker, exec record, result),
//       once with the audit log on this disk and once on tmpfs (the difference is the
//       decision record's fdatasync; the exec record is synced with the next one), and
//       `/bin/true` as an exec frame (moat sandbox exec's: argv, no shell) the same two ways,
//   (4) by `bwrap --unshare-all ... true`, and `... bash -c true` (the bash tool's program),
// with the ratios (issue 19 item 1: a moatd `bash -c true` call <= 1.5x a bare `bash -c true`,
// a moatd `/bin/true` exec <= 1.5x a bare `/bin/true`, p99 <= 3x bare; each printed as the
// median of kBlocks blocks' ratios; older targets: <= 2x bare and <= 0.3x bwrap), and the
// setup time of a session (Session::create, and moatd's hello -> welcome).
//
// The samples are interleaved: every round runs each path once, in an order that rotates from
// round to round, so a burst of load on this shared machine hits every path alike and the
// ratios compare like with like. bwrap runs every third round (it is slow).
//
// First, the cold start (issue 15 item 5): `moat sandbox exec -- /bin/true` as a script runs it
// (a new moat, which starts its own moatd, which builds a session and a worker) against
// `bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp
// --bind WS WS -- /bin/true`, interleaved, with the wall time's median, p90 and p99, the CPU
// time (what wait4 reports: the process and the children it reaped; the session's init and
// workers are not among them, since the init is reparented when moatd kills its keeper, so
// `perf stat` gives the whole tree's); and, interleaved with them, the same command from a new
// moat on the user's resident moatd, as moat chooses it (issue 30; started by the first,
// unmeasured run). Issue 30's targets, printed as ratios to bwrap of the same run:
// resident median <= 1.5x and p99 <= 3x, private median <= 4x.
// And the resident run in a workspace of kRealEntries entries (a small real project; moatd
// indexes it at the hello, diffs it and sweeps it for nested .git after the command) as a ratio
// to the empty workspace's, so a walk's cost per entry stays visible. Then the floor: the parts a
// cold start cannot leave out, each on its own and as a ratio to bwrap, with moat's own start
// (`moat version`, and `moat sandbox exec` refusing a missing command: the exec path's start
// before any moatd), so a resident run's ratio splits into moat's share and moatd's.
//
// Usage: sandbox_bench [rounds [cold_runs]]   (default 300 and 100; rounds 0: the cold start
//        only). Needs moatd and moat: $MOATD_BIN and $MOAT_BIN, else the build tree's
//        (ninja sandbox/moatd agent/moat tests/bench/sandbox_bench).
//        MOAT_BENCH_SKIP=seccomp shows one worker step's share (session paths only; never for
//        real use).
#include <stdlib.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "sandbox/protocol.h"
#include "sandbox/session.h"
#include "tests/bench/loop_turn.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Stats {
  double median_ms = 0, p99_ms = 0;
};

struct Path {
  const char* name;
  int every;  // runs in rounds where round % every == 0
  std::function<bool()> once;
  std::vector<double> ms;

  Stats stats() const {
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    return {s[s.size() / 2], s[std::min(s.size() - 1, s.size() * 99 / 100)]};
  }
};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

bool fork_exec(const std::vector<const char*>& argv) {
  pid_t pid = fork();
  if (pid == 0) {
    execv(argv[0], const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}


std::string make_temp_dir(const fs::path& parent, const char* prefix) {
  std::string tmpl = (parent / (std::string(prefix) + "-XXXXXX")).string();
  return mkdtemp(tmpl.data()) != nullptr ? tmpl : std::string();
}

// A binary of the build tree (tests/bench/sandbox_bench -> sandbox/moatd), unless `env` names one.
std::string build_binary(const char* env, const char* relative) {
  if (const char* bin = std::getenv(env)) return bin;
  fs::path self = fs::read_symlink("/proc/self/exe");
  return (self.parent_path().parent_path().parent_path() / relative).string();
}
std::string moatd_binary() { return build_binary("MOATD_BIN", "sandbox/moatd"); }

// bwrap from PATH ("" when it is not installed).
std::string find_bwrap() {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = dirs.substr(start, end - start) + "/bwrap";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

// One run of argv with stdout on /dev/null: its wall and CPU time in ms, false if it failed.
bool timed_run(const std::vector<std::string>& argv, double* wall_ms, double* cpu_ms) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, 1);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  if (pid < 0 || wait4(pid, &status, 0, &ru) != pid) return false;
  *wall_ms = ms_since(t0);
  *cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
            (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A client of one private moatd (moatd --fd), speaking the protocol synchronously: one call at
// a time, so a call's time is moatd's time plus a socket round trip.
class MoatdConnection {
 public:
  // Starts moatd with the built-in default policy (empty policy dirs) and its audit log in
  // audit_dir, and greets it: a warm session, ready for calls.
  bool start(const std::string& workspace, const std::string& audit_dir,
             const std::string& policy_dir, double* hello_ms) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return false;
    fd_ = moat::UniqueFd(sv[0]);
    moat::UniqueFd theirs(sv[1]);
    const std::string exe = moatd_binary(), fd_arg = std::to_string(kMoatdFd);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(theirs.get(), kMoatdFd);  // dup2 clears close-on-exec on the copy
      execl(exe.c_str(), exe.c_str(), "--fd", fd_arg.c_str(), "--audit-dir", audit_dir.c_str(),
            "--system-policy-dir", policy_dir.c_str(), "--user-policy-dir", policy_dir.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    theirs.reset();  // so a moatd that failed to start reads as EOF, not a hang
    if (pid_ < 0) return false;
    const auto t0 = Clock::now();
    auto welcome = round_trip({{"type", "hello"},
                               {"version", moat::sandbox::kProtocolVersion},
                               {"workspace", workspace},
                               {"headless", true}},
                              "welcome");
    *hello_ms = ms_since(t0);
    if (!welcome) std::fprintf(stderr, "moatd (%s): no welcome\n", exe.c_str());
    return welcome.has_value();
  }

  bool bash_true() {
    const std::string id = "bench-" + std::to_string(calls_++);
    auto result = round_trip(
        {{"type", "call"}, {"id", id}, {"tool", "bash"}, {"arguments", {{"command", "true"}}}},
        "result");
    if (result && result->value("isError", true))
      std::fprintf(stderr, "moatd: %s\n", result->dump().c_str());
    return result && !result->value("isError", true);
  }

  // An exec frame (moat sandbox exec's): argv run with no shell, on /dev/null as its stdin,
  // stdout and stderr.
  bool exec_true() {
    const std::string id = "bench-" + std::to_string(calls_++);
    moat::UniqueFd null_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
    const int fds[3] = {null_fd.get(), null_fd.get(), null_fd.get()};
    auto result =
        round_trip({{"type", "exec"}, {"id", id}, {"argv", {"/bin/true"}}}, "result", fds);
    if (result && result->value("isError", true))
      std::fprintf(stderr, "moatd: %s\n", result->dump().c_str());
    return result && !result->value("isError", true);
  }

  ~MoatdConnection() {
    if (pid_ <= 0) return;
    (void)round_trip({{"type", "bye"}}, "bye");
    fd_.reset();
    int status = 0;
    waitpid(pid_, &status, 0);
  }

 private:
  static constexpr int kMoatdFd = 3;

  // Sends m and reads frames until one of type `until` (progress frames are skipped).
  // With `fds`, the frame carries those three (SCM_RIGHTS), as an exec frame does.
  std::optional<nlohmann::json> round_trip(const nlohmann::json& m, const char* until,
                                           const int* fds = nullptr) {
    std::string frame = moat::sandbox::encode_frame(m);
    iovec iov{frame.data(), frame.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))] = {};
    if (fds != nullptr) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(3 * sizeof(int));
      std::memcpy(CMSG_DATA(c), fds, 3 * sizeof(int));
    }
    if (::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(frame.size()))
      return std::nullopt;
    char buf[65536];
    for (;;) {
      auto next = decoder_.next();
      if (!next) return std::nullopt;
      if (next->has_value()) {
        if ((**next).value("type", "") == until) return **next;
        if ((**next).value("type", "") == "error") return std::nullopt;
        continue;
      }
      ssize_t n = ::read(fd_.get(), buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }

  moat::UniqueFd fd_;
  pid_t pid_ = -1;
  int calls_ = 0;
  moat::sandbox::FrameDecoder decoder_;
};

void print_row(const Path& p) {
  Stats s = p.stats();
  std::printf("  %-44s median %7.3f ms   p99 %7.3f ms   (%zu samples)\n", p.name, s.median_ms,
              s.p99_ms, p.ms.size());
}

void print_ratio(const char* what, const Path& a, const Path& b, const char* target) {
  Stats x = a.stats(), y = b.stats();
  std::printf("  %-44s median %5.2fx   p99 %5.2fx   %s\n", what, x.median_ms / y.median_ms,
              x.p99_ms / y.p99_ms, target);
}

// The rounds are cut into this many blocks of consecutive rounds; a ratio's block medians
// tell a steady ratio from one a burst of load made (the machine is shared).
constexpr int kBlocks = 5;

// The median over the blocks of (a's median / b's median), and of (a's p99 / b's p99).
void print_block_ratio(const char* what, const Path& a, const Path& b) {
  std::vector<double> med, p99;
  const std::size_t per = std::min(a.ms.size(), b.ms.size()) / kBlocks;
  for (int k = 0; per > 0 && k < kBlocks; ++k) {
    Path x{a.name, 1, nullptr, {}}, y{b.name, 1, nullptr, {}};
    x.ms.assign(a.ms.begin() + k * per, a.ms.begin() + (k + 1) * per);
    y.ms.assign(b.ms.begin() + k * per, b.ms.begin() + (k + 1) * per);
    med.push_back(x.stats().median_ms / y.stats().median_ms);
    p99.push_back(x.stats().p99_ms / y.stats().p99_ms);
  }
  if (med.empty()) return;
  std::sort(med.begin(), med.end());
  std::sort(p99.begin(), p99.end());
  std::printf("  %-44s median %5.2fx   p99 %5.2fx   (target: median <= 1.5x, p99 <= 3x)\n", what,
              med[med.size() / 2], p99[p99.size() / 2]);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double percentile(std::vector<double> v, std::size_t pct) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, v.size() * pct / 100)];
}

struct ColdPath {
  const char* name;
  std::vector<std::string> argv;
  std::vector<double> wall_ms, cpu_ms;
};

// The median over kBlocks consecutive blocks of runs of (a's median / b's median): a burst of
// load on this shared machine moves one block's ratio, not the answer.
double block_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t per = std::min(a.size(), b.size()) / kBlocks;
  if (per == 0) return percentile(a, 50) / percentile(b, 50);
  std::vector<double> ratios;
  for (int k = 0; k < kBlocks; ++k) {
    const auto from = static_cast<std::ptrdiff_t>(static_cast<std::size_t>(k) * per);
    const auto to = from + static_cast<std::ptrdiff_t>(per);
    ratios.push_back(percentile({a.begin() + from, a.begin() + to}, 50) /
                     percentile({b.begin() + from, b.begin() + to}, 50));
  }
  return median(ratios);
}

// One issue-30 target: a's wall time against bwrap's, median (of blocks) and p99.
void print_target(const ColdPath& a, const ColdPath& bwrap, double median_target,
                  double p99_target) {
  const double med = block_ratio(a.wall_ms, bwrap.wall_ms);
  const double p99 = percentile(a.wall_ms, 99) / percentile(bwrap.wall_ms, 99);
  std::printf("  %-34s median %5.2fx (target <= %.1fx: %s)", (std::string(a.name) + " / bwrap").c_str(),
              med, median_target, med <= median_target ? "met" : "not met");
  if (p99_target > 0)
    std::printf("   p99 %5.2fx (target <= %.1fx: %s)", p99, p99_target,
                p99 <= p99_target ? "met" : "not met");
  std::printf("\n");
}

// Cold means each command starts on a machine at rest: every measured run (of every path) comes
// after a quiet gap in which the previous run's background work ends, as it would between two
// commands a person or a script starts: a private moatd's exit and its cgroups' removal, and a
// resident moatd's pool refill (kRefillDelay, 50 ms, after a hello; then a keeper, an init and
// its view). Back to back, each run raced the last one's work on this 2-vCPU machine (resident
// p90 about twice its median). MOAT_BENCH_COLD_GAP_MS=0 runs them back to back.
int cold_gap_ms() {
  const char* env = std::getenv("MOAT_BENCH_COLD_GAP_MS");
  return env != nullptr ? std::max(0, std::atoi(env)) : 150;
}

// A small real project: kRealEntries entries, 100 directories of 9 source-sized files each.
constexpr int kRealEntries = 1000;
bool fill_workspace(const std::string& ws) {
  std::error_code ec;
  for (int d = 0; d < kRealEntries / 10; ++d) {
    const fs::path dir = fs::path(ws) / ("dir" + std::to_string(d));
    if (!fs::create_directory(dir, ec)) return false;
    for (int f = 0; f < 9; ++f)
      std::ofstream(dir / ("f" + std::to_string(f) + ".cc"))
          << std::string(4096, static_cast<char>('a' + (d + f) % 26)) << d << f;
  }
  return true;
}

// paths: the private moat, bwrap, then (when it started) moat on a resident moatd, and the same
// in a kRealEntries-entry workspace.
void print_cold(const std::vector<ColdPath>& paths, int runs) {
  std::printf("cold start (%d interleaved runs each, after 3 unmeasured, each after a %d ms quiet "
              "gap; stdout to /dev/null):\n",
              runs, cold_gap_ms());
  for (const auto& p : paths)
    std::printf("  %-34s wall median %7.2f ms  p90 %7.2f ms  p99 %7.2f ms   cpu median %7.2f ms\n",
                p.name, percentile(p.wall_ms, 50), percentile(p.wall_ms, 90),
                percentile(p.wall_ms, 99), percentile(p.cpu_ms, 50));
  if (paths.size() < 2) {
    std::printf("  no ratio: bwrap is not installed (apt-get install bubblewrap)\n");
    return;
  }
  std::printf("issue 30's targets (median: of %d blocks' medians; p99: of all runs):\n", kBlocks);
  if (paths.size() > 2) print_target(paths[2], paths[1], 1.5, 3.0);
  print_target(paths[0], paths[1], 4.0, 0);
  std::printf("  %-34s cpu median %5.2fx\n", "private moat / bwrap",
              percentile(paths[0].cpu_ms, 50) / percentile(paths[1].cpu_ms, 50));
  if (paths.size() > 3)
    std::printf("  resident, %d-entry workspace / empty: median %5.2fx (%.2f ms more a command)\n",
                kRealEntries, block_ratio(paths[3].wall_ms, paths[2].wall_ms),
                percentile(paths[3].wall_ms, 50) - percentile(paths[2].wall_ms, 50));
}

// The parts of a cold start that moat cannot leave out, each timed on its own (interleaved), so
// the cold start can be read against its floor: what the session's isolation and its audit cost
// on this machine before any of moat's own work. bwrap pays only the namespaces and the fork+exec.
namespace floor_parts {

double fork_and_wait(const std::function<void()>& child) {
  const auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    child();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return ms_since(t0);
}

// The session's seven namespaces, made and torn down (the net namespace is most of it).
double namespaces() {
  return fork_and_wait([] {
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                CLONE_NEWUTS | CLONE_NEWCGROUP) != 0)
      _exit(1);
  });
}

// A cgroup in each v1 hierarchy moatd uses and a process moved into both: the move waits for an
// RCU grace period (cgroup_threadgroup_rwsem). -1 when no hierarchy is writable (moatd then
// runs sessions without one only if the policy allows it).
double cgroup_attach() {
  const char* roots[] = {"/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory"};
  if (access(roots[0], W_OK) != 0 || access(roots[1], W_OK) != 0) return -1;
  int p[2];
  if (pipe(p) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {  // waits until the parent closes its end
    close(p[1]);
    char c;
    (void)!read(p[0], &c, 1);
    _exit(0);
  }
  const std::string name = "/moat-bench-floor-" + std::to_string(pid);
  const auto t0 = Clock::now();
  for (const char* root : roots) {
    const std::string dir = root + name;
    mkdir(dir.c_str(), 0755);
    std::ofstream(dir + "/cgroup.procs") << pid;
  }
  const double ms = ms_since(t0);
  close(p[1]);
  close(p[0]);
  waitpid(pid, nullptr, 0);
  for (const char* root : roots)
    for (int i = 0; i < 100 && rmdir((root + name).c_str()) != 0; ++i) usleep(1000);
  return ms;
}

// The audit log's two syncs on the cold path (the decision, write-ahead; the end).
double audit_syncs(const std::string& dir) {
  moat::UniqueFd fd(open((dir + "/floor.jsonl").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600));
  const std::string record(1200, 'x');
  const auto t0 = Clock::now();
  for (int i = 0; i < 2; ++i) {
    (void)!write(fd.get(), record.data(), record.size());
    fdatasync(fd.get());
  }
  return ms_since(t0);
}

double process_start(const std::string& moat) {
  double wall = 0, cpu = 0;
  (void)timed_run({moat, "version"}, &wall, &cpu);
  return wall;
}

// moat's own start on the exec path: `moat sandbox exec` with no command builds its command
// line, refuses it (exit 125) and exits before it reaches any moatd.
double exec_path_start(const std::string& moat) {
  double wall = 0, cpu = 0;
  (void)timed_run({moat, "sandbox", "exec"}, &wall, &cpu);
  return wall;
}

}  // namespace floor_parts

struct FloorPart {
  enum Sum { kInSum, kOverlapped, kMoatsOwn };
  const char* name;
  Sum sum;  // kOverlapped: moatd does it while it waits; kMoatsOwn: inside the process starts
  std::function<double()> once;
  std::vector<double> ms;
};

const char* sum_note(FloorPart::Sum sum) {
  if (sum == FloorPart::kOverlapped) return "  (overlapped: not in the sum)";
  if (sum == FloorPart::kMoatsOwn) return "  (moat's own start: in the process starts)";
  return "";
}

// What of a resident run is moat's own (its start on the exec path, parts[2]) and what moatd's.
void print_split(const std::vector<FloorPart>& parts, double bwrap_ms, double resident_ms) {
  const double moat_ms = percentile(parts[2].ms, 50);
  std::printf("  resident run %.2f ms = %.2fx bwrap: moat's start %.2f ms (%.2fx bwrap), the rest "
              "%.2f ms (%.2fx bwrap: moatd's hello, exec and bye, the round trips, moat's exit)\n",
              resident_ms, resident_ms / bwrap_ms, moat_ms, moat_ms / bwrap_ms,
              resident_ms - moat_ms, (resident_ms - moat_ms) / bwrap_ms);
}

void print_floor(std::vector<FloorPart>& parts, double bwrap_ms, double resident_ms) {
  std::printf("the floor (each part on its own, medians):\n");
  double sum = 0;
  for (auto& p : parts) {
    if (p.ms.empty() || p.ms[0] < 0) {
      std::printf("  %-52s n/a (no writable cgroup v1 hierarchy)\n", p.name);
      continue;
    }
    const double m = percentile(p.ms, 50);
    if (p.sum == FloorPart::kInSum) sum += m;
    std::printf("  %-52s %7.2f ms", p.name, m);
    if (bwrap_ms > 0) std::printf(" = %5.2fx bwrap", m / bwrap_ms);
    std::printf("%s\n", sum_note(p.sum));
  }
  std::printf("  %-52s %7.2f ms", "sum: what a cold start cannot go below", sum);
  if (bwrap_ms > 0) std::printf(" = %.2fx bwrap's median", sum / bwrap_ms);
  // A resident moatd is already running: one process start (moat's) instead of two.
  const double resident = sum - percentile(parts[0].ms, 50) / 2;
  std::printf("\n  %-52s %7.2f ms", "the same with a resident moatd (one process start)",
              resident);
  if (bwrap_ms > 0) std::printf(" = %.2fx bwrap's median", resident / bwrap_ms);
  std::printf("\n");
  if (bwrap_ms > 0 && resident_ms > 0) print_split(parts, bwrap_ms, resident_ms);
}

// Times the floor's parts, `runs` each, interleaved.
void floor_of_cold_start(int runs, const std::string& moat, const std::string& audit_dir,
                         double bwrap_ms, double resident_ms) {
  std::vector<FloorPart> parts;
  parts.push_back({"2 process starts (moat and moatd; `moat version` x2)",
                   FloorPart::kInSum,
                   [&] { return floor_parts::process_start(moat) * 2; },
                   {}});
  parts.push_back({"moat's own start (`moat version`)",
                   FloorPart::kMoatsOwn,
                   [&] { return floor_parts::process_start(moat); },
                   {}});
  parts.push_back({"moat's start, exec path (`moat sandbox exec`, no cmd)",
                   FloorPart::kMoatsOwn,
                   [&] { return floor_parts::exec_path_start(moat); },
                   {}});
  parts.push_back({"7 namespaces made and torn down (fork+unshare)", FloorPart::kInSum,
                   floor_parts::namespaces, {}});
  parts.push_back({"the command: fork+exec /bin/true",
                   FloorPart::kInSum,
                   [] {
                     const auto t0 = Clock::now();
                     (void)fork_exec({"/bin/true", nullptr});
                     return ms_since(t0);
                   },
                   {}});
  // Cold: its RCU grace period runs out while moatd starts (moatd's warm-up, sandbox/cgroup.h),
  // and a resident moatd's pooled sessions were attached before their hello.
  parts.push_back({"cgroup v1 pids+memory: mkdir and attach, cold", FloorPart::kOverlapped,
                   floor_parts::cgroup_attach, {}});
  parts.push_back({"audit: 2 x (append 1.2 KB + fdatasync)",
                   FloorPart::kInSum,
                   [&] { return floor_parts::audit_syncs(audit_dir); },
                   {}});
  for (int round = 0; round < runs; ++round)
    for (std::size_t k = 0; k < parts.size(); ++k) {
      FloorPart& p = parts[(k + static_cast<std::size_t>(round)) % parts.size()];
      p.ms.push_back(p.once());
    }
  print_floor(parts, bwrap_ms, resident_ms);
}

// The user's resident moatd as moat chooses it (issue 30): XDG_RUNTIME_DIR set to a fresh
// 0700 directory, so the first run starts it there and the others find it; its user policy
// layer (XDG_CONFIG_HOME) empty and its audit log (XDG_STATE_HOME) in `audit`, like the private
// path's (its system layer is this host's /etc/moat/policy.d, which the private path leaves
// out). Set for the bench process: the private path's options choose a private moatd anyway.
void choose_resident(const std::string& runtime, const std::string& policy,
                     const std::string& audit) {
  chmod(runtime.c_str(), 0700);
  setenv("XDG_RUNTIME_DIR", runtime.c_str(), 1);
  setenv("XDG_CONFIG_HOME", policy.c_str(), 1);
  setenv("XDG_STATE_HOME", audit.c_str(), 1);
}

// The cold start of `moat sandbox exec` against bwrap's (see the top of the file). moat gets an
// empty policy directory (the built-in default policy) and an audit directory of its own, like
// the warm paths below: the numbers do not depend on this machine's policies, and the runs do
// not fill the user's audit log. The resident path is a new moat each run that finds the
// user's resident moatd (started by the first, unmeasured, run).
bool cold_start(int runs, const fs::path& tmp) {
  const std::string ws = make_temp_dir(tmp, "moat-bench-cold-ws");
  const std::string audit = make_temp_dir(tmp, "moat-bench-cold-audit");
  const std::string policy = make_temp_dir(tmp, "moat-bench-cold-policy");
  if (ws.empty() || audit.empty() || policy.empty()) return false;
  const std::string moat = build_binary("MOAT_BIN", "agent/moat");
  std::vector<ColdPath> paths;
  paths.push_back({"private moat sandbox exec",
                   {moat, "sandbox", "exec", "-C", ws, "--audit-dir", audit,
                    "--system-policy-dir", policy, "--user-policy-dir", policy, "--",
                    "/bin/true"},
                   {},
                   {}});
  const std::string bwrap = find_bwrap();
  if (!bwrap.empty())
    paths.push_back(
        {"bwrap --unshare-all ... /bin/true",
         {bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev",
          "--proc", "/proc", "--tmpfs", "/tmp", "--bind", ws, ws, "--", "/bin/true"},
         {},
         {}});
  const std::string runtime = make_temp_dir(tmp, "moat-bench-cold-run");
  const std::string real_ws = make_temp_dir(tmp, "moat-bench-cold-real-ws");
  if (!bwrap.empty() && !runtime.empty()) {
    choose_resident(runtime, policy, audit);
    paths.push_back({"resident moat sandbox exec",
                     {moat, "sandbox", "exec", "-C", ws, "--", "/bin/true"},
                     {},
                     {}});
    if (!real_ws.empty() && fill_workspace(real_ws))
      paths.push_back({"resident, 1000-entry workspace",
                       {moat, "sandbox", "exec", "-C", real_ws, "--", "/bin/true"},
                       {},
                       {}});
  }
  bool ok = true;
  for (int round = -3; ok && round < runs; ++round) {  // 3 unmeasured: the page cache
    for (std::size_t k = 0; ok && k < paths.size(); ++k) {
      ColdPath& p = paths[(k + static_cast<std::size_t>(round + 3)) % paths.size()];
      double wall = 0, cpu = 0;
      usleep(static_cast<useconds_t>(cold_gap_ms()) * 1000);
      ok = timed_run(p.argv, &wall, &cpu);
      if (!ok) std::fprintf(stderr, "%s: run %d failed\n", p.name, round);
      if (round < 0) continue;
      p.wall_ms.push_back(wall);
      p.cpu_ms.push_back(cpu);
    }
  }
  if (!runtime.empty()) moat::bench::stop_resident_moatd(runtime);
  if (ok) print_cold(paths, runs);
  if (ok)
    floor_of_cold_start(runs, moat, audit, paths.size() > 1 ? percentile(paths[1].wall_ms, 50) : 0,
                        paths.size() > 2 ? percentile(paths[2].wall_ms, 50) : 0);
  for (const auto& d : {ws, audit, policy, runtime, real_ws})
    if (!d.empty()) fs::remove_all(d);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 300;
  const int cold_runs = argc > 2 ? std::atoi(argv[2]) : 100;
  const fs::path tmp = fs::temp_directory_path();
  std::printf("sandbox_bench: load average at start %s\n", moat::bench::load_average().c_str());
  if (cold_runs > 0 && !cold_start(cold_runs, tmp)) return 1;
  std::printf("load average after the cold start %s\n", moat::bench::load_average().c_str());
  if (rounds <= 0) return 0;
  // One workspace per session: each session masks its own protected paths in it.
  const std::string ws = make_temp_dir(tmp, "moat-bench-ws");
  const std::string ws_disk = make_temp_dir(tmp, "moat-bench-ws");
  const std::string ws_shm = make_temp_dir(tmp, "moat-bench-ws");
  const std::string ws_big = make_temp_dir(tmp, "moat-bench-ws");
  const std::string disk_audit = make_temp_dir(tmp, "moat-bench-audit");
  const std::string shm_audit = make_temp_dir("/dev/shm", "moat-bench-audit");
  const std::string policy_dir = make_temp_dir(tmp, "moat-bench-policy");
  if (ws.empty() || ws_big.empty() || ws_disk.empty() || ws_shm.empty() || disk_audit.empty() ||
      shm_audit.empty() || policy_dir.empty())
    return 1;
  moat::sandbox::SessionConfig config;
  config.workspace = ws;
  config.protected_paths = {".git/hooks", ".git/config", ".moat"};  // as moatd sets them
  if (const char* skip = std::getenv("MOAT_BENCH_SKIP")) config.test_skip_step = skip;
  std::printf("warm paths: %d rounds of `true`\n", rounds);

  // A workspace of 10,000 files: the masks are re-derived before every call, and the default
  // policy's read-deny globs (".env", "*.pem": what moatd passes as hidden_paths) are matched
  // against the workspace's entries each time.
  for (int d = 0; d < 100; ++d) {
    fs::create_directories(ws_big + "/src/d" + std::to_string(d));
    for (int f = 0; f < 100; ++f)
      std::ofstream(ws_big + "/src/d" + std::to_string(d) + "/f" + std::to_string(f) + ".c");
  }
  moat::sandbox::SessionConfig big_config = config;
  big_config.workspace = ws_big;
  big_config.hidden_paths = {".env", "*.pem"};

  std::vector<double> setup_ms;
  for (int i = 0; i < 10; ++i) {
    const auto t0 = Clock::now();
    auto s = moat::sandbox::Session::create(config);
    if (!s) {
      std::fprintf(stderr, "no sandbox session here: %s\n", s.error().message().c_str());
      return 1;
    }
    setup_ms.push_back(ms_since(t0));
  }
  auto session = std::move(*moat::sandbox::Session::create(config));
  auto big_session = std::move(*moat::sandbox::Session::create(big_config));
  double hello_disk_ms = 0, hello_shm_ms = 0;
  auto moatd_disk = std::make_unique<MoatdConnection>();
  auto moatd_shm = std::make_unique<MoatdConnection>();
  if (!moatd_disk->start(ws_disk, disk_audit, policy_dir, &hello_disk_ms) ||
      !moatd_shm->start(ws_shm, shm_audit, policy_dir, &hello_shm_ms))
    return 1;

  moat::sandbox::ExecSpec spec;
  spec.argv = {"/bin/true"};
  std::vector<Path> paths;
  paths.push_back({"bare fork+exec /bin/true",
                   1,
                   [] {
                     return fork_exec({"/bin/true", nullptr});
                   },
                   {}});
  paths.push_back(
      {"bare fork+exec bash -c true",
       1,
       [] {
         return fork_exec({"/bin/bash", "--noprofile", "--norc", "-c", "true", nullptr});
       },
       {}});
  paths.push_back({"session exec /bin/true (warm)",
                   1,
                   [&] {
                     auto r = session->exec(spec, nullptr, nullptr);
                     return r && r->exit_code == 0;
                   },
                   {}});
  paths.push_back({"session exec /bin/true, 10k-file workspace",
                   1,
                   [&] {
                     auto r = big_session->exec(spec, nullptr, nullptr);
                     return r && r->exit_code == 0;
                   },
                   {}});
  paths.push_back(
      {"moatd bash `true` (warm), audit on disk", 1, [&] { return moatd_disk->bash_true(); }, {}});
  paths.push_back(
      {"moatd bash `true` (warm), audit on tmpfs", 1, [&] { return moatd_shm->bash_true(); }, {}});
  paths.push_back({"moatd exec /bin/true (argv), audit on disk",
                   1,
                   [&] { return moatd_disk->exec_true(); },
                   {}});
  paths.push_back({"moatd exec /bin/true (argv), audit on tmpfs",
                   1,
                   [&] { return moatd_shm->exec_true(); },
                   {}});
  paths.push_back({"bwrap --unshare-all true",
                   3,
                   [] {
                     return fork_exec({"/usr/bin/bwrap", "--unshare-all", "--die-with-parent",
                                       "--ro-bind",      "/usr",          "/usr",
                                       "--symlink",      "usr/bin",       "/bin",
                                       "--symlink",      "usr/lib",       "/lib",
                                       "--symlink",      "usr/lib64",     "/lib64",
                                       "--proc",         "/proc",         "--dev",
                                       "/dev",           "/bin/true",     nullptr});
                   },
                   {}});
  // The bash tool runs bash: the same program under bwrap, for a like-with-like ratio.
  paths.push_back({"bwrap --unshare-all bash -c true",
                   3,
                   [] {
                     return fork_exec({"/usr/bin/bwrap", "--unshare-all", "--die-with-parent",
                                       "--ro-bind",      "/usr",          "/usr",
                                       "--symlink",      "usr/bin",       "/bin",
                                       "--symlink",      "usr/lib",       "/lib",
                                       "--symlink",      "usr/lib64",     "/lib64",
                                       "--proc",         "/proc",         "--dev",
                                       "/dev",           "/bin/bash",     "-c",
                                       "true",           nullptr});
                   },
                   {}});

  for (int warm = 0; warm < 20; ++warm)  // page cache, the sessions' first calls
    for (auto& p : paths) (void)p.once();
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t k = 0; k < paths.size(); ++k) {
      Path& p = paths[(k + static_cast<std::size_t>(round)) % paths.size()];
      if (round % p.every != 0) continue;
      const auto t0 = Clock::now();
      if (!p.once()) {
        std::fprintf(stderr, "%s: round %d failed\n", p.name, round);
        return 1;
      }
      p.ms.push_back(ms_since(t0));
    }
  }

  const Path &bare = paths[0], &bare_bash = paths[1], &sess = paths[2], &big = paths[3],
             &moatd = paths[4], &moatd_tmpfs = paths[5], &exec_disk = paths[6],
             &exec_tmpfs = paths[7], &bwrap = paths[8], &bwrap_bash = paths[9];
  std::printf("per call (interleaved):\n");
  for (const auto& p : paths) print_row(p);
  std::printf("issue 19 item 1, a warm call against its fork+exec (median of %d blocks' ratios):\n",
              kBlocks);
  print_block_ratio("moatd bash -c true / bare bash -c true", moatd, bare_bash);
  print_block_ratio("  the same, audit on tmpfs", moatd_tmpfs, bare_bash);
  print_block_ratio("moatd exec /bin/true / bare /bin/true", exec_disk, bare);
  print_block_ratio("  the same, audit on tmpfs", exec_tmpfs, bare);
  std::printf("ratios (all samples):\n");
  print_ratio("moatd call / bare /bin/true", moatd, bare, "(target <= 2x)");
  print_ratio("moatd call / bwrap", moatd, bwrap, "(target <= 0.3x)");
  print_ratio("moatd call / bare bash -c true", moatd, bare_bash, "(same program both sides)");
  print_ratio("moatd call, audit on tmpfs / bare bash", moatd_tmpfs, bare_bash, "");
  print_ratio("moatd call / bwrap bash -c true", moatd, bwrap_bash, "(same program both sides)");
  print_ratio("session exec / bare /bin/true", sess, bare, "(the sandbox alone)");
  print_ratio("session exec / bwrap", sess, bwrap, "");
  print_ratio("session exec, 10k files / bare /bin/true", big, bare, "");
  std::printf("setup:\n");
  std::printf("  %-44s median %7.3f ms   (of 10)\n", "Session::create", median(setup_ms));
  std::printf("  %-44s %7.3f ms (audit on disk), %.3f ms (tmpfs)\n", "moatd hello -> welcome",
              hello_disk_ms, hello_shm_ms);
  std::printf("load average at end %s\n", moat::bench::load_average().c_str());
  moatd_disk.reset();
  moatd_shm.reset();
  session.reset();
  big_session.reset();
  for (const auto& d : {ws, ws_big, ws_disk, ws_shm, disk_audit, shm_audit, policy_dir})
    fs::remove_all(d);
  return 0;
}

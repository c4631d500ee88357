// tests/bench/compat_bench.cc: the compatibility suite's projects (tests/compat, issue 25 item
// 5) built and tested bare and under `moat sandbox exec` with the built-in default policy:
// the same commands (each README's build then test) on a fresh copy each time, rounds
// interleaved (bare first in even rounds, moat first in odd ones, so a warming cache or a
// busy neighbour favours neither), the median of each and their ratio per project.
//   compat_bench [ROUNDS]   (default 5)
// A run moat refused or that failed is counted apart and left out of its median.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/compat/compat_projects.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using moat::compat::Project;
namespace e2e = moat::e2e;

// Bare runs get what a sandboxed command gets: a clean environment (no proxy variables), the
// sandbox's PATH, and a HOME and TMPDIR of their own on a tmpfs (the sandbox's HOME is its
// fresh tmpfs /tmp: npm's cache starts cold, and pip and cc write their temporary files to
// memory; with the host's disk /tmp instead, python-venv ran 30% slower bare than under moat).
constexpr const char* kPath = "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";
constexpr const char* kTmpfs = "/dev/shm";

struct Timed {
  double seconds = 0;
  int exit_code = -1;
  std::string out;
};

Timed timed(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  const auto t0 = Clock::now();
  e2e::Run r = e2e::run(argv, env, 600);
  return {std::chrono::duration<double>(Clock::now() - t0).count(), r.exit_code, std::move(r.out)};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The binaries next to this one (build/tests/bench/compat_bench -> build/agent/moat).
void default_binaries() {
  const fs::path build = fs::canonical("/proc/self/exe").parent_path().parent_path().parent_path();
  setenv("MOAT_BIN", (build / "agent/moat").c_str(), 0);
  setenv("MOATD_BIN", (build / "sandbox/moatd").c_str(), 0);
}

struct Bench {
  std::string dir;
  std::string scratch;  // the bare runs' HOME and TMPDIR: on a tmpfs, as the sandbox's /tmp
  int rounds = 5;

  std::vector<std::string> moat_env() const {
    return {"XDG_STATE_HOME=" + dir + "/state", "XDG_CONFIG_HOME=" + dir + "/config",
            "MOATD_BIN=" + e2e::moatd_bin(), "MOAT_POLICY_DIR=" + dir + "/no-system-layer",
            "MOAT_USER_POLICY_DIR=" + dir + "/config/moat/policy.d"};
  }

  Timed bare(const std::string& ws, const std::string& line) const {
    const std::string home = scratch + "/" + fs::path(ws).filename().string() + ".home";
    fs::create_directories(home + "/tmp");
    const Timed t = timed({"env", "-i", kPath, "HOME=" + home, "TMPDIR=" + home + "/tmp", "sh",
                           "-c", "cd '" + ws + "' && " + line},
                          {});
    std::error_code ec;
    fs::remove_all(home, ec);
    return t;
  }

  Timed sandboxed(const Project& p, const std::string& ws, const std::string& line) const {
    std::vector<std::string> argv = {e2e::moat_bin(),
                                     "sandbox",
                                     "exec",
                                     "--system-policy-dir",
                                     dir + "/no-system-layer",
                                     "--audit-dir",
                                     dir + "/audit",
                                     "-C",
                                     ws};
    if (p.needs == moat::compat::Needs::kNpmRegistry) argv.push_back("--network");
    argv.insert(argv.end(), {"--", "sh", "-c", line});
    return timed(argv, moat_env());
  }

  void project(const Project& p) const {
    const std::string missing = moat::compat::missing_for(p);
    if (!missing.empty()) {
      std::printf("%-16s skipped: %s\n", p.dir, missing.c_str());
      return;
    }
    const moat::compat::Commands c = moat::compat::commands_of(p);
    const std::string line = c.build + " && " + c.test;
    const std::string tmpl = dir + "/" + p.dir + ".template";
    moat::compat::copy_project(p, tmpl);
    if (p.is_repository) moat::compat::make_repository(tmpl);
    std::unique_ptr<moat::compat::NpmRegistry> registry;
    if (p.needs == moat::compat::Needs::kNpmRegistry) {
      registry = std::make_unique<moat::compat::NpmRegistry>(dir, std::vector<std::string>{tmpl});
      fs::create_directories(dir + "/config/moat/policy.d");
      std::ofstream(dir + "/config/moat/policy.d/50-compat-registry.toml")
          << registry->user_layer();
    }
    std::vector<double> bare_s, moat_s;
    int bare_failed = 0, moat_failed = 0;
    std::string moat_failure;
    for (int round = 0; round < rounds; ++round) {
      for (int turn = 0; turn < 2; ++turn) {
        const bool is_bare = (round + turn) % 2 == 0;
        const std::string ws =
            dir + "/" + p.dir + "." + std::to_string(round) + (is_bare ? ".bare" : ".moat");
        fs::copy(tmpl, ws, fs::copy_options::recursive);
        const Timed t = is_bare ? bare(ws, line) : sandboxed(p, ws, line);
        const bool ok = t.exit_code == 0 && t.out.find(p.passed) != std::string::npos;
        if (!ok && !is_bare && moat_failure.empty()) moat_failure = t.out;
        if (ok) (is_bare ? bare_s : moat_s).push_back(t.seconds);
        if (!ok) ++(is_bare ? bare_failed : moat_failed);
        std::error_code ec;
        fs::remove_all(ws, ec);
      }
    }
    const double b = median(bare_s), m = median(moat_s);
    char ratio[32] = "-";
    if (b > 0 && m > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", m / b);
    std::printf("%-16s %8.3f s  %8.3f s  %7s   %d/%d   %d/%d\n", p.dir, b, m, ratio, bare_failed,
                rounds, moat_failed, rounds);
    if (!moat_failure.empty()) {
      const std::size_t from = moat_failure.size() > 600 ? moat_failure.size() - 600 : 0;
      std::printf("  the first moat run that failed ended:\n%s\n",
                  moat_failure.substr(from).c_str());
    }
    std::fflush(stdout);
  }
};

}  // namespace

int main(int argc, char** argv) {
  default_binaries();
  Bench bench;
  if (argc > 1) bench.rounds = std::max(1, std::atoi(argv[1]));
  char tmpl[] = "/tmp/moat-compat-bench-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 1;
  bench.dir = tmpl;
  std::string scratch =
      std::string(fs::is_directory(kTmpfs) ? kTmpfs : "/tmp") + "/moat-compat-bench-home-XXXXXX";
  if (::mkdtemp(scratch.data()) == nullptr) return 1;
  bench.scratch = scratch;
  std::printf(
      "compat_bench: %d rounds, interleaved; each README's build and test, bare vs "
      "`moat sandbox exec` (built-in default policy), medians of the runs that passed\n",
      bench.rounds);
  std::printf("%-16s %10s  %10s  %7s   %s   %s\n", "project", "bare", "moat", "ratio",
              "bare failed", "moat failed");
  for (const Project* p : moat::compat::kProjects) bench.project(*p);
  std::error_code ec;
  fs::remove_all(bench.dir, ec);
  fs::remove_all(bench.scratch, ec);
  return 0;
}

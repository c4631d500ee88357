// tests/bench/load_bench.cc: many clients at once on one shared moatd (issue 26's load test):
// each client a session running sandboxed commands one after another, as
// tests/integration/e2e/moatd_concurrency_test.cc runs it; prints the calls' latency (p50,
// p99, max), the wall time, and moatd's memory before, after and at its peak.
//
// Usage: load_bench [CLIENTS [COMMANDS]]   (default 32 25). Needs moatd and moat: $MOATD_BIN
// and $MOAT_BIN, else the build tree's (ninja sandbox/moatd agent/moat tests/bench/load_bench).
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "../integration/e2e/e2e_support.h"
#include "../integration/e2e/load_clients.h"

namespace {

using moat::e2e::percentile;

// A field of /proc/<pid>/status in kB (VmRSS, VmHWM), -1 when unreadable.
long status_kb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  return -1;
}

// $name, else the build tree's binary `rel` (tests/bench/load_bench -> ../../rel).
void default_binary(const char* name, const char* rel) {
  if (std::getenv(name) != nullptr) return;
  const auto self = std::filesystem::read_symlink("/proc/self/exe");
  setenv(name, (self.parent_path().parent_path().parent_path() / rel).c_str(), 1);
}

}  // namespace

int main(int argc, char** argv) {
  default_binary("MOATD_BIN", "sandbox/moatd");
  default_binary("MOAT_BIN", "agent/moat");
  moat::e2e::LoadPlan plan;
  if (argc > 1) plan.clients = std::atoi(argv[1]);
  if (argc > 2) plan.commands = std::atoi(argv[2]);
  moat::e2e::TempDir dir;
  plan.socket = dir.path() + "/moatd.sock";
  plan.workspaces = dir.path() + "/ws";
  const pid_t moatd = moat::e2e::start({moat::e2e::moatd_bin(), "--socket", plan.socket,
                                        "--audit-dir", dir.path() + "/audit"},
                                       dir.path() + "/moatd.log");
  // The first session warms what every later one shares (the filter, the audit key).
  moat::e2e::LoadPlan warm = plan;
  warm.clients = 1;
  warm.commands = 1;
  warm.workspaces = dir.path() + "/warm";
  (void)moat::e2e::run_load(warm);
  const long rss_before = status_kb(moatd, "VmRSS");
  const moat::e2e::LoadOutcome outcome = moat::e2e::run_load(plan);
  int complete = 0, verified = 0;
  for (const auto& c : outcome.clients) {
    if (c.problems.empty() && c.answered == plan.commands) ++complete;
    for (const std::string& p : c.problems) std::fprintf(stderr, "  %s\n", p.c_str());
    if (!c.audit.empty() &&
        moat::e2e::run({moat::e2e::moat_bin(), "audit", "verify", c.audit}).exit_code == 0)
      ++verified;
  }
  const auto lat = outcome.latencies_ms();
  std::printf("%d clients x %d commands at once on one moatd: %.1f s\n", plan.clients,
              plan.commands, outcome.wall_s);
  std::printf("  complete %d/%d, audit logs verified %d/%d, moatd %s\n", complete, plan.clients,
              verified, plan.clients, kill(moatd, 0) == 0 ? "alive" : "DEAD");
  std::printf("  call latency (%zu calls): p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", lat.size(),
              percentile(lat, 50), percentile(lat, 99), percentile(lat, 100));
  std::printf("  moatd memory: VmRSS %ld kB before, %ld kB after; VmHWM %ld kB\n", rss_before,
              status_kb(moatd, "VmRSS"), status_kb(moatd, "VmHWM"));
  kill(moatd, SIGTERM);
  moat::e2e::wait_exit(moatd, 20);
  return complete == plan.clients && verified == plan.clients ? 0 : 1;
}

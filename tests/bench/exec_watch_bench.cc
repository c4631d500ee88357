// tests/bench/exec_watch_bench.cc: what the exec watch costs (issue 14). Prints, in one run,
//   (1) a shell loop of 1000 `/bin/true` in a warm sandbox::Session, with the exec watch off
//       (the worker leaves its step out), on with nobody judging (the notification round trip
//       and the reads alone), and on with the real judge (the default policy's decide_exec and
//       an audit record per exec and per end, on this disk), as the cost per exec over "off";
//   (2) `make -j2` of a small C project (12 files), off and on with the judge, as a ratio.
// Targets: under 100 us per exec; the build under 1.1x. Rounds alternate between the modes so
// a burst of load on this shared machine hits each alike.
//
// Usage: exec_watch_bench [rounds]   (default 5)
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "policy/policy.h"
#include "sandbox/exec_watch.h"
#include "sandbox/session.h"
#include "sessions/audit.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The judge moatd uses, reduced to its costs: decide_exec and two audit records per exec.
class Judge final : public moat::sandbox::ExecObserver {
 public:
  Judge(moat::policy::Policy& policy, moat::sessions::AuditLog& log) : policy_(policy), log_(log) {}
  moat::sandbox::ExecAnswer on_exec(const moat::sandbox::ExecRequest& r) override {
    auto d = policy_.decide_exec({r.argv, r.path, r.exe, r.cwd});
    (void)log_.append("exec", {{"exec_id", r.exec_id}, {"argv", r.argv}, {"exe", r.exe},
                               {"result", moat::policy::verdict_name(d.verdict)}},
                      moat::sessions::AuditLog::Sync::kWithNext);
    return {d.verdict == moat::policy::Verdict::kAllow, EPERM};
  }
  void on_end(const moat::sandbox::ExecEnd& e) override {
    (void)log_.append("exec.end", {{"exec_id", e.exec_id}, {"duration_ms", e.duration_ms}},
                      moat::sessions::AuditLog::Sync::kWithNext);
  }

 private:
  moat::policy::Policy& policy_;
  moat::sessions::AuditLog& log_;
};

void write_project(const std::string& dir) {
  fs::create_directories(dir);
  std::ofstream mk(dir + "/Makefile");
  mk << "OBJS = main.o";
  for (int i = 0; i < 11; ++i) mk << " f" << i << ".o";
  mk << "\nprog: $(OBJS)\n\tcc -o $@ $(OBJS)\n%.o: %.c\n\tcc -O1 -c $< -o $@\n"
        "clean:\n\trm -f prog *.o\n";
  std::ofstream main(dir + "/main.c");
  main << "#include <stdio.h>\n";
  for (int i = 0; i < 11; ++i) main << "int f" << i << "(int);\n";
  main << "int main(void) { int s = 0;\n";
  for (int i = 0; i < 11; ++i) main << "  s += f" << i << "(" << i << ");\n";
  main << "  printf(\"%d\\n\", s); return 0; }\n";
  for (int i = 0; i < 11; ++i)
    std::ofstream(dir + "/f" + std::to_string(i) + ".c")
        << "int f" << i << "(int x) { int s = 0; for (int k = 0; k < x * 10; ++k) s += k % 7;"
        << " return s; }\n";
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(1, atoi(argv[1])) : 5;
  char tmpl[] = "/tmp/moat-exec-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  const std::string root = tmpl, ws = root + "/ws";
  write_project(ws + "/proj");
  moat::sandbox::SessionConfig on;
  on.workspace = ws;
  on.protected_paths = {".git/hooks", ".git/config", ".moat"};
  moat::sandbox::SessionConfig off = on;
  off.test_skip_step = "exec_watch";
  auto s_on = moat::sandbox::Session::create(on);
  auto s_off = moat::sandbox::Session::create(off);
  if (!s_on || !s_off) {
    std::fprintf(stderr, "no sandbox session here: %s\n",
                 (!s_on ? s_on.error() : s_off.error()).message().c_str());
    return 1;
  }
  moat::policy::LoadOptions po;
  po.system_dir = root + "/no-policy";
  po.user_dir = root + "/no-policy";
  po.workspace = ws;
  fs::create_directories(po.system_dir);
  auto policy = moat::policy::Policy::load(po);
  auto log = moat::sessions::AuditLog::open(root + "/audit", "bench", "sha256:bench");
  if (!policy || !log) {
    std::fprintf(stderr, "policy or audit log: %s\n",
                 (!policy ? policy.error() : log.error()).message().c_str());
    return 1;
  }
  fs::permissions(root + "/audit", fs::perms::owner_all);
  Judge judge(**policy, **log);

  auto run = [&](moat::sandbox::Session& s, moat::sandbox::ExecObserver* obs,
                 const std::string& cmd) {
    moat::sandbox::ExecSpec spec;
    spec.argv = {"/bin/sh", "-c", cmd};
    spec.observer = obs;
    const auto t0 = Clock::now();
    auto st = s.exec(spec, nullptr, moat::StopFlags());
    if (!st || st->exit_code != 0)
      std::fprintf(stderr, "run failed: %s\n", st ? "exit code" : st.error().message().c_str());
    return ms_since(t0);
  };
  const std::string loop = "i=0; while [ $i -lt 1000 ]; do /bin/true; i=$((i+1)); done";
  const std::string make = "cd proj && make -s clean && make -s -j2 >/dev/null";
  std::vector<double> loop_off, loop_bare, loop_judged, make_off, make_on;
  for (int r = 0; r < rounds; ++r) {
    loop_off.push_back(run(**s_off, nullptr, loop));
    loop_bare.push_back(run(**s_on, nullptr, loop));
    loop_judged.push_back(run(**s_on, &judge, loop));
    make_off.push_back(run(**s_off, nullptr, make));
    make_on.push_back(run(**s_on, &judge, make));
  }
  const double off_ms = median(loop_off), bare_ms = median(loop_bare),
               judged_ms = median(loop_judged);
  std::printf("exec_watch_bench: %d rounds (medians)\n", rounds);
  std::printf("  1000 x /bin/true, watch off         %8.1f ms  (%.1f us per exec)\n", off_ms,
              off_ms);
  std::printf("  1000 x /bin/true, watch, no judge   %8.1f ms  (+%.1f us per exec, %.2fx)\n",
              bare_ms, bare_ms - off_ms, bare_ms / off_ms);
  std::printf("  1000 x /bin/true, watch + judge     %8.1f ms  (+%.1f us per exec, %.2fx)"
              "   target < +100 us\n",
              judged_ms, judged_ms - off_ms, judged_ms / off_ms);
  std::printf("  make -j2 (12 files), watch off      %8.1f ms\n", median(make_off));
  std::printf("  make -j2 (12 files), watch + judge  %8.1f ms  (%.3fx)   target < 1.1x\n",
              median(make_on), median(make_on) / median(make_off));
  std::error_code ec;
  fs::remove_all(root, ec);
  return 0;
}

// tests/bench/sandbox_bench.cc: what a sandboxed call costs. Prints, in one run, the median and
// p99 of `true` run (1) through a warm sandbox::Session (the path every moatd tool call takes),
// (2) by bare fork+exec on the host, (3) by `bwrap --unshare-all ... true`, with the ratios
// (target: session <= 2x bare and <= 0.3x bwrap), and the session setup time.
//
// Usage: sandbox_bench [iterations]   (default 300; bwrap gets a third of them).
//        MOAT_BENCH_SKIP=seccomp sandbox_bench   shows one worker step's share.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "sandbox/session.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Stats {
  double median_ms = 0, p99_ms = 0;
};

Stats measure(int n, const std::function<bool()>& once) {
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    auto t0 = Clock::now();
    if (!once()) {
      std::fprintf(stderr, "run %d failed\n", i);
      std::exit(1);
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)]};
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

void print(const char* name, const Stats& s) {
  std::printf("%-28s median %8.3f ms   p99 %8.3f ms\n", name, s.median_ms, s.p99_ms);
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 300;
  std::string tmpl = (std::filesystem::temp_directory_path() / "moat-bench-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return 1;
  moat::sandbox::SessionConfig config;
  config.workspace = tmpl;
  // MOAT_BENCH_SKIP=<worker step> measures a step's share of the cost (never for real use).
  if (const char* skip = std::getenv("MOAT_BENCH_SKIP")) config.test_skip_step = skip;

  std::vector<double> setup_ms;
  for (int i = 0; i < 10; ++i) {
    auto t0 = Clock::now();
    auto s = moat::sandbox::Session::create(config);
    if (!s) {
      std::fprintf(stderr, "no sandbox session here: %s\n", s.error().message().c_str());
      return 1;
    }
    setup_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(setup_ms.begin(), setup_ms.end());
  auto session = std::move(*moat::sandbox::Session::create(config));
  moat::sandbox::ExecSpec spec;
  spec.argv = {"/bin/true"};
  for (int i = 0; i < 20; ++i) (void)session->exec(spec, nullptr, nullptr);  // warm up

  Stats moat = measure(n, [&] {
    auto r = session->exec(spec, nullptr, nullptr);
    return r && r->exit_code == 0;
  });
  Stats bare = measure(n, [] { return fork_exec({"/bin/true", nullptr}); });
  Stats bwrap = measure(std::max(10, n / 3), [] {
    return fork_exec({"/usr/bin/bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr",
                      "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
                      "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev",
                      "/bin/true", nullptr});
  });

  std::printf("sandbox_bench: %d iterations of `true`\n", n);
  print("moat session (warm)", moat);
  print("bare fork+exec", bare);
  print("bwrap --unshare-all", bwrap);
  std::printf("ratio moat/bare    median %.2fx  p99 %.2fx   (target <= 2x)\n",
              moat.median_ms / bare.median_ms, moat.p99_ms / bare.p99_ms);
  std::printf("ratio moat/bwrap   median %.2fx  p99 %.2fx   (target <= 0.3x)\n",
              moat.median_ms / bwrap.median_ms, moat.p99_ms / bwrap.p99_ms);
  std::printf("session setup      median %.3f ms (of 10)\n", setup_ms[setup_ms.size() / 2]);
  session.reset();
  std::filesystem::remove_all(tmpl);
  return 0;
}

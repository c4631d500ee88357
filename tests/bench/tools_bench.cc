// tests/bench/tools_bench.cc: the cost of running a tool inside the sandbox, as a ratio to
// the same operation done directly on the host:
//   read   a 10 MB file with offset in the middle (execute("read") vs reading the file
//          and cutting the same 2000 lines in-process)
//   bash   `true` (execute("bash") vs posix_spawn of the same bash -c true + waitpid)
//
// Usage: tools_bench [iterations]   (default 20). Uses a real sandbox::Session when it can
// be created (root or user namespaces), and says so; otherwise it refuses to print
// sandbox numbers. Prints the median of the iterations for each side.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "sandbox/session.h"
#include "sandbox/session_runner.h"
#include "tools/registry.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double median_ms(int iterations, const std::function<void()>& op) {
  std::vector<double> ms;
  for (int i = 0; i < iterations; ++i) {
    const auto t0 = Clock::now();
    op();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// The host baseline of read: the whole file with read(2) (what the tool does), then the
// 2000 lines from the middle found with memchr.
std::string host_read_middle(const std::string& path, std::size_t offset) {
  std::string content(std::filesystem::file_size(path), '\0');
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return {};
  const std::size_t got = std::fread(content.data(), 1, content.size(), f);
  std::fclose(f);
  content.resize(got);
  const char* p = content.data();
  const char* end = p + content.size();
  for (std::size_t l = 1; l < offset && p < end; ++l)
    p = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p))) + 1;
  const char* q = p;
  for (int l = 0; l < 2000 && q < end; ++l)
    q = static_cast<const char*>(std::memchr(q, '\n', static_cast<std::size_t>(end - q))) + 1;
  return std::string(p, q);
}

void host_bash_true() {
  const char* argv[] = {"bash", "--noprofile", "--norc", "-c", "true", nullptr};
  pid_t pid;
  if (posix_spawnp(&pid, "bash", nullptr, nullptr, const_cast<char**>(argv), environ) != 0) return;
  int status;
  waitpid(pid, &status, 0);
}

void report(const char* what, double tool, double host) {
  std::printf("%-38s tool %8.3f ms/op   host %8.3f ms/op   ratio %6.1fx\n", what, tool, host,
              tool / host);
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 20;
  const char* root = std::getenv("MOAT_BUILD_ROOT");
  std::string ws = std::string(root && *root ? root : "/var/tmp") + "/moat-tools-bench-XXXXXX";
  if (mkdtemp(ws.data()) == nullptr) return 2;
  ws = std::filesystem::canonical(ws).string();

  const std::string file = ws + "/big.txt";
  {
    std::ofstream out(file, std::ios::binary);
    std::string line(99, 'x');
    for (int i = 0; i < 100'000; ++i) out << line << '\n';  // 10 MB, 100 000 lines
  }

  moat::sandbox::SessionConfig config;
  config.workspace = ws;
  config.handler = &moat::tools::handle_in_sandbox;
  config.allow_without = {"landlock", "cgroup", "idmap"};
  auto session = moat::sandbox::Session::create(config);
  if (!session) {
    std::fprintf(stderr, "tools_bench: no sandbox session (%s); nothing to compare\n",
                 session.error().message().c_str());
    std::filesystem::remove_all(ws);
    return 77;
  }
  moat::sandbox::SessionRunner runner(**session);
  moat::tools::CallContext ctx;
  ctx.runner = &runner;
  ctx.workspace = ws;
  ctx.authorize = [](const std::string&, moat::tools::PathAccess) { return std::nullopt; };

  const nlohmann::json read_args = {{"path", "big.txt"}, {"offset", 50'000}};
  const double tool_read = median_ms(iterations, [&] {
    auto r = moat::tools::execute("read", read_args, ctx);
    if (r.is_error) std::fprintf(stderr, "read failed: %s\n", r.to_json().dump().c_str());
  });
  // Where the read's time goes: one worker round trip (the resolve step) of its two.
  const std::string resolve =
      nlohmann::json{{"op", "resolve"}, {"path", "big.txt"}, {"cwd", ws}}.dump();
  const double round_trip = median_ms(iterations, [&] { (void)runner.run_handler(resolve); });
  const double host_read = median_ms(iterations, [&] { host_read_middle(file, 50'000); });
  const double tool_bash = median_ms(iterations, [&] {
    auto r = moat::tools::execute("bash", {{"command", "true"}}, ctx);
    if (r.is_error) std::fprintf(stderr, "bash failed: %s\n", r.to_json().dump().c_str());
  });
  const double host_bash = median_ms(iterations, host_bash_true);

  std::printf("tools_bench: %d iterations, median, sandbox: %s\n", iterations,
              to_json((*session)->describe()).dump().c_str());
  report("read 10 MB, offset 50000 of 100000", tool_read, host_read);
  report("bash `true`", tool_bash, host_bash);
  std::printf("%-38s %8.3f ms/op\n", "one handler worker round trip", round_trip);
  std::filesystem::remove_all(ws);
  return 0;
}

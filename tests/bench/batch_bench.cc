// tests/bench/batch_bench.cc: moat's own overhead per batch item: 50 generated repositories,
// `moat batch --jobs 2` with a scripted rename (replay: the model takes ~0 s) and a check. Per
// item, wall time minus the check's (and the model's, ~0 with replay) is what moat adds: the
// work copy, `moat run`'s moatd and sandbox, the check's moatd and sandbox, the patch and the
// pages. Next to it, measured in the same run: the same item done by a bare shell (clone, the
// rename, the check, the diff) with no sandbox. Target: under 100 ms per item.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "agent/batch/results.h"
#include "tests/support/batch_repos.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kItems = 50;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string moat_bin() {
  const char* env = std::getenv("MOAT_BIN");
  if (env != nullptr && *env != '\0') return env;
  return fs::canonical("/proc/self/exe").parent_path().parent_path().parent_path() / "agent/moat";
}

// The bare-shell item: what moat does for it, minus the sandboxes and the agent process.
std::string bare_item(const std::string& dir, const std::string& id) {
  const std::string w = dir + "/bare/" + id;
  return "git clone -q --no-hardlinks '" + dir + "/" + id + "' '" + w + "' && cd '" + w +
         "' && sed -i 's/compute_total/sum_line_items/g' lib.sh main.sh && echo renamed > "
         "NOTES.md && sh run_tests.sh && git add -A && git diff --cached --binary HEAD > "
         "../" +
         id + ".patch";
}

}  // namespace

int main() {
  char tmpl[] = "/tmp/moat-batch-bench-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) return 1;
  const std::string dir = tmpl;
  if (!moat::testing::make_batch_repos(dir, kItems)) return 1;

  const auto start = Clock::now();
  const std::string cmd = "'" + moat_bin() + "' batch '" + dir + "/batch.toml' --jobs 2 --out '" +
                          dir + "/out' 2>'" + dir + "/batch.log'";
  const int rc = std::system(cmd.c_str());
  const double batch_wall = seconds_since(start);
  std::ifstream in(dir + "/out/results.jsonl");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto results = moat::agent::batch::parse_results(ss.str());

  // Per item: its wall time, and the two moat processes in it (each with its own moatd and
  // sandbox); the rest is the work copy, the patch and the pages.
  std::vector<double> wall;
  double agent_sum = 0, check_sum = 0;
  for (const auto& r : results) {
    wall.push_back(r.value("wallSeconds", 0.0));
    if (r.contains("agent")) agent_sum += r["agent"].value("seconds", 0.0);
    if (r.contains("check")) check_sum += r["check"].value("seconds", 0.0);
  }
  std::sort(wall.begin(), wall.end());

  // The check command's own time, without a sandbox (the model's is ~0 with replay).
  const auto check_start = Clock::now();
  for (int i = 0; i < kItems; ++i)
    if (std::system(("cd '" + dir + "/repo-00' && sh run_tests.sh >/dev/null 2>&1").c_str()) < 0)
      return 1;
  const double check_own = seconds_since(check_start) / kItems;

  fs::create_directories(dir + "/bare");
  const auto bare_start = Clock::now();
  for (int i = 0; i < kItems; ++i) {
    char id[32];
    std::snprintf(id, sizeof id, "repo-%02d", i);
    if (std::system(bare_item(dir, id).c_str()) != 0) return 1;
  }
  const double bare_per_item = seconds_since(bare_start) / kItems;

  if (rc != 0 || results.size() != static_cast<std::size_t>(kItems)) {
    std::fprintf(stderr, "batch failed (exit %d, %zu results); see %s/batch.log\n", rc,
                 results.size(), dir.c_str());
    return 1;
  }
  double sum = 0;
  for (double v : wall) sum += v;
  const double overhead = sum / kItems - check_own;
  std::printf("moat batch, %d items, --jobs 2 (replay model: ~0 s of model time):\n", kItems);
  std::printf("  batch wall time / items          %7.1f ms (%.2f s total)\n",
              batch_wall * 1e3 / kItems, batch_wall);
  std::printf("  item wall time                   %7.1f ms mean, %.1f median, %.1f p90\n",
              sum * 1e3 / kItems, wall[kItems / 2] * 1e3, wall[kItems * 9 / 10] * 1e3);
  std::printf(
      "  moat's overhead per item         %7.1f ms (item wall - check's own %.1f ms - "
      "model ~0; target < 100 ms)\n",
      overhead * 1e3, check_own * 1e3);
  std::printf("    `moat run` (moatd, sandbox, loop) %5.1f ms mean\n", agent_sum * 1e3 / kItems);
  std::printf("    the check's `moat sandbox exec`   %5.1f ms mean\n", check_sum * 1e3 / kItems);
  std::printf("  bare shell, same item, no sandbox %6.1f ms (clone, rename, check, diff)\n",
              bare_per_item * 1e3);
  std::printf("  ratio overhead / bare shell      %7.2fx\n", overhead / bare_per_item);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}

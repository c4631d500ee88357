// tests/bench/workspace_index_bench.cc: what the files_changed of a call costs (issue 14 item
// 4). On a 10,000-file workspace (100 directories of 100 files of 1-4 KiB, like a source tree)
// it prints the median and p99 of
//   (1) a plain stat walk (openat/fdopendir/fstatat, no index): the floor any stat diff pays,
//   (2) the per-call diff when nothing changed,
//   (3) the per-call diff after 10 files changed (rewritten with new content),
//   (4) building the index (hashing every file: once per session, at the hello),
// each with its ratio to (1) measured in the same run. The samples are interleaved (each round
// runs every path once) so a burst of load on this shared machine hits them alike.
//
// Usage: workspace_index_bench [rounds]   (default 30). The tree is made under $TMPDIR.
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "sandbox/workspace_index.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// The same syscalls as the index's walk, without its map, hashing or comparison.
std::size_t stat_walk(int dirfd) {
  DIR* d = ::fdopendir(dirfd);
  if (d == nullptr) return 0;
  std::size_t n = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      const int sub =
          ::openat(::dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) n += stat_walk(sub);
    } else {
      ++n;
    }
  }
  ::closedir(d);
  return n;
}

std::string file_text(int i, int round) {
  std::string s = "// file " + std::to_string(i) + " round " + std::to_string(round) + "\n";
  while (s.size() < std::size_t(1024 + (i * 37) % 3072))
    s += "int x" + std::to_string(s.size()) + ";\n";
  return s;
}

struct Samples {
  const char* name;
  std::vector<double> ms;
  double at(double q) const {
    std::vector<double> s = ms;
    std::sort(s.begin(), s.end());
    return s[std::min(s.size() - 1, std::size_t(double(s.size()) * q))];
  }
};

void print(const Samples& s, const Samples& floor) {
  std::printf("  %-34s median %8.3f ms   p99 %8.3f ms   %6.2fx the stat walk\n", s.name, s.at(0.5),
              s.at(0.99), s.at(0.5) / floor.at(0.5));
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 30;
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp ? tmp : "/tmp") + "/moat-index-bench-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) return 1;
  constexpr int kDirs = 100, kPerDir = 100;
  for (int d = 0; d < kDirs; ++d) {
    fs::create_directories(dir + "/d" + std::to_string(d));
    for (int f = 0; f < kPerDir; ++f)
      std::ofstream(dir + "/d" + std::to_string(d) + "/f" + std::to_string(f) + ".c")
          << file_text(d * kPerDir + f, 0);
  }
  moat::UniqueFd ws(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  auto index = moat::sandbox::WorkspaceIndex::build(ws.get());
  if (!index) {
    std::fprintf(stderr, "build: %s\n", index.error().message().c_str());
    return 1;
  }
  std::printf("workspace_index_bench: %d rounds over %zu files\n", rounds, (*index)->size());
  Samples walk{"plain stat walk (no index)", {}}, none{"diff, nothing changed", {}},
      ten{"diff, 10 files changed", {}}, build{"build (hash every file)", {}};
  ::usleep(200 * 1000);  // past the racy window: the entries just written are trusted
  for (int round = 1; round <= rounds; ++round) {
    auto t0 = Clock::now();
    stat_walk(::openat(ws.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    walk.ms.push_back(ms_since(t0));
    t0 = Clock::now();
    auto d = (*index)->diff();
    none.ms.push_back(ms_since(t0));
    if (!d || !d->changes.empty()) std::fprintf(stderr, "round %d: unexpected changes\n", round);
    for (int i = 0; i < 10; ++i)
      std::ofstream(dir + "/d" + std::to_string(i * 7) + "/f" + std::to_string(round % kPerDir) +
                    ".c")
          << file_text(i, round);
    t0 = Clock::now();
    d = (*index)->diff();
    ten.ms.push_back(ms_since(t0));
    if (!d || d->changes.size() != 10) std::fprintf(stderr, "round %d: not 10 changes\n", round);
    t0 = Clock::now();
    auto fresh = moat::sandbox::WorkspaceIndex::build(ws.get());
    build.ms.push_back(ms_since(t0));
    // The files written this round were racily clean when indexed: the next diff re-hashes
    // them once (a real call after a writing call pays that too). Settle them untimed, so
    // "nothing changed" measures the stat walk and the map alone.
    ::usleep(120 * 1000);
    (void)(*index)->diff();
  }
  std::printf("  %-34s median %8.3f ms   p99 %8.3f ms\n", walk.name, walk.at(0.5), walk.at(0.99));
  print(none, walk);
  print(ten, walk);
  print(build, walk);
  fs::remove_all(dir);
  return 0;
}

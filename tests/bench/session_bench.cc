// tests/bench/session_bench.cc: time to load a 100,000-entry session and rebuild its context,
// as a ratio to reading the same file line by line without parsing.
//
// Usage: session_bench [entries]   (default 100000). Prints one line per measurement and
// the ratio; the best of 5 runs each, with the file in the page cache for both.
//
// Then `moat sessions list` over 1000 sessions of 100 entries: list_sessions against reading
// the files line by line, and against opening each session (what the listing did before).
#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "sessions/context.h"
#include "sessions/store.h"

namespace {

using moat::sessions::Entry;

// A realistic mix: a user message, then assistant tool calls and results, then an answer.
Entry make_entry(size_t i) {
  const std::string n = std::to_string(i);
  switch (i % 4) {
    case 0:
      return {{"type", "message"},
              {"message",
               {{"role", "user"},
                {"content", {{{"type", "text"}, {"text", "Please look at step " + n}}}}}}};
    case 1:
      return {
          {"type", "message"},
          {"message",
           {{"role", "assistant"},
            {"stopReason", "toolUse"},
            {"usage", {{"input", 1200}, {"output", 80}, {"cacheRead", 1000}, {"cacheWrite", 0}}},
            {"content",
             {{{"type", "text"}, {"text", "Reading the file."}},
              {{"type", "toolCall"},
               {"id", "c" + n},
               {"name", "read"},
               {"arguments", {{"path", "src/file" + n + ".cc"}}}}}}}}};
    case 2:
      return {{"type", "message"},
              {"message",
               {{"role", "toolResult"},
                {"toolCallId", "c" + std::to_string(i - 1)},
                {"toolName", "read"},
                {"isError", false},
                {"content", {{{"type", "text"}, {"text", std::string(400, 'x') + "\n" + n}}}}}}};
    default:
      return {{"type", "message"},
              {"message",
               {{"role", "assistant"},
                {"stopReason", "stop"},
                {"content", {{{"type", "text"}, {"text", "Step " + n + " looks fine."}}}}}}};
  }
}

double best_ms(const std::function<void()>& fn) {
  double best = 1e300;
  for (int run = 0; run < 5; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const std::chrono::duration<double, std::milli> d = std::chrono::steady_clock::now() - t0;
    if (d.count() < best) best = d.count();
  }
  return best;
}

}  // namespace

// 1000 sessions of 100 entries, listed; the ratio to reading their files.
void bench_listing(const std::string& root) {
  const std::string dir = root + "/listing";
  for (int s = 0; s < 1000; ++s) {
    auto store = moat::sessions::SessionStore::create(dir, "/bench/ws" + std::to_string(s % 10));
    if (!store) std::abort();
    for (size_t i = 0; i < 100; ++i)
      if (!(*store)->append(make_entry(i))) std::abort();
    if (!(*store)->sync()) std::abort();
  }
  std::vector<std::string> files;
  size_t listed = 0;
  const double list_ms = best_ms([&] {
    auto list = moat::sessions::list_sessions(dir);
    if (!list) std::abort();
    listed = list->size();
    files.clear();
    for (const auto& info : *list) files.push_back(info.path);
  });
  const double read_ms = best_ms([&] {
    for (const std::string& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::string line;
      while (std::getline(in, line)) {}
    }
  });
  const double open_ms = best_ms([&] {
    for (const std::string& f : files)
      if (!moat::sessions::SessionStore::open_read_only(f)) std::abort();
  });
  std::printf("sessions list over %zu sessions:   %9.2f ms\n", listed, list_ms);
  std::printf("read their files line by line:     %9.2f ms\n", read_ms);
  std::printf("open every session (the old list): %9.2f ms\n", open_ms);
  std::printf("ratio list / plain read:           %9.1fx (opening each: %.1fx)\n",
              list_ms / read_ms, open_ms / read_ms);
}

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100000;
  std::string tmpl = (std::filesystem::temp_directory_path() / "moat-bench-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return 1;
  std::string path;
  {
    auto store = moat::sessions::SessionStore::create(tmpl, "/bench/workspace");
    if (!store) return std::fprintf(stderr, "%s\n", store.error().message().c_str()), 1;
    for (size_t i = 0; i < n; ++i)
      if (!(*store)->append(make_entry(i))) return 1;
    if (!(*store)->sync()) return 1;
    path = (*store)->path();
  }
  size_t lines = 0, bytes = 0;
  const double read_ms = best_ms([&] {
    std::ifstream in(path, std::ios::binary);
    std::string line;
    lines = bytes = 0;
    while (std::getline(in, line)) {
      ++lines;
      bytes += line.size() + 1;
    }
  });
  size_t messages = 0;
  double load_only_ms = 0;
  const double load_ms = best_ms([&] {
    const auto t0 = std::chrono::steady_clock::now();
    auto store = moat::sessions::SessionStore::open_read_only(path);
    if (!store) std::abort();
    load_only_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    messages = moat::sessions::build_context(**store).for_provider().size();
  });
  std::printf("session file: %zu lines, %zu bytes (%zu entries)\n", lines, bytes, n);
  std::printf("read line by line, no parsing:    %9.2f ms\n", read_ms);
  std::printf("load + rebuild context (%zu msgs): %9.2f ms (load %.2f ms in the last run)\n",
              messages, load_ms, load_only_ms);
  std::printf("ratio load+rebuild / plain read:  %9.1fx\n", load_ms / read_ms);
  bench_listing(tmpl);
  if (std::getenv("KEEP") == nullptr) std::filesystem::remove_all(tmpl);
  else std::printf("%s\n", path.c_str());
  return messages == n ? 0 : 1;
}

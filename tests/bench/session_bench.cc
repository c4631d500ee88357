// tests/bench/session_bench.cc: time to resume a 100,000-entry session (open it and rebuild
// its context), as a ratio to reading the same file line by line without parsing (issue
// 19's target: 5x), as `moat run --resume` does it (load for writing, context, dangling
// calls), also at ID@ENTRY. Twice: with no compaction (every message in the context: the worst
// case) and compacted every 1000 entries (as a session that long is lived).
//
// Usage: session_bench [entries]   (default 100000). Prints one line per measurement and
// the ratios, best and median of 7 runs each, with the file in the page cache for both.
//
// Then `moat sessions list` over 1000 sessions of 100 entries: list_sessions against reading
// the files line by line, and against opening each session (what the listing did before).
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
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

std::chrono::steady_clock::time_point resume_end_;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Timing {
  double best = 0;
  double median = 0;
};

constexpr int kRounds = 7;

// kRounds runs: the best and the median (the machine is shared: the median says what a run
// usually costs, the best what it costs undisturbed); with until_resume_end, each run's
// clock stops where fn set resume_end_.
Timing time_ms(const std::function<void()>& fn, bool until_resume_end = false) {
  std::vector<double> runs;
  for (int run = 0; run < kRounds; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = until_resume_end ? resume_end_ : std::chrono::steady_clock::now();
    runs.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(runs.begin(), runs.end());
  return {runs.front(), runs[runs.size() / 2]};
}

double best_ms(const std::function<void()>& fn) { return time_ms(fn).best; }

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

// A session file of `n` entries; with `compact_every`, a compaction entry (summary and a
// retained tail of 4 messages) after every that many, as a long session has.
std::string write_session(const std::string& dir, size_t n, size_t compact_every) {
  auto store = moat::sessions::SessionStore::create(dir, "/bench/workspace");
  if (!store) std::abort();
  for (size_t i = 0; i < n; ++i) {
    Entry e = make_entry(i);
    if (compact_every > 0 && i % compact_every == compact_every / 2) {
      Entry retained = Entry::array();
      for (size_t k = i - 3; k <= i; ++k) retained.push_back(make_entry(k)["message"]);
      e = {{"type", "compaction"},
           {"summary", "The work so far: " + std::string(2000, 's')},
           {"retained", retained},
           {"tokensBefore", 150000},
           {"readFiles", {"src/a.cc", "src/b.cc"}},
           {"modifiedFiles", {"src/a.cc"}}};
    }
    if (!(*store)->append(e)) std::abort();
  }
  if (!(*store)->sync()) std::abort();
  return (*store)->path();
}

struct ReadCost {
  size_t lines = 0;
  size_t bytes = 0;
  Timing ms;
};

ReadCost read_lines(const std::string& path) {
  ReadCost r;
  r.ms = time_ms([&] {
    std::ifstream in(path, std::ios::binary);
    std::string line;
    r.lines = r.bytes = 0;
    while (std::getline(in, line)) {
      ++r.lines;
      r.bytes += line.size() + 1;
    }
  });
  return r;
}

void print_ratio(const char* what, const Timing& t, const Timing& read) {
  std::printf("  %-36s %9.2f ms best, %9.2f ms median: %5.1fx, %5.1fx of the read\n", what, t.best,
              t.median, t.best / read.best, t.median / read.median);
}

// What `moat run --resume REF` does before its first request: the session loaded for
// writing (resume_session, ENTRY resolved), the context of its leaf, and the check for
// calls left without a result. The store is freed outside the timing (that is the
// process's exit), and timed on its own.
Timing time_resume(const std::string& dir, const std::string& ref, size_t* messages,
                   double* free_ms) {
  *free_ms = 1e300;
  return time_ms(
      [&] {
        std::unique_ptr<moat::sessions::SessionStore> kept;
        {
          auto store = moat::sessions::resume_session(dir, ref);
          if (!store) std::abort();
          *messages = moat::sessions::build_context(**store).for_provider().size();
          if (!moat::sessions::dangling_tool_calls(**store).empty()) std::abort();
          kept = std::move(*store);
        }
        resume_end_ = std::chrono::steady_clock::now();
        kept.reset();
        *free_ms = std::min(*free_ms, ms_since(resume_end_));
      },
      /*until_resume_end=*/true);
}

// The resume against reading the file; then at ID@ENTRY (a label on the middle entry), and
// the context rebuilt on the open store, as before every turn.
size_t bench_resume(const char* what, const std::string& dir, const std::string& path) {
  const ReadCost read = read_lines(path);
  {
    auto store = moat::sessions::SessionStore::open(path);
    if (!store) std::abort();
    const std::string middle = (*store)->entry_id((*store)->entry_count() / 2);
    if (!(*store)->append({{"type", "label"}, {"targetId", middle}, {"label", "bench-middle"}}))
      std::abort();
    // Back to the newest message, so the plain resume's context is the whole session.
    if (!(*store)->set_leaf((*store)->entry_id((*store)->entry_count() - 2))) std::abort();
    if (!(*store)->append({{"type", "session_info"}, {"name", "bench"}})) std::abort();
  }
  size_t messages = 0, at_entry_messages = 0;
  double free_ms = 0, ignored = 0;
  const Timing resume = time_resume(dir, path, &messages, &free_ms);
  const Timing at_entry = time_resume(dir, path + "@bench-middle", &at_entry_messages, &ignored);
  const Timing open = time_ms([&] {
    if (!moat::sessions::SessionStore::open_read_only(path)) std::abort();
  });
  auto store = moat::sessions::SessionStore::open_read_only(path);
  if (!store) std::abort();
  (void)moat::sessions::build_context(**store);
  const double turn_ms =
      best_ms([&] { (void)moat::sessions::build_context(**store).for_provider().size(); });
  std::printf("%s: %zu lines, %zu bytes, %zu messages in the context\n", what, read.lines,
              read.bytes, messages);
  std::printf("  read line by line, no parsing:       %9.2f ms best, %9.2f ms median\n",
              read.ms.best, read.ms.median);
  print_ratio("resume (--resume ID):", resume, read.ms);
  print_ratio("resume at ID@ENTRY (a label):", at_entry, read.ms);
  print_ratio("of which the open alone:", open, read.ms);
  std::printf("  then: the context again (each turn): %8.2f ms; freeing the store: %.2f ms\n",
              turn_ms, free_ms);
  return messages;
}

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100000;
  std::string tmpl = (std::filesystem::temp_directory_path() / "moat-bench-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return 1;
  // The worst case: no compaction, so every one of the n messages is in the context.
  const std::string path = write_session(tmpl + "/flat", n, 0);
  const size_t messages =
      bench_resume("no compaction (all messages in the context)", tmpl + "/flat", path);
  // A long session as it is lived: compacted every 1000 entries (a model's window).
  const std::string compacted = write_session(tmpl + "/compacted", n, 1000);
  bench_resume("compacted every 1000 entries", tmpl + "/compacted", compacted);
  bench_listing(tmpl);
  if (std::getenv("KEEP") == nullptr) std::filesystem::remove_all(tmpl);
  else std::printf("%s\n%s\n", path.c_str(), compacted.c_str());
  return messages == n ? 0 : 1;
}

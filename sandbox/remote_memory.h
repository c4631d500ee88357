// sandbox/remote_memory.h: what the exec watch reads from a caller stopped in execve: its
// path and argv, by whole pages, each page once, within a budget of pages; and whether the
// pages read could be changed by a process the watch does not see.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace moat::sandbox {

constexpr std::size_t kMaxPath = 4096;           // PATH_MAX: the kernel's own bound
constexpr std::size_t kMaxArgvBytes = 4u << 20;  // more than the default ARG_MAX (2 MiB)
constexpr std::size_t kMaxArgvWords = 1u << 16;

struct Argv {
  std::vector<std::string> words;
  bool truncated = false;  // more words or bytes than moat reads
  bool ok = true;          // false: a pointer or a word was not readable
};

class RemoteMemory {
 public:
  // Enough pages for the largest argv moat reads, its pointer array and the path, laid out
  // as a program lays them out; an argv whose words sit each on a page of its own (one page
  // mapped many times over) runs out of them instead of costing moatd a read per word.
  static constexpr std::size_t kPageBudget =
      (kMaxArgvBytes + kMaxArgvWords * sizeof(std::uint64_t) + 2 * kMaxPath) / 4096 + 16;

  explicit RemoteMemory(pid_t pid) : pid_(pid) {}

  // A NUL-terminated string at addr, at most `max` bytes; nullopt when unreadable, longer, or
  // past the budget.
  std::optional<std::string> string_at(std::uint64_t addr, std::size_t max);
  Argv argv_at(std::uint64_t addr);
  bool over_budget() const { return over_budget_; }
  // The pages read, by address: what the check depends on.
  std::vector<std::uint64_t> pages() const;

 private:
  // The page at `page` (aligned), read once; nullptr when unmapped or past the budget.
  const char* page(std::uint64_t page);
  bool copy(std::uint64_t addr, void* out, std::size_t len);

  pid_t pid_;
  std::unordered_map<std::uint64_t, std::unique_ptr<char[]>> pages_;
  bool over_budget_ = false;
};

// True when every page in `pages` is, in `pid`'s memory, an anonymous page of that memory
// alone (its stack, heap, written data): only a thread of its own or a process sharing its
// memory can change it, which the watch sees. A page of shared memory (MAP_SHARED, a memfd:
// another process maps it too) or of a file (a write to the file shows through a private
// mapping until the page is copied) is not.
bool pages_private_anonymous(pid_t pid, const std::vector<std::uint64_t>& pages);

}  // namespace moat::sandbox

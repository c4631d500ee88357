// sandbox/remote_memory.cc: see remote_memory.h.
#include "sandbox/remote_memory.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/unique_fd.h"

namespace moat::sandbox {
namespace {

constexpr std::uint64_t kPage = 4096;

}  // namespace

const char* RemoteMemory::page(std::uint64_t page) {
  if (auto it = pages_.find(page); it != pages_.end()) return it->second.get();
  if (pages_.size() >= kPageBudget) {
    over_budget_ = true;
    return nullptr;
  }
  auto buf = std::make_unique<char[]>(kPage);
  iovec local{buf.get(), kPage};
  iovec remote{reinterpret_cast<void*>(page), kPage};
  if (process_vm_readv(pid_, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(kPage))
    return nullptr;
  return pages_.emplace(page, std::move(buf)).first->second.get();
}

bool RemoteMemory::copy(std::uint64_t addr, void* out, std::size_t len) {
  auto* to = static_cast<char*>(out);
  while (len > 0) {
    const std::uint64_t base = addr & ~(kPage - 1);
    const char* p = page(base);
    if (p == nullptr) return false;
    const std::size_t n = std::min<std::size_t>(len, kPage - (addr - base));
    std::memcpy(to, p + (addr - base), n);
    to += n;
    addr += n;
    len -= n;
  }
  return true;
}

std::optional<std::string> RemoteMemory::string_at(std::uint64_t addr, std::size_t max) {
  std::string out;
  while (out.size() < max) {
    const std::uint64_t base = addr & ~(kPage - 1);
    const char* p = page(base);
    if (p == nullptr) return std::nullopt;
    const std::size_t off = addr - base;
    const std::size_t room = std::min<std::size_t>(kPage - off, max - out.size());
    if (const void* nul = std::memchr(p + off, '\0', room)) {
      out.append(p + off, static_cast<const char*>(nul) - (p + off));
      return out;
    }
    out.append(p + off, room);
    addr += room;
  }
  return std::nullopt;
}

Argv RemoteMemory::argv_at(std::uint64_t addr) {
  Argv a;
  std::size_t bytes = 0;
  for (std::size_t i = 0; addr != 0; ++i) {
    if (i >= kMaxArgvWords || bytes >= kMaxArgvBytes) {
      a.truncated = true;
      return a;
    }
    std::uint64_t ptr = 0;
    if (!copy(addr + i * sizeof ptr, &ptr, sizeof ptr)) {
      a.ok = false;
      a.truncated = over_budget_;
      return a;
    }
    if (ptr == 0) return a;
    auto word = string_at(ptr, kMaxArgvBytes - bytes);
    if (!word) {
      a.ok = false;
      a.truncated = over_budget_ || bytes + kMaxPath >= kMaxArgvBytes;
      return a;
    }
    bytes += word->size() + 1;
    a.words.push_back(std::move(*word));
  }
  return a;
}

std::vector<std::uint64_t> RemoteMemory::pages() const {
  std::vector<std::uint64_t> out;
  out.reserve(pages_.size());
  for (const auto& [addr, bytes] : pages_) out.push_back(addr);
  std::sort(out.begin(), out.end());
  return out;
}

bool pages_private_anonymous(pid_t pid, const std::vector<std::uint64_t>& pages) {
  char path[32];
  std::snprintf(path, sizeof path, "/proc/%d/pagemap", pid);
  UniqueFd map(open(path, O_RDONLY | O_CLOEXEC));
  if (!map.valid()) return false;
  // One 64-bit entry per page (Documentation/admin-guide/mm/pagemap.rst): bit 61 is set for
  // a page of a file or of shared memory (shmem, memfd, MAP_SHARED|MAP_ANONYMOUS), clear for
  // an anonymous page of this memory alone (including one copied on write from a file).
  constexpr std::uint64_t kFileOrShared = 1ULL << 61, kSwapped = 1ULL << 62, kPresent = 1ULL << 63;
  for (std::uint64_t page : pages) {
    std::uint64_t entry = 0;
    const off_t at = static_cast<off_t>(page / kPage * sizeof entry);
    if (pread(map.get(), &entry, sizeof entry, at) != static_cast<ssize_t>(sizeof entry))
      return false;
    if ((entry & (kPresent | kSwapped)) == 0 || (entry & kFileOrShared) != 0) return false;
  }
  return true;
}

}  // namespace moat::sandbox

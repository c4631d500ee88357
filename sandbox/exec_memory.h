// sandbox/exec_memory.h: how far the exec watch's check of one exec holds against a rewrite of
// the caller's memory (docs/security.md, "the exec watch"; the exec record's `memory`).
#pragma once

#include <iterator>
#include <string_view>

namespace moat::sandbox {

enum class ExecMemory {
  kExclusive,  // no other running thread shares it: the check is sound
  kShared,     // read twice and compared, the program checked again once it runs
  kChanged,    // read twice and the reads differed: another thread rewrote it; refused
};

inline constexpr std::string_view kExecMemoryNames[] = {"exclusive", "shared", "changed"};
static_assert(std::size(kExecMemoryNames) == static_cast<std::size_t>(ExecMemory::kChanged) + 1,
              "one name per ExecMemory");

constexpr std::string_view exec_memory_name(ExecMemory m) {
  return kExecMemoryNames[static_cast<std::size_t>(m)];
}

}  // namespace moat::sandbox

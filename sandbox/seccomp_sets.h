// sandbox/seccomp_sets.h: the seccomp table: every syscall the filter knows belongs to exactly
// one named set, and every set says what happens to its members and why.
#pragma once

#include <span>

namespace moat::sandbox {

enum class SetAction {
  kAllow,  // the kernel's own checks (DAC, namespaces, no capabilities) are enough
  kErrno,  // fails with the set's errno, so tools can probe and move on
};

struct SyscallEntry {
  const char* name;    // libseccomp's name for the x86-64 syscall
  const char* reason;  // why it is in this set; empty = the set's reason covers it
};

struct SyscallSet {
  const char* name;
  SetAction action;
  int errno_value;  // kErrno only
  const char* reason;
  std::span<const SyscallEntry> entries;
};

// The unconditional sets, in the order explain-filter prints them.
std::span<const SyscallSet> syscall_sets();

// A syscall denied on its own, for a reason of its own: the argument the filter would have to
// check sits behind a pointer (seccomp sees only registers), so it can be neither allowed nor
// argument-checked; its errno makes callers fall back to a syscall that can be. In no set.
struct NamedException {
  const char* name;
  int errno_value;
  const char* reason;
};
std::span<const NamedException> named_exceptions();

// Syscalls whose decision depends on an argument (clone flags, socket family, ioctl request,
// personality, modes) are in no set either: seccomp_policy.h's argument_checked_syscalls()
// keeps each one's reason with the code that writes its rules.

}  // namespace moat::sandbox

// tests/unit/sandbox/seccomp_policy_test.cc: the seccomp table is consistent, compiles, is
// explained in full, and its compiled program is pinned by a golden file.
#include "sandbox/seccomp_policy.h"

#include <gtest/gtest.h>
#include <seccomp.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "sandbox/seccomp_sets.h"
#include "tests/support/sensitive_syscalls.h"

namespace moat::sandbox {
namespace {

TEST(SeccompSets, EverySyscallBelongsToExactlyOneSet) {
  std::set<std::string> seen;
  for (const auto& set : syscall_sets())
    for (const auto& e : set.entries) EXPECT_TRUE(seen.insert(e.name).second) << e.name;
  for (const auto& e : argument_checked_syscalls())
    EXPECT_TRUE(seen.insert(e.name).second) << e.name;
  for (const auto& e : named_exceptions()) EXPECT_TRUE(seen.insert(e.name).second) << e.name;
}

TEST(SeccompSets, EveryNameResolvesOnX8664) {
  for (const auto& set : syscall_sets())
    for (const auto& e : set.entries)
      EXPECT_NE(seccomp_syscall_resolve_name(e.name), __NR_SCMP_ERROR) << e.name;
  for (const auto& e : named_exceptions())
    EXPECT_NE(seccomp_syscall_resolve_name(e.name), __NR_SCMP_ERROR) << e.name;
}

TEST(SeccompSets, Clone3AndOpenat2AreNamedExceptionsWithEnosysNotObsolete) {
  std::set<std::string> exceptions;
  for (const auto& e : named_exceptions()) {
    EXPECT_EQ(e.errno_value, ENOSYS) << e.name;
    EXPECT_NE(std::string(e.reason).find("ENOSYS"), std::string::npos) << e.name;
    exceptions.insert(e.name);
  }
  EXPECT_EQ(exceptions, (std::set<std::string>{"clone3", "openat2"}));
  for (const auto& set : syscall_sets())
    for (const auto& e : set.entries) EXPECT_FALSE(exceptions.count(e.name)) << set.name;
}

TEST(SeccompSets, EveryDenyEntryHasAReason) {
  for (const auto& set : syscall_sets()) {
    EXPECT_STRNE(set.reason, "") << set.name;
    if (set.action == SetAction::kAllow) continue;
    for (const auto& e : set.entries) EXPECT_STRNE(e.reason, "") << set.name << "/" << e.name;
  }
}

// Every syscall that takes a file handle, a key, a namespace, a privileged clock, an LSM
// attribute or a quota is in a deny set with the errno the probes expect, or (when libseccomp
// cannot name it) below kFilterMaxSyscall, where the filter's step 4 answers ENOSYS.
TEST(SeccompSets, EveryHandleKeyNamespaceAndClockSyscallIsDenied) {
  for (const auto& s : moat::testing::kSensitiveSyscalls) {
    const int nr = seccomp_syscall_resolve_name(s.name);
    if (nr == __NR_SCMP_ERROR) {
      EXPECT_EQ(s.err, ENOSYS) << s.name;
      EXPECT_LT(s.nr, kFilterMaxSyscall) << s.name;
      continue;
    }
    EXPECT_EQ(nr, s.nr) << s.name;
    bool checked = false;
    for (const auto& e : argument_checked_syscalls()) checked |= std::string(e.name) == s.name;
    if (checked) continue;  // clone, unshare: their flag rules have probes of their own
    int denied_with = 0;
    for (const auto& set : syscall_sets())
      for (const auto& e : set.entries)
        if (std::string(e.name) == s.name)
          denied_with = set.action == SetAction::kErrno ? set.errno_value : -1;
    for (const auto& e : named_exceptions())
      if (std::string(e.name) == s.name) denied_with = e.errno_value;
    EXPECT_EQ(denied_with, s.err) << s.name << " (0: in no set, -1: allowed)";
  }
}

TEST(SeccompPolicy, CompilesForBothNetworkSettings) {
  auto off = compile_filter(false);
  auto on = compile_filter(true);
  ASSERT_TRUE(off) << off.error().message();
  ASSERT_TRUE(on) << on.error().message();
  EXPECT_GT(off->size(), 100u);
  EXPECT_LT(off->size(), 4096u);  // BPF_MAXINSNS
  EXPECT_NE(off->size(), on->size());
}

TEST(SeccompPolicy, ExplainListsEverySetAndEntry) {
  std::string text = explain_filter(false);
  for (const auto& set : syscall_sets()) {
    EXPECT_NE(text.find(std::string("[") + set.name + "]"), std::string::npos) << set.name;
    for (const auto& e : set.entries)
      EXPECT_NE(text.find(std::string("       ") + e.name), std::string::npos) << e.name;
  }
  for (const auto& r : argument_checked_syscalls())
    EXPECT_NE(text.find(std::string("       ") + r.name + ": " + r.reason), std::string::npos)
        << r.name;
  for (const auto& e : named_exceptions())
    EXPECT_NE(text.find(std::string("       ") + e.name + ": errno ENOSYS: " + e.reason),
              std::string::npos)
        << e.name;
  EXPECT_NE(text.find("AF_INET and AF_INET6 fail with EAFNOSUPPORT"), std::string::npos);
  EXPECT_NE(explain_filter(true).find("network granted"), std::string::npos);
}

// FNV-1a over the program's bytes: any change of the compiled filter changes it.
std::string fingerprint(const std::vector<sock_filter>& p) {
  std::uint64_t h = 1469598103934665603ULL;
  const auto* bytes = reinterpret_cast<const unsigned char*>(p.data());
  for (std::size_t i = 0; i < p.size() * sizeof(sock_filter); ++i) {
    h ^= bytes[i];
    h *= 1099511628211ULL;
  }
  std::ostringstream out;
  out << std::hex << h << " " << std::dec << p.size();
  return out.str();
}

// Regenerate after a deliberate change of the table or the policy with
//   MOAT_UPDATE_GOLDEN=1 build/tests/unit/sandbox/unit_sandbox --gtest_filter='*Golden*'
// and review the diff of tests/unit/sandbox/seccomp_filter.golden with the change.
TEST(SeccompPolicy, CompiledProgramMatchesGolden) {
  const char* root = std::getenv("MOAT_SOURCE_ROOT");
  std::string path =
      std::string(root ? root : MOAT_SOURCE_ROOT) + "/tests/unit/sandbox/seccomp_filter.golden";
  std::string actual = "network=off " + fingerprint(*compile_filter(false)) + "\n" + "network=on " +
                       fingerprint(*compile_filter(true)) + "\n";
  if (std::getenv("MOAT_UPDATE_GOLDEN") != nullptr) std::ofstream(path) << actual;
  std::ifstream in(path);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "the compiled seccomp filter changed; see the comment "
                                       "above this test to regenerate "
                                    << path;
}

}  // namespace
}  // namespace moat::sandbox

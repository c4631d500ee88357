// sandbox/landlock.cc: Landlock rulesets (see landlock.h). The constants are defined here
// because the system headers (Linux 6.1) predate ABI 3 to 7; values from
// include/uapi/linux/landlock.h and Documentation/userspace-api/landlock.rst.
#include "sandbox/landlock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "sandbox/sys.h"

namespace moat::sandbox {
namespace {

constexpr std::uint64_t kExecute = 1ULL << 0, kWriteFile = 1ULL << 1, kReadFile = 1ULL << 2,
                        kReadDir = 1ULL << 3, kRemoveDir = 1ULL << 4, kRemoveFile = 1ULL << 5,
                        kMakeChar = 1ULL << 6, kMakeDir = 1ULL << 7, kMakeReg = 1ULL << 8,
                        kMakeSock = 1ULL << 9, kMakeFifo = 1ULL << 10, kMakeBlock = 1ULL << 11,
                        kMakeSym = 1ULL << 12, kRefer = 1ULL << 13, kTruncate = 1ULL << 14,
                        kIoctlDev = 1ULL << 15;
constexpr std::uint64_t kScopeAbstractUnix = 1ULL << 0, kScopeSignal = 1ULL << 1;
constexpr unsigned kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;

struct RulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;
  std::uint64_t scoped;
};

struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

// What each ABI can handle: asking for more makes landlock_create_ruleset fail (EINVAL).
std::uint64_t handled_fs(int abi) {
  std::uint64_t fs = kExecute | kWriteFile | kReadFile | kReadDir | kRemoveDir | kRemoveFile |
                     kMakeChar | kMakeDir | kMakeReg | kMakeSock | kMakeFifo | kMakeBlock |
                     kMakeSym;
  if (abi >= 2) fs |= kRefer;
  if (abi >= 3) fs |= kTruncate;
  if (abi >= 5) fs |= kIoctlDev;
  return fs;
}

Result<void> add_rule(int ruleset, const std::string& path, std::uint64_t access) {
  auto dir = sys::open_path(path, O_PATH);
  if (!dir) return {};  // not in this view: nothing to grant
  // A file (a --bind of one) takes only the rights that act on files: the others are EINVAL.
  struct stat st {};
  if (::fstat(dir->get(), &st) == 0 && !S_ISDIR(st.st_mode))
    access &= kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;
  PathBeneathAttr attr{access, dir->get()};
  if (syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &attr, 0) != 0)
    return fail(Error::from_errno("landlock_add_rule", errno, path));
  return {};
}

}  // namespace

int landlock_abi() {
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

Result<LandlockRuleset> make_landlock_ruleset(const std::vector<std::string>& write_paths) {
  LandlockRuleset rs;
  rs.abi = landlock_abi();
  if (rs.abi == 0) return fail(Error::from_errno("landlock_create_ruleset", EOPNOTSUPP, "version"));
  const std::uint64_t fs = handled_fs(rs.abi);
  RulesetAttr attr{fs, 0, 0};
  std::size_t size = sizeof(std::uint64_t);  // ABI 1-3 know only handled_access_fs
  if (rs.abi >= 6) {
    attr.scoped = kScopeAbstractUnix | kScopeSignal;
    size = sizeof attr;
    rs.scoped = true;
  }
  MOAT_ASSIGN_OR_RETURN(rs.fd, sys::landlock_create_ruleset(&attr, size));
  // Reading and executing anything in the view: the mount view is the read policy.
  MOAT_TRY(add_rule(rs.fd.get(), "/", kExecute | kReadFile | kReadDir));
  // Devices: read, write and ioctl the few files /dev holds (terminals need ioctls).
  MOAT_TRY(add_rule(rs.fd.get(), "/dev", (kReadFile | kWriteFile | kIoctlDev | kTruncate) & fs));
  // /proc/self/... files are written by ordinary programs (oom_score_adj, comm).
  MOAT_TRY(add_rule(rs.fd.get(), "/proc", kReadFile | kWriteFile));
  for (const std::string& p : write_paths) MOAT_TRY(add_rule(rs.fd.get(), p, fs));
  return rs;
}

Result<void> enter_ptrace_scoped_domain() {
  if (landlock_abi() == 0)
    return fail(Error::from_errno("landlock_create_ruleset", EOPNOTSUPP, "version"));
  RulesetAttr attr{kMakeBlock, 0, 0};
  MOAT_ASSIGN_OR_RETURN(UniqueFd ruleset,
                        sys::landlock_create_ruleset(&attr, sizeof attr.handled_access_fs));
  if (syscall(SYS_landlock_restrict_self, ruleset.get(), 0) != 0)
    return fail(Error::from_errno("landlock_restrict_self", errno));
  return {};
}

int restrict_self_in_child(int ruleset_fd) {
  if (syscall(SYS_landlock_restrict_self, ruleset_fd, 0) != 0) return errno;
  return 0;
}

}  // namespace moat::sandbox

// sessions/audit_access.cc: a system moatd's per-user audit folders (see audit_access.h).
#include "sessions/audit_access.h"

#include <endian.h>
#include <linux/posix_acl.h>
#include <linux/posix_acl_xattr.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "sessions/jsonl.h"

namespace moat::sessions {
namespace {

constexpr const char* kAclXattr = "system.posix_acl_access";
constexpr mode_t kPassThrough = 0711;  // <audit_dir> and users/: search, no listing
constexpr mode_t kUserDir = 0750;      // the ACL's mask shows as the group bits
constexpr std::uint32_t kNoId = 0xffffffff;  // ACL_UNDEFINED_ID: the entries without a uid

struct AclEntry {
  std::uint16_t tag;
  std::uint16_t perm;
  std::uint32_t id;
};

// The xattr's bytes: the version, then the entries in the kernel's order (by tag, then id),
// little-endian (linux/posix_acl_xattr.h).
std::string acl_bytes(std::initializer_list<AclEntry> entries) {
  std::string out;
  auto put = [&out](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  const std::uint32_t version = htole32(POSIX_ACL_XATTR_VERSION);
  put(&version, sizeof version);
  for (const AclEntry& e : entries) {
    posix_acl_xattr_entry x{htole16(e.tag), htole16(e.perm), htole32(e.id)};
    put(&x, sizeof x);
  }
  return out;
}

Result<void> set_acl(const std::string& path, const std::string& bytes) {
  // lsetxattr: a symlink put in the way is refused (EPERM), not followed.
  if (::lsetxattr(path.c_str(), kAclXattr, bytes.data(), bytes.size(), 0) == 0) return {};
  const int err = errno;
  if (err == EOPNOTSUPP)
    return fail(Error::from_errno(
        "POSIX ACLs (the filesystem of a system moatd's audit folder must support them: "
        "mount it with acl; no user could read their audit logs)",
        err, path));
  return fail(Error::from_errno("setting the audit ACL", err, path));
}

// A directory of moatd's uid that only it may write: whoever could write a folder on the way
// could replace a user's log, or the folder that holds it.
Result<struct stat> own_dir(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return fail(Error::from_errno("lstat", errno, path));
  if (!S_ISDIR(st.st_mode))
    return fail(Error::from_errno("audit folder is not a directory", ENOTDIR, path));
  if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0)
    return fail(Error::from_errno(
        "audit folder must be owned by moatd's uid and writable by it alone", EPERM, path));
  return st;
}

}  // namespace

std::string user_audit_dir(const std::string& audit_dir, uid_t uid) {
  return audit_dir + "/users/" + std::to_string(uid);
}

Result<void> prepare_system_audit_dir(const std::string& audit_dir) {
  MOAT_TRY(make_dirs(audit_dir, kPassThrough));
  MOAT_ASSIGN_OR_RETURN(struct stat st, own_dir(audit_dir));
  // Search only: a user reaches users/UID by its name; names are not listed.
  if ((st.st_mode & 011) != 011 && ::chmod(audit_dir.c_str(), (st.st_mode & 07777) | 011) != 0)
    return fail(Error::from_errno("chmod", errno, audit_dir));
  const std::string users = audit_dir + "/users";
  if (::mkdir(users.c_str(), kPassThrough) != 0 && errno != EEXIST)
    return fail(Error::from_errno("mkdir", errno, users));
  MOAT_TRY(own_dir(users));
  // The probe: an ACL equal to mode 0711. A filesystem with ACLs takes it (and keeps only the
  // mode); one without refuses any, and so would refuse every user's.
  return set_acl(users, acl_bytes({{ACL_USER_OBJ, 7, kNoId},
                                   {ACL_GROUP_OBJ, 1, kNoId},
                                   {ACL_OTHER, 1, kNoId}}));
}

Result<std::string> make_user_audit_dir(const std::string& audit_dir, uid_t uid) {
  const std::string dir = user_audit_dir(audit_dir, uid);
  if (::mkdir(dir.c_str(), kUserDir) != 0 && errno != EEXIST)
    return fail(Error::from_errno("mkdir", errno, dir));
  MOAT_TRY(own_dir(dir));
  MOAT_TRY(grant_audit_read(dir, uid));
  return dir;
}

Result<void> grant_audit_read(const std::string& path, uid_t uid) {
  if (uid == 0) return {};
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return fail(Error::from_errno("lstat", errno, path));
  const auto owner = static_cast<std::uint16_t>((st.st_mode >> 6) & 7);
  const std::uint16_t reader = S_ISDIR(st.st_mode) ? (ACL_READ | ACL_EXECUTE) : ACL_READ;
  return set_acl(path, acl_bytes({{ACL_USER_OBJ, owner, kNoId},
                                  {ACL_USER, reader, uid},
                                  {ACL_GROUP_OBJ, 0, kNoId},
                                  {ACL_MASK, reader, kNoId},
                                  {ACL_OTHER, 0, kNoId}}));
}

}  // namespace moat::sessions

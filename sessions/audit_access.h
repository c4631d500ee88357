// sessions/audit_access.h: a system moatd's audit logs, one folder per local user, readable by
// that user and root only, never writable by the user (POSIX access ACLs, set as the
// system.posix_acl_access xattr: no libacl).
//
// <audit_dir>            root 0711  (others may pass through, not list)
// <audit_dir>/users      root 0711
// <audit_dir>/users/UID  root 0750, ACL user:UID:r-x, group ---: only UID and root list it
//   <date>/              root 0750, the same ACL
//     <session>.jsonl    root 0640, ACL user:UID:r--: only UID and root read it
// The user can neither change nor remove their tamper-evident log: every folder on the way is
// root's and writable by root alone. Another uid can neither list nor read any of it.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/result.h"

namespace moat::sessions {

// <audit_dir>/users/<uid>: where a system moatd writes `uid`'s sessions' logs (moatd) and where
// `moat audit show` looks for them (agent).
std::string user_audit_dir(const std::string& audit_dir, uid_t uid);

// At a system moatd's start: makes <audit_dir> (0711 when made; an existing one gets others'
// search bit so users reach their folders, nothing else) and <audit_dir>/users (0711), and
// checks that the filesystem takes POSIX ACLs: without them no user could read their logs
// (EOPNOTSUPP, naming the folder and the mount option).
Result<void> prepare_system_audit_dir(const std::string& audit_dir);

// Makes (or reuses) user_audit_dir(audit_dir, uid), root's, with the ACL above; refuses a
// folder that is not a directory of this uid (a symlink included). Returns its path.
Result<std::string> make_user_audit_dir(const std::string& audit_dir, uid_t uid);

// Sets `path`'s access ACL to: owner as its mode says, user `uid` read (and search for a
// directory), owning group and others nothing. uid 0 needs none (root reads everything).
Result<void> grant_audit_read(const std::string& path, uid_t uid);

}  // namespace moat::sessions

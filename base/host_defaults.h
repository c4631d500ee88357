// base/host_defaults.h: what moat assumes about the host it runs on (Debian conventions),
// written once: the identity root-started processes drop to and the programs' search PATH.
#pragma once

#include <sys/types.h>

namespace moat {

// nobody/nogroup: the host uid and gid a root moatd maps the sandbox's users to, and the
// identity a root-started agent loop drops to. Owns no files, so it can write none of ours.
inline constexpr uid_t kUnprivilegedUid = 65534;
inline constexpr gid_t kUnprivilegedGid = 65534;

// The PATH a sandboxed command starts with, the one moatd itself is given, and the one the
// policy resolves program names with when it has none: the same list, so that what the policy
// judges ("git" is /usr/bin/git) is what the worker runs.
inline constexpr const char* kSystemPath = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin";

}  // namespace moat

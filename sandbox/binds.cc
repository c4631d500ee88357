// sandbox/binds.cc: a hello's bind mounts checked against the policy (see binds.h).
#include "sandbox/binds.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iterator>

#include "base/log.h"
#include "base/sys.h"
#include "policy/paths.h"
#include "policy/protected_paths.h"
#include "sandbox/protect.h"
#include "sandbox/workspace.h"

namespace moat::sandbox {
namespace {

using policy::Access;
using policy::is_under;

// One path holds the other, or they are one: a bind there would show or shadow it.
bool overlaps(const std::string& a, const std::string& b) {
  return is_under(a, b) || is_under(b, a);
}

Error refused(const BindMount& b, const std::string& why) {
  return Error{EPERM, std::string(b.writable ? "--bind " : "--ro-bind ") + moat::quoted(b.source) +
                          " " + moat::quoted(b.target) + ": " + why};
}

// The places a target may not cover: what the session builds itself, and what a writable or
// foreign tree there would let the code plant (the system trees are where the policy trusts a
// program by its name; /proc and /dev are the kernel's; /run holds moat's masks).
Result<void> check_target(const BindMount& b, const BindPlaces& places,
                          const std::vector<SessionBind>& earlier) {
  std::vector<std::string> kept = {places.workspace, "/proc", "/dev", "/run"};
  kept.insert(kept.end(), places.system.begin(), places.system.end());
  for (const std::string& k : kept)
    if (overlaps(b.target, k)) return fail(refused(b, "the target would cover or lie inside " + k));
  if (is_under("/tmp", b.target)) return fail(refused(b, "the target would cover /tmp"));
  for (const SessionBind& e : earlier)
    if (e.target == b.target) return fail(refused(b, "another bind has the same target"));
  return {};
}

Result<void> check_own_files(const BindMount& b, const OwnFiles& own) {
  std::vector<std::string> mine = own.read_only;
  mine.insert(mine.end(), own.hidden.begin(), own.hidden.end());
  if (b.writable) mine.insert(mine.end(), own.home_startup.begin(), own.home_startup.end());
  for (const std::string& m : mine)
    if (overlaps(b.source, m)) return fail(refused(b, "it would show moat's own " + m));
  return {};
}

// The policy allows `access` to `path` outright (an ask is a refusal: no one answers at hello).
Result<void> check_access(const BindMount& b, const policy::Policy& p, const std::string& path,
                          Access access) {
  const policy::Decision d = p.decide_path(path, access);
  if (d.verdict == policy::Verdict::kAllow) return {};
  return fail(refused(b, std::string("the policy does not allow ") +
                             (access == Access::kRead ? "reading " : "writing ") + path + " (" +
                             d.deciding.id + (d.reason.empty() ? "" : ": " + d.reason) + ")"));
}

// The source, opened once: no symlink at any component, and still named by its path.
Result<UniqueFd> open_source(const BindMount& b, struct stat* st) {
  auto fd = sys::open_no_symlinks(b.source, O_PATH);
  if (!fd && fd.error().code == ELOOP)
    return fail(refused(b, "a component of the source is a symlink: name it by its real path"));
  if (!fd) return fail(refused(b, fd.error().message()));
  if (auto named = check_still_named(fd->get(), b.source); !named)
    return fail(refused(b, named.error().message()));
  if (::fstat(fd->get(), st) != 0) return fail(Error::from_errno("fstat", errno, b.source));
  if (!S_ISDIR(st->st_mode) && !S_ISREG(st->st_mode))
    return fail(refused(b, "the source is neither a directory nor a regular file"));
  return fd;
}

// What is masked inside a bound directory before every call: the paths the policy hides and,
// in a writable one, those it protects and those tools on the host run code from.
Result<void> plan_masks(const BindMount& b, const policy::Policy& p, SessionBind& out) {
  auto hidden = p.denied_globs_under(b.source, Access::kRead);
  if (!hidden) return fail(refused(b, hidden.error().message()));
  out.hidden = std::move(*hidden);
  if (!b.writable) return {};
  auto prot = p.denied_globs_under(b.source, Access::kWrite);
  if (!prot) return fail(refused(b, prot.error().message()));
  out.protected_paths.assign(std::begin(policy::kProtectedWorkspacePaths),
                             std::end(policy::kProtectedWorkspacePaths));
  for (const auto& h : host_executed_paths()) out.protected_paths.push_back(h.pattern);
  out.protected_paths.insert(out.protected_paths.end(), prot->begin(), prot->end());
  return {};
}

}  // namespace

Result<CheckedBinds> check_binds(const std::vector<BindMount>& binds, const policy::Policy& policy,
                                 const BindPlaces& places) {
  CheckedBinds out;
  for (const BindMount& b : binds) {
    if (!places.peer_is_moatd_user)
      return fail(refused(b,
                          "binds are taken only from the user moatd runs as (a private "
                          "moatd): moatd would open the source with its own rights"));
    MOAT_TRY(check_target(b, places, out.binds));
    MOAT_TRY(check_own_files(b, places.own));
    for (const std::string* path : {&b.source, &b.target}) {
      MOAT_TRY(check_access(b, policy, *path, Access::kRead));
      if (b.writable) MOAT_TRY(check_access(b, policy, *path, Access::kWrite));
    }
    struct stat st {};
    MOAT_ASSIGN_OR_RETURN(UniqueFd fd, open_source(b, &st));
    SessionBind s;
    s.source = b.source;
    s.target = b.target;
    s.writable = b.writable;
    s.is_dir = S_ISDIR(st.st_mode);
    s.fd = fd.get();
    if (s.is_dir) MOAT_TRY(plan_masks(b, policy, s));
    out.fds.push_back(std::move(fd));
    out.binds.push_back(std::move(s));
  }
  return out;
}

}  // namespace moat::sandbox

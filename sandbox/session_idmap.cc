// sandbox/session_idmap.cc: the session's idmapped trees (see session_idmap.h).
#include "sandbox/session_idmap.h"

#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>
#include <utility>

#include "base/sys.h"
#include "sandbox/sys.h"

namespace moat::sandbox {
namespace {

// The idmapped workspace (moatd as root): files of the workspace's owner appear owned by the
// sandbox's uid 0, and what the sandbox writes lands on disk as that owner. Without it the
// sandbox's unprivileged host uid could not write a root- or user-owned workspace.
// The owner mapped is the owner moatd checked through the workspace fd, never its path.
// A bind's source (moat sandbox exec --bind) is idmapped the same way, by the workspace's owner:
// inside, the sandbox's root is that user in every tree it sees.
Result<UniqueFd> make_idmapped_tree(int fd, const IdmapUserns& userns, const std::string& what) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd tree, sys::clone_tree_at(fd, "", true));
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<std::uint64_t>(userns.fd.get());
  if (mount_setattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0)
    return fail(Error::from_errno("mount_setattr(MOUNT_ATTR_IDMAP)", errno, what));
  return tree;
}

// `userns`, made for the workspace's owner unless it already is.
Result<void> userns_for(int workspace, const SandboxIds& ids, IdmapUserns& userns) {
  struct stat st;
  if (::fstat(workspace, &st) != 0) return fail(Error::from_errno("fstat", errno, "workspace"));
  const IdOwner owner{st.st_uid, st.st_gid};
  if (userns.fd.valid() && userns.owner == owner) return {};
  MOAT_ASSIGN_OR_RETURN(userns, make_idmap_userns(owner, ids));
  return {};
}

}  // namespace

std::optional<IdOwner> workspace_owner(const SessionConfig& config) {
  struct stat st;
  const int r = config.workspace_fd >= 0 ? ::fstat(config.workspace_fd, &st)
                                         : ::stat(config.workspace.c_str(), &st);
  if (r != 0) return std::nullopt;
  return IdOwner{st.st_uid, st.st_gid};
}

Result<IdmapUserns> make_idmap_userns(const IdOwner& owner, const SandboxIds& ids) {
  IdmapUserns out{owner, UniqueFd()};
  MOAT_ASSIGN_OR_RETURN(out.fd, make_userns_fd(IdMap{owner.uid, ids.uid.outside},
                                               IdMap{owner.gid, ids.gid.outside}));
  return out;
}

Result<UniqueFd> session_tree(int workspace, const SandboxIds& ids, const SessionConfig& config,
                              SkippedLayers& skipped, IdmapUserns& userns) {
  if (ids.rootless) return UniqueFd();
  Result<void> made = userns_for(workspace, ids, userns);
  auto idmapped = made ? make_idmapped_tree(workspace, userns, "workspace")
                       : Result<UniqueFd>(fail(made.error()));
  if (idmapped) return std::move(*idmapped);
  if (!config.allow_without.count("idmap")) return fail(idmapped.error().with_context("idmap"));
  skipped["idmap"] = idmapped.error().message();
  return UniqueFd();
}

Result<std::vector<UniqueFd>> bind_sources(const IdmapUserns& userns, const SandboxIds& ids,
                                           SessionConfig& config, bool idmapped,
                                           std::vector<UniqueFd>* checked) {
  std::vector<UniqueFd> out;
  for (SessionBind& b : config.binds) {
    MOAT_ASSIGN_OR_RETURN(UniqueFd dir, sys::duplicate(b.fd));
    checked->push_back(std::move(dir));
    Result<UniqueFd> fd = ids.rootless ? sys::duplicate(b.fd)
                          : idmapped   ? make_idmapped_tree(b.fd, userns, b.source)
                                       : sys::clone_tree_at(b.fd, "", true);
    if (!fd) return fail(fd.error().with_context("bind " + b.source));
    b.fd = fd->get();
    b.fd_is_tree = !ids.rootless;
    out.push_back(std::move(*fd));
  }
  return out;
}

}  // namespace moat::sandbox

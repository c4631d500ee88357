// sandbox/session_create.cc: Session::create (see session.h): it checks the config, prepares the
// trees the session binds (session_idmap.h), forks the namespace keeper (session_keeper.h),
// writes its id maps and cgroup, and hands what it built to LinuxSession (session_linux.h).
//
// Processes: moatd -> keeper (moatd's child, in the new namespaces but the host pid
// namespace; it only waits) -> init (pid 1 of the new pid namespace) -> workers. Each link
// has PR_SET_PDEATHSIG=SIGKILL, so moatd dying kills the keeper, which kills the init, and
// the kernel kills every process of a pid namespace whose init dies.
#include "sandbox/session.h"

#include <sys/socket.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/byte_strings.h"
#include "base/log.h"
#include "sandbox/cgroup.h"
#include "sandbox/ns_user.h"
#include "sandbox/session_idmap.h"
#include "sandbox/session_linux.h"
#include "sandbox/workspace.h"

namespace moat::sandbox {
namespace {

pid_t child_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  pid_t child = -1;
  in >> child;
  return child;
}

Result<std::string> recv_message(int ctl, UniqueFd* fd = nullptr) {
  char buf[65536];
  std::size_t nfds = 0;
  MOAT_ASSIGN_OR_RETURN(std::size_t n,
                        sys::recv_with_fds(ctl, buf, sizeof buf, fd, fd ? 1 : 0, &nfds));
  if (n == 0) return fail("session init exited during setup");
  return std::string(buf, n);
}

// The next control record, which must be `want`: a kError record fails with its message.
Result<std::string> expect_message(int ctl, CtlMsg want, UniqueFd* fd = nullptr) {
  // Checked in place, not moved out first: GCC 12 then reports the moved-from string's bytes as
  // maybe used uninitialised (a false positive of -Wmaybe-uninitialized).
  Result<std::string> msg = recv_message(ctl, fd);
  if (!msg) return msg;
  if (msg->empty() || (*msg)[0] != ctl_byte(want)) return fail(Error::msg(msg->substr(1)));
  msg->erase(0, 1);
  return msg;
}

// The caller's workspace fd (a copy: the session keeps it), or the path opened here once.
Result<UniqueFd> open_session_workspace(const SessionConfig& config) {
  if (config.workspace_fd >= 0) return sys::duplicate(config.workspace_fd);
  auto opened = open_workspace(config.workspace, std::nullopt);
  if (!opened) return fail(opened.error().with_context("workspace " + config.workspace));
  return std::move(opened->fd);
}

Result<void> check_allow_without(const std::set<std::string>& names) {
  for (const std::string& name : names) {
    bool known = false;
    for (const char* layer : kSkippableLayers) known = known || name == layer;
    if (known) continue;
    bool is_namespace = false;
    for (const auto& ns : kNamespaces) is_namespace = is_namespace || name == ns.name;
    if (is_namespace)
      return fail("allow_without: " + name + " cannot be skipped: the session is its namespaces");
    return fail("allow_without: " + moat::quoted(name) +
                " is not a layer that can be skipped (seccomp, landlock, idmap, cgroup)");
  }
  return {};
}

// The keeper joins the session's cgroup before it forks the init: every process of the
// session inherits it, and none can leave (cgroup.procs of the parent is not writable).
// Inactive when cgroups are unavailable or fail and the policy allows running without. What
// was made goes into *cgroup even on a failure: the caller holds it past the keeper's reaping,
// so it is removed once its processes are gone.
Result<void> session_cgroup(pid_t keeper, const SessionConfig& config, SkippedLayers& skipped,
                            ScopedCgroup* cgroup) {
  auto made = ScopedCgroup::create("moat-" + std::to_string(keeper), config.limits);
  if (made && !made->active()) {
    skipped["cgroup"] = ScopedCgroup::unavailable_reason();
    return {};
  }
  Error err = made ? Error() : made.error();
  if (made) {
    auto attached = made->attach(keeper);
    *cgroup = std::move(*made);
    if (attached) return {};
    err = attached.error();
  }
  if (!config.allow_without.count("cgroup")) return fail(err.with_context("cgroup"));
  skipped["cgroup"] = err.message();
  return {};
}

// What `describe()` reports: the init's own layers plus what moatd set up around it.
SessionDescription describe_session(InitLayers layers, const SandboxIds& ids,
                                    const ScopedCgroup& cgroup, const SkippedLayers& skipped) {
  SessionDescription d;
  d.layers = std::move(layers);
  for (const auto& ns : kNamespaces) d.namespaces.push_back(ns.name);
  d.rootless = ids.rootless;
  d.uid_map = ids.uid.line().substr(0, ids.uid.line().size() - 1);
  d.idmap = !ids.rootless && !skipped.count("idmap");
  d.cgroup = cgroup.active() && !skipped.count("cgroup");
  if (cgroup.active()) d.cgroup_dirs = cgroup.dirs();
  for (const auto& [layer, why] : skipped) d.layers.skipped[layer] = why;
  return d;
}

// The keeper's handshake: it unshared, moatd moves it into the cgroup and writes its id maps,
// and the init reports kReady (with the proxy's listener when one was asked for). Any failure
// leaves the keeper to its owner, which reaps it.
Result<void> start_session(SessionParts& parts, const SandboxIds& ids, SkippedLayers& skipped) {
  const int ctl = parts.ctl.get();
  const pid_t keeper = parts.keeper->pid();
  MOAT_TRY(expect_message(ctl, CtlMsg::kUnshared));
  MOAT_TRY(session_cgroup(keeper, parts.config, skipped, &parts.cgroup));
  if (auto maps = write_id_maps_in_parent(keeper, ids.uid, ids.gid); !maps)
    return fail(maps.error().with_context("user_ns"));
  const char go = ctl_byte(CtlMsg::kMapsWritten);
  (void)sys::write_all(ctl, &go, 1);
  MOAT_ASSIGN_OR_RETURN(std::string ready,
                        expect_message(ctl, CtlMsg::kReady, &parts.net_listener));
  MOAT_ASSIGN_OR_RETURN(InitLayers layers, init_layers_from_text(ready));
  parts.describe = describe_session(std::move(layers), ids, parts.cgroup, skipped);
  parts.init = child_of(keeper);
  return {};
}

}  // namespace

Result<std::unique_ptr<Session>> Session::create(const SessionConfig& in) {
  SessionParts parts;
  parts.config = in;
  SessionConfig& config = parts.config;
  MOAT_TRY(check_allow_without(config.allow_without));
  // Resolved once: from here on the session uses only this fd, never the path again.
  MOAT_ASSIGN_OR_RETURN(parts.workspace, open_session_workspace(in));
  config.workspace_fd = -1;  // borrowed from the caller: not valid in the session's lifetime
  const SandboxIds ids = choose_sandbox_ids(config.unprivileged_uid, config.unprivileged_gid);
  SkippedLayers skipped;
  MOAT_ASSIGN_OR_RETURN(UniqueFd tree, session_tree(parts.workspace.get(), ids, config, skipped));
  MOAT_ASSIGN_OR_RETURN(std::vector<UniqueFd> bind_fds,
                        bind_sources(parts.workspace.get(), ids, config, !skipped.count("idmap"),
                                     &parts.bind_dirs));
  MOAT_ASSIGN_OR_RETURN(sys::FdPair ctl, sys::make_socketpair(SOCK_SEQPACKET));
  parts.created = SessionClock::now();
  // The filter is ready by now when moatd started compiling it (precompile_filter); waited for
  // before the fork, since the compiling thread does not exist in the child. The child keeps
  // only its end of ctl (keep_only_session_fds).
  const KeeperStart start{&config,
                          ctl.second.get(),
                          tree.valid() ? tree.get() : -1,
                          parts.workspace.get(),
                          getpid(),
                          precompiled_filter(config.network)};
  MOAT_ASSIGN_OR_RETURN(parts.keeper, Keeper::start(start));
  ctl.second.reset();
  tree.reset();
  bind_fds.clear();
  parts.ctl = std::move(ctl.first);
  MOAT_TRY(start_session(parts, ids, skipped));
  return std::unique_ptr<Session>(std::make_unique<LinuxSession>(std::move(parts)));
}

}  // namespace moat::sandbox

// sandbox/session_create.cc: Session::create (see session.h): it checks the config, prepares the
// trees the session binds (session_idmap.h), forks the namespace keeper (session_keeper.h),
// writes its id maps and cgroup, and hands what it built to LinuxSession (session_linux.h).
//
// Processes: moatd -> keeper (moatd's child, in the new namespaces but the host pid
// namespace; it only waits) -> init (pid 1 of the new pid namespace) -> workers. Each link
// has PR_SET_PDEATHSIG=SIGKILL, so moatd dying kills the keeper, which kills the init, and
// the kernel kills every process of a pid namespace whose init dies.
#include "sandbox/session.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "base/byte_strings.h"
#include "base/log.h"
#include "sandbox/cgroup.h"
#include "sandbox/ns_mount.h"
#include "sandbox/ns_user.h"
#include "sandbox/session_idmap.h"
#include "sandbox/session_linux.h"
#include "sandbox/session_pool_config.h"
#include "sandbox/session_prebuilt.h"
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

Error quota_unenforced(const UserCgroup& user, const std::string& why) {
  return Error::msg("cgroup: [quota] memory and pids in " + user.file + " cannot be held for uid " +
                    std::to_string(user.uid) + ": " + why +
                    "; a system moatd runs as root (dist/systemd), or remove them from the file, "
                    "or start moatd with --allow-without cgroup");
}

// The keeper joins the session's cgroup before it forks the init: every process of the
// session inherits it, and none can leave (cgroup.procs of the parent is not writable).
// Inactive when cgroups are unavailable or fail and the policy allows running without. What
// was made goes into *cgroup even on a failure: the caller holds it past the keeper's reaping,
// so it is removed once its processes are gone.
// A user's quota (moatd.toml) no cgroup can hold refuses the session, unless moatd was told
// it may run without cgroup (--allow-without cgroup): a quota must not silently bound nothing.
Result<void> session_cgroup(pid_t keeper, const SessionConfig& config, SkippedLayers& skipped,
                            ScopedCgroup* cgroup) {
  auto made =
      ScopedCgroup::create("moat-" + std::to_string(keeper), config.limits, config.user_cgroup);
  if (made && !made->active()) {
    const std::string why = ScopedCgroup::unavailable_reason();
    if (config.user_cgroup.any() && !config.allow_without.count("cgroup"))
      return fail(quota_unenforced(config.user_cgroup, why));
    skipped["cgroup"] = why;
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

// The keeper's first half: it unshared, moatd moves it into the cgroup and writes its id maps,
// and lets it become root inside. Any failure leaves the keeper to its owner, which reaps it.
Result<void> map_keeper(int ctl, pid_t keeper, const SessionConfig& config, const SandboxIds& ids,
                        SkippedLayers& skipped, ScopedCgroup* cgroup) {
  MOAT_TRY(expect_message(ctl, CtlMsg::kUnshared));
  MOAT_TRY(session_cgroup(keeper, config, skipped, cgroup));
  if (auto maps = write_id_maps_in_parent(keeper, ids.uid, ids.gid); !maps)
    return fail(maps.error().with_context("user_ns"));
  const char go = ctl_byte(CtlMsg::kMapsWritten);
  (void)sys::write_all(ctl, &go, 1);
  return {};
}

// The second half: the init reports kReady (with the proxy's listener when one was asked for).
Result<void> await_ready(SessionParts& parts, const SandboxIds& ids, const SkippedLayers& skipped) {
  MOAT_ASSIGN_OR_RETURN(std::string ready,
                        expect_message(parts.ctl.get(), CtlMsg::kReady, &parts.net_listener));
  MOAT_ASSIGN_OR_RETURN(InitLayers layers, init_layers_from_text(ready));
  parts.describe = describe_session(std::move(layers), ids, parts.cgroup, skipped);
  parts.init = child_of(parts.keeper->pid());
  return {};
}

Result<void> start_session(SessionParts& parts, const SandboxIds& ids, SkippedLayers& skipped) {
  MOAT_TRY(map_keeper(parts.ctl.get(), parts.keeper->pid(), parts.config, ids, skipped,
                      &parts.cgroup));
  return await_ready(parts, ids, skipped);
}

// What the hello's session binds, prepared as Session::create does: the workspace held by fd,
// its tree (moatd as root) and the binds' sources.
struct BoundTrees {
  UniqueFd tree;
  std::vector<UniqueFd> bind_fds;
};

Result<BoundTrees> bound_trees(SessionParts& parts, const SandboxIds& ids, SkippedLayers& skipped,
                               IdmapUserns userns) {
  SessionConfig& config = parts.config;
  MOAT_TRY(check_allow_without(config.allow_without));
  // Resolved once: from here on the session uses only this fd, never the path again.
  MOAT_ASSIGN_OR_RETURN(parts.workspace, open_session_workspace(config));
  config.workspace_fd = -1;  // borrowed from the caller: not valid in the session's lifetime
  BoundTrees out;
  MOAT_ASSIGN_OR_RETURN(out.tree,
                        session_tree(parts.workspace.get(), ids, config, skipped, userns));
  MOAT_ASSIGN_OR_RETURN(out.bind_fds, bind_sources(userns, ids, config, !skipped.count("idmap"),
                                                   &parts.bind_dirs));
  return out;
}

// kFinish: the config, with the workspace, its tree (when moatd made one) and the binds' fds.
Result<void> send_finish(int ctl, const SessionParts& parts, const BoundTrees& trees) {
  const std::string text = session_config_text(parts.config);
  if (text.empty()) return fail("pool: a path of the session is not UTF-8");
  std::string msg = std::string(1, ctl_byte(CtlMsg::kFinish)) + (trees.tree.valid() ? '1' : '0');
  msg += text;
  std::vector<int> fds = {parts.workspace.get()};
  if (trees.tree.valid()) fds.push_back(trees.tree.get());
  for (const UniqueFd& fd : trees.bind_fds) fds.push_back(fd.get());
  if (msg.size() > kMaxFinishBytes || fds.size() > kMaxFinishFds)
    return fail("pool: the session's config is too large to send");
  return sys::send_with_fds(ctl, msg.data(), msg.size(), fds.data(), fds.size());
}

}  // namespace

Result<std::unique_ptr<PrebuiltSession>> prebuild_session(const SessionConfig& shape,
                                                          std::optional<IdOwner> owner) {
  auto pre = std::make_unique<PrebuiltSession>();
  pre->shape = shape;
  pre->shape.binds.clear();
  MOAT_TRY(check_allow_without(shape.allow_without));
  const SandboxIds ids = choose_sandbox_ids(shape.unprivileged_uid, shape.unprivileged_gid);
  MOAT_ASSIGN_OR_RETURN(sys::FdPair ctl, sys::make_socketpair(SOCK_SEQPACKET));
  pre->init_ahead = !ids.rootless;
  if (pre->init_ahead) {
    pre->read_only_stamp = read_only_paths_stamp(shape.read_only);
    if (auto watch = watch_mount_table(); watch) pre->mount_watch = std::move(*watch);
  }
  const KeeperStart start{&pre->shape, ctl.second.get(), -1, -1, getpid(), true, pre->init_ahead};
  MOAT_ASSIGN_OR_RETURN(pre->keeper, Keeper::start(start));
  ctl.second.reset();
  pre->ctl = std::move(ctl.first);
  MOAT_TRY(map_keeper(pre->ctl.get(), pre->keeper->pid(), pre->shape, ids, pre->skipped,
                      &pre->cgroup));
  // Not made is no failure: the hello makes its own, and says why if it cannot either.
  if (owner && !ids.rootless)
    if (auto userns = make_idmap_userns(*owner, ids); userns) pre->userns = std::move(*userns);
  return pre;
}

bool is_waiting(const PrebuiltSession& pre) {
  pollfd p{pre.ctl.get(), POLLIN, 0};
  if (::poll(&p, 1, 0) != 0) return false;  // an error record, or the keeper's end closed
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pre.keeper->pid()), &info,
                  WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == 0;
}

// A view built ahead (moatd as root) takes a workspace and binds where its system paths stay
// below nothing of them (ns_mount.h fits_staged_view); a rootless pooled keeper builds the
// whole view at the hello.
bool fits_view_built_ahead(const SessionConfig& config) {
  if (geteuid() != 0) return true;
  std::vector<std::string> targets = {config.workspace};
  for (const SessionBind& b : config.binds) targets.push_back(b.target);
  return fits_staged_view(config.read_only, targets);
}

bool fits_shape(const SessionConfig& config, const SessionConfig& shape) {
  return config.unprivileged_uid == shape.unprivileged_uid &&
         config.unprivileged_gid == shape.unprivileged_gid &&
         config.allow_without == shape.allow_without && config.handler == shape.handler &&
         config.limits.memory_bytes == shape.limits.memory_bytes &&
         config.limits.pids == shape.limits.pids && config.user_cgroup == shape.user_cgroup &&
         config.read_only == shape.read_only && config.hostname == shape.hostname &&
         config.limits.tmp_size == shape.limits.tmp_size && fits_view_built_ahead(config);
}

Result<std::unique_ptr<Session>> finish_session(std::unique_ptr<PrebuiltSession> pre,
                                                const SessionConfig& in) {
  if (!fits_shape(in, pre->shape)) return fail("pool: the session does not fit the pooled one");
  if (pre->init_ahead && (read_only_paths_stamp(in.read_only) != pre->read_only_stamp ||
                          mount_table_changed(pre->mount_watch.get())))
    return fail("pool: a read-only path or a mount changed on the host since the view was built "
                "ahead");
  SessionParts parts;
  parts.config = in;
  const SandboxIds ids = choose_sandbox_ids(in.unprivileged_uid, in.unprivileged_gid);
  SkippedLayers skipped = pre->skipped;
  MOAT_ASSIGN_OR_RETURN(BoundTrees trees, bound_trees(parts, ids, skipped, std::move(pre->userns)));
  // An init built ahead attaches only moatd's trees (idmap skipped: none; the hello is built
  // fresh by the pool's caller).
  if (pre->init_ahead && !trees.tree.valid())
    return fail("pool: the session's init was built ahead for an idmapped workspace tree");
  parts.cgroup = std::move(pre->cgroup);
  parts.keeper = std::move(pre->keeper);
  parts.ctl = std::move(pre->ctl);
  parts.created = SessionClock::now();
  MOAT_TRY(send_finish(parts.ctl.get(), parts, trees));
  trees = BoundTrees();
  MOAT_TRY(await_ready(parts, ids, skipped));
  parts.describe.pooled = true;
  return std::unique_ptr<Session>(std::make_unique<LinuxSession>(std::move(parts)));
}

Result<std::unique_ptr<Session>> Session::create(const SessionConfig& in) {
  SessionParts parts;
  parts.config = in;
  const SandboxIds ids = choose_sandbox_ids(in.unprivileged_uid, in.unprivileged_gid);
  SkippedLayers skipped;
  MOAT_ASSIGN_OR_RETURN(BoundTrees trees, bound_trees(parts, ids, skipped, IdmapUserns()));
  MOAT_ASSIGN_OR_RETURN(sys::FdPair ctl, sys::make_socketpair(SOCK_SEQPACKET));
  parts.created = SessionClock::now();
  // The child keeps only its end of ctl (keep_only_session_fds).
  const KeeperStart start{&parts.config,
                          ctl.second.get(),
                          trees.tree.valid() ? trees.tree.get() : -1,
                          parts.workspace.get(),
                          getpid(),
                          false};
  MOAT_ASSIGN_OR_RETURN(parts.keeper, Keeper::start(start));
  ctl.second.reset();
  trees = BoundTrees();
  parts.ctl = std::move(ctl.first);
  MOAT_TRY(start_session(parts, ids, skipped));
  return std::unique_ptr<Session>(std::make_unique<LinuxSession>(std::move(parts)));
}

}  // namespace moat::sandbox

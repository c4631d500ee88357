// sandbox/session_init.cc: the session's init (see session_init.h). Single-threaded: one poll
// loop over moatd's control socket, SIGCHLD (signalfd), the session timer and the channels
// of running calls. Workers are forked from here, so they may use the heap until exec.
#include "sandbox/session_init.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "base/byte_strings.h"
#include "base/host_defaults.h"
#include "base/sys.h"
#include "base/unique_fd.h"
#include "policy/writable_roots.h"
#include "sandbox/landlock.h"
#include "sandbox/ns_mount.h"
#include "sandbox/ns_net.h"
#include "sandbox/protect.h"
#include "sandbox/seccomp_programs.h"
#include "sandbox/session_description.h"
#include "sandbox/session_pool_config.h"
#include "sandbox/worker.h"

namespace moat::sandbox {
namespace {

constexpr char kInitName[] = "moat-init";

// /proc/1/cmdline is readable by every process of the session (no ptrace check), and the init
// is a fork of moatd, so it would show moatd's argv: its socket, audit and state directories,
// its flags. The kernel reads cmdline from this process's own argument area, whose bounds are
// fields 48 and 49 of /proc/self/stat (proc(5)): write a neutral name there and zero the rest.
// The last byte stays NUL, so the kernel does not read on into the environment (setproctitle's
// case). PR_SET_NAME does the same for /proc/1/comm.
Result<void> neutralize_cmdline() {
  prctl(PR_SET_NAME, kInitName, 0, 0, 0);
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path("/proc/self/stat", O_RDONLY));
  MOAT_ASSIGN_OR_RETURN(std::string stat, sys::read_to_end(fd.get(), 4096));
  const std::size_t paren = stat.rfind(')');  // comm may hold spaces and parentheses
  if (paren == std::string::npos) return fail("/proc/self/stat: no comm field");
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  unsigned long arg_start = 0, arg_end = 0;
  for (int n = 3; fields >> field && n <= 49; ++n) {  // the first field after comm is field 3
    if (n == 48) arg_start = std::stoul(field);
    if (n == 49) arg_end = std::stoul(field);
  }
  if (arg_start == 0 || arg_end <= arg_start) return fail("/proc/self/stat: no argument area");
  char* area = reinterpret_cast<char*>(arg_start);
  const std::size_t size = arg_end - arg_start;
  std::memset(area, 0, size);
  std::memcpy(area, kInitName, std::min(size - 1, sizeof kInitName - 1));
  return {};
}

// What a call's worker needs that must outlive the fork: the strings its char* arrays point to.
struct PreparedCall {
  WorkerKind kind = WorkerKind::kExec;
  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;
  std::string cwd, path_env, create_path;
  Step skip = Step::kNone;
  bool terminal = false;  // the worker takes its first tty among fds 0-2 as controlling tty
  CallLimits limits;      // its own, below the session's (rlimits.h narrowed)
};

struct Running {
  pid_t pid;
  UniqueFd channel;
};

void send_record(int fd, ChannelMsg type, std::int32_t value, int pass_fd = -1,
                 pid_t about_pid = 0) {
  ChannelRecord rec{type, value};
  auto sent = sys::send_with_fds(fd, &rec, sizeof rec, &pass_fd, pass_fd >= 0 ? 1 : 0, about_pid);
  // EPERM: naming another process needs CAP_SYS_ADMIN over this pid namespace; without it
  // moatd still gets the pidfd and reads the pid from it while the worker lives.
  if (!sent && about_pid > 0)
    sent = sys::send_with_fds(fd, &rec, sizeof rec, &pass_fd, pass_fd >= 0 ? 1 : 0);
  (void)sent;  // moatd gone: the channel's EOF kills the worker on the next loop
}

// The environment is built, never inherited: nothing of moatd's (API keys) can reach it.
std::vector<std::string> build_env(const SessionConfig& config,
                                   const std::map<std::string, std::string>& extra,
                                   std::string& path_env) {
  std::map<std::string, std::string> env = {
      {"PATH", kSystemPath}, {"HOME", "/tmp"}, {"LANG", "C.UTF-8"}, {"TERM", "dumb"}};
  for (const auto& [k, v] : config.env) env[k] = v;
  for (const auto& [k, v] : extra) env[k] = v;
  path_env = env["PATH"];
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

// In the new view: the sandbox's HOME is /tmp (build_env), its own tmpfs, empty until now.
Result<void> write_home_gitconfig(const std::string& text) {
  if (text.empty()) return {};
  UniqueFd fd(::open("/tmp/.gitconfig", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return fail(Error::from_errno("open", errno, "/tmp/.gitconfig"));
  if (!sys::write_all(fd.get(), text.data(), text.size()))
    return fail(Error::from_errno("write", errno, "/tmp/.gitconfig"));
  return {};
}

PreparedCall prepare(const SessionConfig& config, CallRequest req) {
  PreparedCall call;
  call.kind = req.kind;
  call.skip = req.skip.empty() ? Step::kNone : step_from_name(req.skip.c_str());
  call.cwd = req.cwd.empty() ? config.workspace : std::move(req.cwd);
  call.create_path = std::move(req.path);
  call.terminal = req.terminal;
  call.limits = req.limits;
  if (call.kind == WorkerKind::kExec) {
    call.args = std::move(req.argv);
    call.env = build_env(config, req.env, call.path_env);
    for (auto& a : call.args) call.argv.push_back(a.data());
    for (auto& e : call.env) call.envp.push_back(e.data());
    call.argv.push_back(nullptr);
    call.envp.push_back(nullptr);
  }
  return call;
}

class Init {
 public:
  explicit Init(const InitContext& ctx) : ctx_(ctx), config_(ctx.config) {}

  Result<void> setup();
  Result<void> setup_own();
  MountPlan mount_plan() const;
  Result<void> setup_rest();  // once the view has its workspace
  [[noreturn]] void serve();
  // Lossless and never throwing: an error message in it may name a path that is not UTF-8.
  std::string describe() const { return dump_lossless(to_json(layers_)); }
  // Sent to moatd with kReady, then closed here (see SessionConfig::net_proxy_port).
  UniqueFd net_listener_;

 private:
  Result<void> layer_missing(const char* layer, std::optional<bool> InitLayers::*applied,
                             const Error& error);
  void setup_filters();
  Result<void> setup_landlock();
  void on_request();
  void report_placeholders(const std::vector<Placeholder>& created) const;
  Result<void> mask_binds(std::vector<Placeholder>* created) const;
  Result<void> start_call(UniqueFd channel, UniqueFd status, UniqueFd io,
                          const UniqueFd* stdio = nullptr);
  WorkerPlan plan_for(const PreparedCall& call, int io, int status, const UniqueFd* stdio) const;
  void on_sigchld();
  void kill_leftovers() const;
  std::vector<pid_t> own_children() const;
  void on_channel(int fd);
  void kill_group(pid_t pid) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);  // before its setsid the worker is not yet a group leader
  }

  const InitContext& ctx_;
  const SessionConfig& config_;
  const BpfProgram* filter_ = nullptr;
  const BpfProgram* exec_watch_ = nullptr;
  std::optional<LandlockRuleset> landlock_;
  InitLayers layers_;  // what setup applied and skipped, sent with kReady
  std::map<int, Running> calls_;  // by channel fd
  LinkCache link_cache_;          // the hard-link check's per-directory cache, kept between calls
  UniqueFd sigchld_, timer_;
  UniqueFd children_;  // /proc/1/task/1/children: the init's children, re-read on each use
};

// A layer that could not be applied fails the session closed, unless the operator lets
// sessions run without it (allow_without); then the session's description says it is off
// and why.
Result<void> Init::layer_missing(const char* layer, std::optional<bool> InitLayers::*applied,
                                 const Error& error) {
  if (!config_.allow_without.count(layer)) return fail(error.with_context(layer));
  layers_.*applied = false;
  layers_.skipped[layer] = error.message();
  return {};
}

// Built with moat (seccomp_programs.h): nothing to compile, nothing to fail. Each worker installs
// the filter; each exec worker the exec watch before it (worker.cc kExecWatch), moatd serves it.
void Init::setup_filters() {
  filter_ = &session_filter(config_.network);
  exec_watch_ = &exec_watch_filter();
  layers_.seccomp = true;
  layers_.exec_watch = true;
}

Result<void> Init::setup_landlock() {
  auto rs = make_landlock_ruleset(landlock_write_paths(config_));
  if (!rs) return layer_missing("landlock", &InitLayers::landlock, rs.error());
  layers_.landlock = true;
  layers_.landlock_abi = rs->abi;
  layers_.landlock_scoped = rs->scoped;
  landlock_ = std::move(*rs);
  return {};
}

// What does not depend on the hello: moatd's memory is this process's memory, so other
// processes of the session may not read it through /proc or ptrace (they also lack the
// capabilities it has); its name, hostname and loopback.
Result<void> Init::setup_own() {
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  MOAT_TRY(neutralize_cmdline());
  if (sethostname(config_.hostname.data(), config_.hostname.size()) != 0)
    return fail(Error::from_errno("sethostname", errno).with_context("uts_ns"));
  if (auto lo = bring_up_loopback(); !lo) return fail(lo.error().with_context("net_ns"));
  return {};
}

MountPlan Init::mount_plan() const {
  MountPlan plan;
  plan.workspace = config_.workspace;
  plan.read_only = config_.read_only.empty() ? default_read_only_paths() : config_.read_only;
  plan.tmp_size = config_.limits.tmp_size;
  plan.hostname = config_.hostname;
  plan.workspace_tree = ctx_.workspace_tree;
  for (const SessionBind& b : config_.binds)
    plan.binds.push_back({b.source, b.target, b.writable, b.is_dir, b.fd_is_tree, b.fd});
  return plan;
}

Result<void> Init::setup() {
  MOAT_TRY(setup_own());
  if (auto view = build_view_in_init(mount_plan()); !view)
    return fail(view.error().with_context("mount"));
  return setup_rest();
}

// From the view's workspace on: what depends on the hello.
Result<void> Init::setup_rest() {
  if (config_.net_proxy_port != 0) {
    auto listener = listen_on_loopback(config_.net_proxy_port);
    if (!listener) return fail(listener.error().with_context("net_proxy"));
    net_listener_ = std::move(*listener);
  }
  MOAT_TRY(write_home_gitconfig(config_.home_gitconfig));
  if (ctx_.workspace_tree >= 0) close(ctx_.workspace_tree);
  for (const SessionBind& b : config_.binds) close(b.fd);
  setup_filters();
  MOAT_TRY(setup_landlock());
  MOAT_ASSIGN_OR_RETURN(sigchld_, sys::signalfd_for_sigchld());
  // Opened once, after the view's /proc (this pid namespace's) is mounted. Without it
  // (a kernel without CONFIG_PROC_CHILDREN) own_children() scans /proc instead.
  if (auto children = sys::open_path("/proc/1/task/1/children", O_RDONLY))
    children_ = std::move(*children);
  if (config_.limits.session_wall_time_s > 0) {
    MOAT_ASSIGN_OR_RETURN(timer_, sys::timerfd_after(config_.limits.session_wall_time_s));
  }
  return {};
}

void Init::serve() {
  for (;;) {
    std::vector<pollfd> fds = {{ctx_.ctl_fd, POLLIN, 0}, {sigchld_.get(), POLLIN, 0}};
    if (timer_.valid()) fds.push_back({timer_.get(), POLLIN, 0});
    for (const auto& [fd, call] : calls_) fds.push_back({fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR
    if (fds[1].revents) on_sigchld();
    if (timer_.valid() && fds[2].revents) {
      kill(-1, SIGKILL);  // the session's wall time: everything but us, then us
      _exit(0);
    }
    for (std::size_t i = timer_.valid() ? 3 : 2; i < fds.size(); ++i)
      if (fds[i].revents) on_channel(fds[i].fd);
    if (fds[0].revents & (POLLHUP | POLLERR)) _exit(0);  // moatd is gone: so is the session
    if (fds[0].revents & POLLIN) on_request();
  }
}

void Init::on_request() {
  char kind = 0;
  UniqueFd fds[5];
  std::size_t nfds = 0;
  auto n = sys::recv_with_fds(ctx_.ctl_fd, &kind, 1, fds, 5, &nfds);
  if (!n || *n == 0) _exit(0);
  const bool stdio = kind == ctl_byte(CtlMsg::kCallStdio);
  if (nfds != (stdio ? kCallStdioFds : kCallFds)) return;  // malformed: the dropped fds close, moatd sees EOF
  // With stdio the third fd is the command's stdin, not an output pipe.
  auto started = start_call(std::move(fds[0]), std::move(fds[1]),
                            stdio ? UniqueFd() : std::move(fds[2]), stdio ? &fds[2] : nullptr);
  (void)started;  // failures were reported on the channel
}

// The worker's plan: pointers into `call` and this init's layers, which outlive the fork.
WorkerPlan Init::plan_for(const PreparedCall& call, int io, int status,
                          const UniqueFd* stdio) const {
  WorkerPlan plan;
  plan.kind = call.kind;
  plan.argv = call.argv.data();
  plan.envp = call.envp.data();
  plan.path_env = call.path_env.c_str();
  plan.cwd = call.cwd.c_str();
  plan.create_path = call.create_path.c_str();
  plan.handler = config_.handler;
  plan.io_fd = io;
  for (int i = 0; stdio != nullptr && i < 3; ++i) plan.stdio[i] = stdio[i].get();
  plan.terminal = stdio != nullptr && call.terminal;
  plan.status_fd = status;
  plan.landlock_fd = landlock_ ? landlock_->fd.get() : -1;
  plan.filter = filter_;
  plan.exec_watch = exec_watch_;
  plan.rlimits = plan_rlimits(narrowed(config_.limits, call.limits));
  plan.skip = call.skip;
  return plan;
}

Result<void> Init::start_call(UniqueFd channel, UniqueFd status, UniqueFd io,
                              const UniqueFd* stdio) {
  timeval tv{10, 0};  // a stuck moatd thread must not stall every other call
  setsockopt(channel.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  auto request = read_call_request(channel.get());
  if (!request) {
    send_record(channel.get(), ChannelMsg::kFailed, EINVAL);
    return fail(request.error());
  }
  const PreparedCall call = prepare(config_, std::move(*request));
  std::vector<Placeholder> created;
  // One walk of the workspace for the three lists (each walk was a getdents of every
  // directory on the command's path).
  auto masked = protect_workspace(
      config_.workspace,
      {&config_.hidden_paths, &config_.protected_paths, &config_.protected_if_present,
       config_.max_protect_walk_entries, config_.mask_linked_files ? &link_cache_ : nullptr},
      &created);
  if (masked) masked = mask_binds(&created);
  report_placeholders(created);
  if (!masked) {
    send_record(channel.get(), ChannelMsg::kFailed,
                masked.error().code ? masked.error().code : EIO);
    return fail(masked.error());
  }
  WorkerPlan plan = plan_for(call, io.get(), status.get(), stdio);
  if (plan.kind == WorkerKind::kHandler && plan.handler == nullptr) {
    send_record(channel.get(), ChannelMsg::kFailed, ENOSYS);
    return fail("no handler");
  }
  pid_t pid = start_worker(plan);
  if (pid < 0) {
    send_record(channel.get(), ChannelMsg::kFailed, errno);
    return fail(Error::from_errno("fork", errno));
  }
  auto pidfd = sys::pidfd_open(pid);
  // The worker is not reaped before this record is sent (only on_sigchld reaps, on this
  // thread), so the credentials can name it; moatd reads its host pid from them even when
  // a short command has exited and been reaped by the time the record is read.
  send_record(channel.get(), ChannelMsg::kStarted, pid, pidfd ? pidfd->get() : -1, pid);
  int key = channel.get();
  calls_.emplace(key, Running{pid, std::move(channel)});
  return {};
}

// What the policy hides inside each bound directory, and in a writable one what it protects and
// what tools on the host run code from, as for the workspace (binds.h). A placeholder made in a
// bind is reported by its sandbox path (absolute, unlike the workspace's), which moatd maps back
// to the bind it lies in.
Result<void> Init::mask_binds(std::vector<Placeholder>* created) const {
  for (const SessionBind& b : config_.binds) {
    if (!b.is_dir) continue;
    MOAT_TRY(hide_paths(b.target, b.hidden, config_.max_protect_walk_entries));
    std::vector<Placeholder> made;
    MOAT_TRY(
        mask_protected_paths(b.target, b.protected_paths, &made, config_.max_protect_walk_entries));
    for (Placeholder& p : made) {
      p.relative = b.target + "/" + p.relative;
      created->push_back(std::move(p));
    }
  }
  return {};
}

// Never blocks the init: were moatd's receive queue full, the directory would stay on disk,
// which is the worst that can happen.
void Init::report_placeholders(const std::vector<Placeholder>& created) const {
  for (const Placeholder& p : created) {
    const std::string msg = placeholder_message(p);
    (void)::send(ctx_.ctl_fd, msg.data(), msg.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
}

void Init::on_sigchld() {
  signalfd_siginfo info;
  while (::read(sigchld_.get(), &info, sizeof info) > 0) {}
  bool reaped_leftover = false;
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    bool was_call = false;
    for (auto it = calls_.begin(); it != calls_.end(); ++it) {
      if (it->second.pid != pid) continue;
      was_call = true;
      // A call ends with its process: what it left running in its group goes too, so a
      // background job cannot hold the output pipe or outlive the call. Done before any
      // new fork, so the group id cannot have been reused. What left the group was handed
      // to the init when the worker (the call's subreaper) ended: it goes too, before moatd
      // hears that the call is over.
      kill_group(pid);
      kill_leftovers();
      send_record(it->first, ChannelMsg::kExited, status);
      calls_.erase(it);
      break;
    }
    reaped_leftover = reaped_leftover || !was_call;
  }
  // A leftover that died may have handed its own children to the init: kill those too.
  if (reaped_leftover) kill_leftovers();
}

// Every child of the init that is not a running call's worker is what an ended call left
// behind (see new_session in worker.cc): killed. Each one's death hands its own children to
// the init and brings it back here through SIGCHLD, so a tree is killed level by level.
// Nothing is reaped between reading the list and the kills, so no pid can have been reused.
void Init::kill_leftovers() const {
  for (pid_t pid : own_children()) {
    bool running = false;
    for (const auto& [fd, call] : calls_) running = running || call.pid == pid;
    if (!running) kill(pid, SIGKILL);
  }
}

std::vector<pid_t> Init::own_children() const {
  std::vector<pid_t> out;
  if (children_.valid()) {
    std::string text;
    char buf[4096];
    ssize_t n;
    off_t off = 0;
    while ((n = ::pread(children_.get(), buf, sizeof buf, off)) > 0) {
      text.append(buf, static_cast<std::size_t>(n));
      off += n;
    }
    for (const char* p = text.c_str(); *p != '\0';) {
      char* end = nullptr;
      const long pid = std::strtol(p, &end, 10);
      if (end == p) break;
      if (pid > 1) out.push_back(static_cast<pid_t>(pid));
      p = end;
    }
    return out;
  }
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    const long pid = std::strtol(e->d_name, nullptr, 10);
    if (pid <= 1) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    std::getline(stat, line);
    // pid (comm) state ppid ...: comm may hold spaces and parentheses; the last ')' ends it.
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == 1)
      out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(dir);
  return out;
}

void Init::on_channel(int fd) {
  auto it = calls_.find(fd);
  if (it == calls_.end()) return;
  char c;
  ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  kill_group(it->second.pid);  // kKillRequest, or EOF: moatd gave up on the call
  if (n == 0 || n < 0) {
    // Keep the pid reaped by on_sigchld from matching a dead channel: forget the call.
    calls_.erase(it);
  }
}

}  // namespace

std::vector<std::string> landlock_write_paths(const SessionConfig& config) {
  std::vector<std::string> writable = policy::writable_roots(config.workspace);
  for (const SessionBind& b : config.binds)
    if (b.writable) writable.push_back(b.target);
  return writable;
}

namespace {

[[noreturn]] void send_ready_and_serve(Init& init, const InitContext& ctx,
                                       const Result<void>& ready) {
  std::string msg = ready ? ctl_byte(CtlMsg::kReady) + init.describe()
                          : ctl_byte(CtlMsg::kError) + ready.error().message();
  const int listener = init.net_listener_.get();
  if (!sys::send_with_fds(ctx.ctl_fd, msg.data(), msg.size(), &listener, listener >= 0 ? 1 : 0) ||
      !ready)
    _exit(1);
  init.net_listener_.reset();
  init.serve();
}

// The hello's config, checked against the shape the view was staged with.
Result<void> finish_ahead(InitContext& ctx) {
  MOAT_ASSIGN_OR_RETURN(FinishRecord finish, receive_finish(ctx.ctl_fd, ctx.config));
  const SessionConfig& c = finish.config;
  if (c.read_only != ctx.config.read_only || c.hostname != ctx.config.hostname ||
      c.limits.tmp_size != ctx.config.limits.tmp_size)
    return fail("pool: kFinish: the session's read_only, hostname or tmp_size differ from the "
                "view built ahead");
  ctx.config = std::move(finish.config);
  ctx.workspace_tree = finish.tree.valid() ? finish.tree.release() : -1;
  return {};
}

// The view's workspace-independent part, then kFinish, then the rest as Init::setup.
Result<void> setup_ahead(Init& init, InitContext& ctx) {
  MOAT_TRY(init.setup_own());
  if (auto view = stage_view_in_init(init.mount_plan()); !view)
    return fail(view.error().with_context("mount"));
  MOAT_TRY(finish_ahead(ctx));
  if (auto view = finish_view_in_init(init.mount_plan()); !view)
    return fail(view.error().with_context("mount"));
  return init.setup_rest();
}

}  // namespace

void run_session_init(const InitContext& ctx) {
  Init init(ctx);
  send_ready_and_serve(init, ctx, init.setup());
}

void run_session_init_ahead(InitContext& ctx) {
  Init init(ctx);  // its config_ is ctx.config: the shape, then the hello's
  send_ready_and_serve(init, ctx, setup_ahead(init, ctx));
}

}  // namespace moat::sandbox

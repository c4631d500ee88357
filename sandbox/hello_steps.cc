// sandbox/hello_steps.cc: each check a hello goes through before a session exists.
#include "sandbox/hello_steps.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <deque>
#include <future>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/log.h"
#include "base/moat_dirs.h"
#include "base/random.h"
#include "base/sys.h"
#include "policy/ceilings.h"
#include "policy/digest.h"
#include "policy/layer.h"
#include "policy/mcp_import.h"
#include "policy/permissive.h"
#include "policy/protected_paths.h"
#include "policy/toml_load.h"
#include "sandbox/audit_records.h"
#include "sandbox/binds.h"
#include "sandbox/mcp_host.h"
#include "sandbox/ns_mount.h"
#include "sandbox/own_files.h"
#include "sandbox/git_identity.h"
#include "sandbox/protect.h"
#include "sandbox/protocol.h"
#include "sandbox/session_runner.h"
#include "sandbox/socket_owner.h"
#include "sandbox/workspace.h"
#include "tools/registry.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

// The name of `uid` in the passwd database, or null when it has none (a uid from a container
// or an LDAP user that is gone): the audit log names who ran the session (issue 27 item 21).
json user_name_json(uid_t uid) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr ||
      pw.pw_name == nullptr)
    return nullptr;
  return pw.pw_name;
}

// The host moatd runs on (uname's nodename, as hostname(1) prints it), for session.start.
json host_name_json() {
  struct utsname u {};
  if (::uname(&u) != 0) return nullptr;
  return u.nodename;
}

constexpr HelloStepInfo kStepInfo[] = {
    {"version", "protocol", "", false},
    {"workspace", "workspace", "", false},
    {"policy", "policy", "policy: ", false},
    {"mode", "policy", "policy: ", false},
    {"audit log", "audit", "audit log: ", false},
    {"own files", "workspace", "", true},
    {"binds", "policy", "policy: ", true},
    {"network", "policy", "policy: ", true},
    {"session", "sandbox", "sandbox: ", true},
    {"file index", "workspace", "", false},
    {"session.start", "audit", "audit log: ", false},
};
static_assert(std::size(kStepInfo) == static_cast<std::size_t>(HelloStep::kSessionStart) + 1,
              "one row per HelloStep");

// The SHA-256 of the workspace's own `rel`, read beneath the workspace fd (symlinks only
// within it); nullopt when it does not exist. The loader refuses a larger file, so a larger one
// here is not the file that was loaded.
Result<std::optional<std::string>> sha256_beneath(int workspace_fd, const std::string& rel) {
  auto fd = sys::open_beneath(workspace_fd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, false);
  if (!fd && fd.error().code == ENOENT) return std::optional<std::string>();
  if (!fd) return fail(fd.error());  // EXDEV: it leads outside
  MOAT_ASSIGN_OR_RETURN(std::string text, sys::read_to_end(fd->get(), policy::kMaxPolicyFileBytes));
  return std::optional<std::string>(policy::sha256_hex(text));
}

// The policy read the project layer by path (policy/layer.cc); the session runs on the
// directory the workspace fd names. A loaded project layer must be that directory's own
// `.moat/policy.toml` and imported `.mcp.json` files, reached beneath the fd: were the path
// swapped or a file changed between the load and now, text that was not pinned would govern
// this session. So every project file is read again and the pin's hash recomputed.
Result<void> check_project_layer_is_the_workspaces(const policy::Policy& p, int workspace_fd) {
  const json project = p.project_json();
  if (!project.is_object() || !project.value("loaded", false)) return {};
  const std::string refusal =
      "the project policy that was loaded is not the workspace's own "
      ".moat/policy.toml and .mcp.json files";
  std::vector<std::string> names = {".moat/policy.toml"};
  names.insert(names.end(), std::begin(policy::kMcpImportFiles), std::end(policy::kMcpImportFiles));
  std::vector<std::pair<std::string, std::string>> hashes;
  for (const std::string& name : names) {
    auto sha = sha256_beneath(workspace_fd, name);
    if (!sha) return fail(sha.error().with_context(refusal + " (" + name + ")"));
    if (*sha) hashes.emplace_back(name, **sha);
  }
  if (hashes.empty() || policy::project_content_hash(hashes) != project.value("pin_sha256", ""))
    return fail(refusal + " (one changed, or the workspace path did, while the session was set up)");
  return {};
}

// Turns the policy's combined ceilings into the sandbox's limits.
Limits limits_from(const policy::ResourceCeilings& r) {
  Limits l;
  l.wall_time_s = static_cast<double>(r.wall_time_s);
  l.cpu_time_s = static_cast<std::uint64_t>(r.cpu_time_s);
  l.memory_bytes = static_cast<std::uint64_t>(r.memory_bytes);
  l.pids = static_cast<std::uint64_t>(r.pids);
  l.file_size = static_cast<std::uint64_t>(r.file_size);
  l.open_files = static_cast<std::uint64_t>(r.open_files);
  l.output_bytes = static_cast<std::uint64_t>(r.output_bytes);
  return l;
}

// How many sets of tool specs a moatd keeps (tool_specs_for): one per distinct limits its
// sessions had, and a policy's wall_time and output ceiling take few values.
constexpr std::size_t kKeptToolSpecs = 8;

// The tools' specs for `limits`. all_tools formats every description and builds every schema
// (0.06 ms of each hello's CPU, issue 30 point 4), and the same limits give the same specs: each
// set is built once and kept, the least recently built dropped past kKeptToolSpecs (a hello
// holding it keeps its own reference). Only moatd's connection threads call it; a process forked
// meanwhile never does.
std::shared_ptr<const std::vector<tools::ToolSpec>> tool_specs_for(const tools::ToolLimits& l) {
  using Specs = std::shared_ptr<const std::vector<tools::ToolSpec>>;
  static std::mutex mu;
  static std::deque<std::pair<tools::ToolLimits, Specs>> kept;
  auto same = [&l](const tools::ToolLimits& k) {
    return k.default_timeout_s == l.default_timeout_s && k.max_timeout_s == l.max_timeout_s &&
           k.output_ceiling == l.output_ceiling;
  };
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [limits, specs] : kept)
      if (same(limits)) return specs;
  }
  Specs built = std::make_shared<const std::vector<tools::ToolSpec>>(tools::all_tools(l));
  std::lock_guard<std::mutex> lock(mu);
  kept.emplace_back(l, built);
  if (kept.size() > kKeptToolSpecs) kept.pop_front();
  return built;
}

// resources.wall_time as welcome states it: its value and the layer and file that set it.
nlohmann::json wall_time_source(const policy::LoadOptions& lo) {
  auto layers = policy::load_layers(lo, nullptr);
  if (!layers) return nlohmann::json::object();
  for (const policy::CeilingSource& c : policy::ceiling_sources(*layers))
    if (c.key == "wall_time")
      return {{"value", c.value}, {"layer", c.layer.empty() ? "default" : c.layer},
              {"file", c.file.empty() ? "built-in" : c.file}};
  return nlohmann::json::object();
}

}  // namespace

const HelloStepInfo& hello_step_info(HelloStep step) {
  return kStepInfo[static_cast<std::size_t>(step)];
}

HelloSteps::HelloSteps(const SupervisorOptions& options, const SupervisorDeps& deps,
                       const PeerCred& peer, const HelloMsg& hello, ConsoleSource console)
    : options_(options), deps_(deps), peer_(peer), hello_(hello), console_(console) {
  state_.headless = hello.headless;
  state_.mcp_env = hello.env;  // for the MCP servers only (McpHost)
  // Interactive needs a channel to the person that the agent cannot forge. A private moatd
  // started without a console socketpair has none, whatever the agent claims.
  if (console_ == ConsoleSource::kNone) state_.headless = true;
  start_git_identity();
}

// The person's git identity, so a commit inside has an author, read on its own thread while
// the steps run (issue 30 point 4); create_session takes it. A refused hello does not wait for
// it. Only a moatd of their own reads it (with its HOME): a shared root moatd would run git
// over another user's files.
void HelloSteps::start_git_identity() {
  const char* home = std::getenv("HOME");
  reads_git_identity_ = home != nullptr && peer_.uid == ::geteuid();
  // Not valid when no read could start ahead: create_session reads it itself.
  if (reads_git_identity_) git_identity_ = read_git_identity_ahead(home);
}

GitIdentity HelloSteps::take_git_identity() {
  if (git_identity_.valid()) return git_identity_.get();
  const char* home = std::getenv("HOME");
  return home != nullptr ? read_git_identity(home) : GitIdentity{};
}

json HelloSteps::peer_json() const {
  return {{"uid", peer_.uid},
          {"gid", peer_.gid},
          {"pid", peer_.pid},
          {"user", user_name_json(peer_.uid)}};
}

Result<void> HelloSteps::check_version() {
  if (hello_.version >= kMinProtocolVersion && hello_.version <= kProtocolVersion) return {};
  return fail(version_refusal(hello_.version));
}

// An existing directory, and the peer's own (or the peer is root). moatd may be root: it
// must not lend its rights to another user's directory. Resolved once, with no symlink
// followed: the session is built from this fd, so swapping the path for a link after the
// check changes nothing (workspace.h).
Result<void> HelloSteps::resolve_workspace() {
  const std::string& requested = hello_.workspace;
  MOAT_ASSIGN_OR_RETURN(
      Workspace opened,
      open_workspace(requested, peer_.uid == 0 ? std::nullopt : std::optional<uid_t>(peer_.uid)));
  state_.workspace = opened.path;
  state_.workspace_fd = std::move(opened.fd);
  return {};
}

// moatd's own path variables ($AUDIT_DIR: where this moatd writes its audit logs) go to the
// policy here, the one place, so its rules name the directories moatd really uses.
Result<void> HelloSteps::load_policy() {
  policy::LoadOptions lo = options_.policy;
  lo.workspace = state_.workspace;
  lo.headless = state_.headless;
  if (!options_.audit_dir.empty()) lo.path_vars["AUDIT_DIR"] = options_.audit_dir;
  // A writable bind is where the code can plant a program, as in the workspace and /tmp: no
  // allow rule may trust a program there by its name.
  for (const BindMount& b : hello_.binds)
    if (b.writable) lo.extra_writable_roots.push_back(b.target);
  MOAT_ASSIGN_OR_RETURN(state_.policy, deps_.load_policy(lo));
  // A resident moatd's typed exec needs the hello's word too (HelloMsg::typed_exec).
  state_.typed_exec = options_.typed_exec && (!options_.typed_exec_by_peer || hello_.typed_exec);
  state_.user_policy_dir = lo.user_dir.empty() ? dirs::user_policy() : lo.user_dir;
  state_.wall_time = wall_time_source(lo);
  if (options_.permissive) state_.policy = policy::make_permissive(std::move(state_.policy));
  return check_project_layer_is_the_workspaces(*state_.policy, state_.workspace_fd.get());
}

// Headless sessions run in "auto" mode (ask becomes deny), interactive ones in "ask" mode;
// the organisation may forbid either.
Result<void> HelloSteps::check_mode() {
  const std::string mode = options_.permissive ? policy::kPermissiveMode
                           : state_.headless   ? "auto"
                                               : "ask";
  if (state_.policy->mode_allowed(mode)) return {};
  return fail("mode '" + mode + "' is not allowed by the organisation's constraints");
}

// A log that cannot be opened ends the hello only when the policy requires one.
Result<void> HelloSteps::open_audit_log() {
  MOAT_ASSIGN_OR_RETURN(state_.id, random_hex(16));  // the log's name
  auto opened = deps_.open_audit(options_, state_.id, state_.policy->policy_hash(), peer_.uid);
  if (opened) {
    state_.audit = std::move(opened->log);
    state_.audit_signing = std::move(opened->signing);
    return {};
  }
  MOAT_LOG_ERROR("audit log: %s", opened.error().message().c_str());
  if (!state_.policy->audit_required()) return {};
  return fail(opened.error().message() + " (the policy requires an audit log)");
}

// moat's own config (where the API key is sent), policies, trust pins, sessions and audit
// logs are out of reach of a workspace at or above the home directory that holds them;
// git's hooks and config, and what the policy protects, are read-only too, and read-denied
// paths (.env, *.pem, ...) are hidden from the code as well as from the file tools.
Result<void> HelloSteps::protect_own_files() {
  // A protected name that is no glob (.git/hooks, .moat, the policy's .env) is masked only where
  // it exists, and what a call creates there is removed (index_files' watch). moat's own
  // directories keep their placeholders: moat itself may make one during the session (the
  // sessions directory of a first run), which a removal would take from it.
  config_.protected_if_present.assign(std::begin(policy::kProtectedWorkspacePaths),
                                      std::end(policy::kProtectedWorkspacePaths));
  for (const auto& p : host_executed_paths()) config_.protected_paths.push_back(p.pattern);
  for (const auto& g : state_.policy->protected_globs())
    (g.find_first_of("*?[") == std::string::npos ? config_.protected_if_present
                                                 : config_.protected_paths)
        .push_back(g);
  config_.hidden_paths = state_.policy->unreadable_globs();
  std::vector<std::string> own_hidden;
  MOAT_TRY(sandbox::protect_own_files(own_files(options_, peer_.uid), state_.workspace,
                                      &own_inside_, &own_hidden, &config_.protected_if_present));
  config_.protected_paths.insert(config_.protected_paths.end(), own_inside_.begin(),
                                 own_inside_.end());
  config_.hidden_paths.insert(config_.hidden_paths.end(), own_hidden.begin(), own_hidden.end());
  own_inside_.insert(own_inside_.end(), own_hidden.begin(), own_hidden.end());
  return {};
}

// The binds the hello asks for (moat sandbox exec --ro-bind, --bind), checked against the policy
// and opened once (binds.h): the session binds these fds. moatd opens each source with its own
// rights, so only its own user may ask (a shared root moatd refuses).
Result<void> HelloSteps::check_binds() {
  // The MCP servers' `read` directories (their installs) come with the hello's (mcp_host.h).
  const std::vector<BindMount> binds = with_mcp_reads(hello_.binds, *state_.policy);
  if (binds.empty()) return {};
  const BindPlaces places{state_.workspace, default_read_only_paths(),
                          own_files(options_, peer_.uid), peer_.uid == ::geteuid()};
  MOAT_ASSIGN_OR_RETURN(CheckedBinds checked,
                        sandbox::check_binds(binds, *state_.policy, places));
  bind_fds_ = std::move(checked.fds);
  config_.binds = std::move(checked.binds);
  return {};
}

// A hello that asks for the network (moat sandbox exec --network) gets the proxy only when the
// policy grants some connection; were it taken without, the command would meet nothing but
// refused connections and its own error, not the reason. One that says false gets no network
// whatever the policy grants; one that says nothing gets what the policy grants (moat run).
Result<void> HelloSteps::check_network() {
  if (hello_.network != NetworkRequest::kOn || state_.policy->grants_network()) return {};
  return fail(
      "the network was asked for, but the policy allows no connection: no [[network]] rule "
      "allows one and defaults.network is not \"allow\"");
}

Result<void> HelloSteps::create_session() {
  config_.workspace = state_.workspace;
  config_.workspace_fd = state_.workspace_fd.get();
  config_.limits = limits_from(state_.policy->resources());
  config_.unprivileged_uid = options_.unprivileged_uid;
  config_.unprivileged_gid = options_.unprivileged_gid;
  config_.allow_without = options_.allow_without;
  // The peer's share of this moatd; none without a quota, so a pooled session serves any user.
  const UserQuota& quota = options_.moatd_config.quota;
  if (quota.memory_bytes != 0 || quota.pids != 0)
    config_.user_cgroup = {peer_.uid, quota.memory_bytes, quota.pids, options_.moatd_config.file};
  config_.handler = &tools::handle_in_sandbox;
  if (reads_git_identity_) config_.home_gitconfig = gitconfig_text(take_git_identity());
  const bool proxied = state_.policy->grants_network() && hello_.network != NetworkRequest::kOff;
  if (proxied) {
    // AF_INET for the sandbox's own loopback, where the proxy listens; the namespace has
    // nothing else, so a program that ignores the proxy variables reaches nothing.
    config_.network = true;
    config_.net_proxy_port = kProxyPort;
    for (const auto& [k, v] : proxy_environment(*state_.policy)) config_.env[k] = v;
  }
  MOAT_ASSIGN_OR_RETURN(state_.session, deps_.create_session(config_));
  state_.runner = std::make_unique<SessionRunner>(*state_.session);
  if (proxied) MOAT_TRY(start_net_proxy());
  return {};
}

namespace {

// The program that opened a proxied connection, as its record names it: the process holding
// the other end, and the program it (or its nearest ancestor with one) runs, as the exec
// record names it.
json program_json(int client, pid_t init, const ProgramRegistry& programs) {
  auto pid = socket_peer_pid(client, init, programs.pids());
  if (!pid) return {{"exec_id", nullptr}, {"program_error", pid.error().message()}};
  auto program = programs.program_of(*pid);
  if (!program)
    return {{"pid", *pid}, {"exec_id", nullptr}, {"program_error", "it runs no program of a call"}};
  return {{"pid", *pid}, {"call_id", program->call_id}, {"exec_id", program->exec_id}};
}

}  // namespace

// The proxy's limits are the policy's ceilings; each connection's record goes to the audit
// log without a sync of its own (the next decision's, or session.end's, takes it to disk).
Result<void> HelloSteps::start_net_proxy() {
  UniqueFd listener = state_.session->take_net_listener();
  if (!listener.valid()) return fail("net_proxy: the session has no proxy listener");
  const policy::ResourceCeilings r = state_.policy->resources();
  NetProxyOptions o;
  o.max_connections = r.network_connections;
  o.max_bytes = r.network_bytes;
  o.idle_s = r.network_idle_s;
  o.rate_per_s = r.network_rate;
  o.rate_burst = r.network_rate * kNetRateBurstSeconds;
  o.end_call = [ends = state_.call_ends](const std::string& call_id, const std::string& why) {
    return ends->end(call_id, why);
  };
  o.resolve_overrides = options_.net_resolve_overrides;
  o.attribute = [programs = state_.programs, init = state_.session->init_pid()](int client) {
    return program_json(client, init, *programs);
  };
  // The log, not state_: the state moves to the connection after the hello; the log it owns
  // does not, and outlives the proxy (SessionState declares the proxy after it).
  sessions::AuditLog* log = state_.audit.get();
  auto record = [log](json rec) {
    if (log == nullptr) return;
    if (auto r = log->append("net", std::move(rec), sessions::AuditLog::Sync::kWithNext); !r)
      MOAT_LOG_ERROR("audit append net: %s", r.error().message().c_str());
  };
  MOAT_ASSIGN_OR_RETURN(state_.net_proxy, NetProxy::start(std::move(listener), *state_.policy,
                                                          std::move(o), std::move(record)));
  return {};
}

// The index each call's files_changed is diffed against, built before any call runs. moat's
// own files inside the workspace (and the startup files masked with them) are left out: moatd
// writes the audit log during every call, and the sandbox cannot change any of them. A
// workspace that cannot be indexed (too many files) still gets its session; session.start and
// each call's record say why no file is listed.
Result<void> HelloSteps::index_files() {
  // Before any call runs: what is here now is the person's (a submodule's checkout).
  auto git = NestedGitWatch::take(state_.workspace_fd.get(),
                                  creation_watched_names(config_.protected_if_present));
  if (!git) return fail(git.error());
  state_.nested_git = std::make_unique<NestedGitWatch>(std::move(*git));
  IndexLimits limits;
  limits.skip = own_inside_;
  const auto t0 = std::chrono::steady_clock::now();
  auto index = WorkspaceIndex::build(state_.workspace_fd.get(), std::move(limits));
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  if (!index) {
    state_.files_error = "the workspace is not indexed: " + index.error().message();
    file_index_ = {{"error", state_.files_error}};
    return {};
  }
  state_.files = std::move(*index);
  file_index_ = {{"files", state_.files->size()}, {"ms", ms}};
  return {};
}

// The tools the policy does not deny outright: the only ones welcome announces.
void HelloSteps::grant_tools() {
  // The specs state the limits the calls get (bash's timeout and output ceiling).
  state_.tool_limits =
      tools::ToolLimits::for_session(config_.limits.wall_time_s, config_.limits.output_bytes);
  const auto specs = tool_specs_for(state_.tool_limits);
  for (const auto& t : *specs) {
    if (state_.policy->decide_tool(t.name).verdict == policy::Verdict::kDeny) continue;
    state_.granted.insert(t.name);
    state_.tool_specs.push_back(t);
  }
}

Result<void> HelloSteps::record_session_start() {
  grant_tools();
  const char* console = state_.headless                          ? "none"
                        : console_ == ConsoleSource::kSocketpair ? "socketpair"
                                                                 : "token";
  audit::SessionStart start;
  start.moat_version = MOAT_VERSION;
  start.peer = peer_json();
  start.host = host_name_json();
  start.workspace = state_.workspace;
  start.interactive = !state_.headless;
  start.console = console;
  start.layers = state_.policy->layers_json();
  start.policy_hash = state_.policy->policy_hash();
  start.sandbox = to_json(state_.session->describe());
  for (const auto& t : state_.tool_specs) start.tools.push_back(t.name);
  start.audit_signing = state_.audit_signing;
  // Whose command line an exec frame carries: the person's (moatd --typed-exec, judged by
  // decide_typed) or the agent's (judged as a bash call's line).
  start.exec_typed_by = state_.typed_exec ? "person" : "agent";
  start.file_index = file_index_;
  if (!config_.binds.empty()) {
    json binds = json::array();
    for (const SessionBind& b : config_.binds)
      binds.push_back({{"source", b.source}, {"target", b.target}, {"writable", b.writable}});
    start.binds = std::move(binds);
  }
  // Whether the workspace's .moat/policy.toml was loaded, or skipped and why (unpinned, or
  // changed since it was pinned): the policy checked its hash against the pin itself.
  if (json project = state_.policy->project_json(); !project.is_null())
    start.project_policy = std::move(project);
  // Not synced on its own: nothing has run yet, and nothing will before a decision record, whose
  // write-ahead fdatasync (or session.end's) takes this one to the disk with it.
  auto r = state_.record(std::string(audit::SessionStart::kType), start.to_json(),
                         sessions::AuditLog::Sync::kWithNext);
  if (!r) return fail(r.error().message() + " (the policy requires an audit log)");
  return {};
}

}  // namespace moat::sandbox

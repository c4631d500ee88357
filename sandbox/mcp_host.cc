// sandbox/mcp_host.cc: a session's MCP servers (see mcp_host.h).
#include "sandbox/mcp_host.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "base/log.h"
#include "base/random.h"
#include "base/stop_flags.h"
#include "base/ticks.h"
#include "base/sys.h"
#include "base/unique_fd.h"
#include "sandbox/ask_broker.h"
#include "sandbox/audit_records.h"
#include "sandbox/exec_gate.h"
#include "sandbox/mcp_resources.h"
#include "sandbox/mcp_url.h"
#include "sandbox/ns_mount.h"
#include "sandbox/session_state.h"

namespace moat::sandbox {

using nlohmann::json;
namespace mcp = tools::mcp;

struct McpHost::Server {
  policy::McpServerConfig config;
  std::string log;  // its stderr's file
  std::mutex mu;    // the process and its client: one start or stop at a time
  std::shared_ptr<mcp::Client> client;
  std::thread exec;  // runs the process (Session::exec) until it ends
  // Raised to kill the process (it wakes the exec loop at once); each start has its own,
  // held by its exec thread too.
  std::shared_ptr<CallCancel> kill;
  std::thread log_pump;  // copies its stderr into `log` (pump_stderr)
  // Ends log_pump once the process is gone (a daemon it started may hold its stderr).
  std::unique_ptr<CallCancel> log_stop;
  std::uint64_t log_kept = 0;  // bytes of stderr the log holds, over all its starts
  std::mutex exit_mu;
  std::condition_variable exited_cv;
  bool exited = true;
  int starts = 0;
  std::vector<mcp::ToolInfo> tools;
  std::vector<McpServerStatus::Tool> decided;  // each offerable tool's decision, no args
  std::stop_source stopping;  // the host's stop: ends a start's wait for the server
  // Raised by stop_server before it ends the process: that exit is not the server's own.
  std::atomic<bool> stopped_by_host{false};
  McpServerStatus shown;  // its state as /mcp shows it, under McpHost::status_mu_
};

namespace {

// `path` is `dir` or below it.
bool path_within(const std::string& path, const std::string& dir) {
  return path == dir || (path.rfind(dir + "/", 0) == 0) || dir == "/";
}

std::string source_of(const policy::McpServerConfig& c) {
  return c.pos.file + ":" + std::to_string(c.pos.line);
}

// The file beside the audit log that a server's stderr is appended to.
std::string log_path_for(const SessionState& session, const std::string& server) {
  if (!session.audit) return "";
  std::string base = session.audit->path();
  if (auto dot = base.rfind(".jsonl"); dot != std::string::npos) base.resize(dot);
  return base + ".mcp-" + server + ".log";
}

// The decision its exec records name: the trusted declaration decided that it runs (the
// argv is the declaration's, never the model's; the exec watch judges each program).
Result<std::string> record_start_decision(SessionState& session, const McpHost::Server& s,
                                          const std::string& call_id) {
  MOAT_ASSIGN_OR_RETURN(const std::string id, random_hex(16));
  const policy::McpServerConfig& c = s.config;
  audit::Decision d{id,
                    std::string(mcp::kPolicyPrefix) + c.name,
                    call_id,
                    c.url.empty()
                        ? json{{"tool", std::string(mcp::kPolicyPrefix) + c.name}, {"argv", c.argv}}
                        : json{{"tool", std::string(mcp::kPolicyPrefix) + c.name}, {"url", c.url}},
                    policy::Verdict::kAllow,
                    {{"mcp.server", c.name}, {"layer", c.layer}, {"source", source_of(c)}},
                    {},
                    policy::DecidedBy::kPolicy,
                    !session.headless,
                    session.policy->policy_hash(),
                    std::nullopt};
  if (!session.audit) return fail(std::string("audit log is not open"));
  MOAT_TRY(session.audit->append(d, sessions::AuditLog::Sync::kNow));
  return id;
}

audit::McpServer server_record(const McpHost::Server& s, const char* event) {
  const policy::McpServerConfig& c = s.config;
  audit::McpServer r;
  r.server = c.name;
  r.event = event;
  r.call_id = "mcp:" + c.name + "#" + std::to_string(s.starts);
  r.argv = c.argv;
  r.layer = c.layer;
  r.source = source_of(c);
  r.log = s.log;
  r.start = s.starts;
  return r;
}

// How a server's process ended, for its "ended" state.
std::string ended_how(const Result<tools::ExecStatus>& st) {
  if (!st) return st.error().message();
  return st->signal > 0 ? "killed by signal " + std::to_string(st->signal)
                        : "exited with code " + std::to_string(st->exit_code);
}

// Why a server is not started again: it ended more often than McpHost::kMaxRestarts allows.
std::string ended_too_often(const McpHost::Server& s) {
  return "mcp server " + s.config.name + ": it ended " + std::to_string(s.starts) +
         " times in this session; it is not started again (at most " +
         std::to_string(McpHost::kMaxRestarts) + " restarts; its log: " + s.log + ")";
}

json exit_json(const Result<tools::ExecStatus>& st) {
  if (!st) return nullptr;
  return {{"code", st->signal > 0 ? json(nullptr) : json(st->exit_code)},
          {"signal", st->signal > 0 ? json(st->signal) : json(nullptr)}};
}

// The person's variables a server is given: those its declaration names that the client sent,
// when a system or user layer declared it; a repository's or --policy's server gets none.
std::map<std::string, std::string> env_for(const SessionState& session,
                                           const policy::McpServerConfig& c) {
  std::map<std::string, std::string> env;
  if (!policy::takes_person_env(c)) return env;
  for (const std::string& name : c.env)
    if (auto it = session.mcp_env.find(name); it != session.mcp_env.end()) env[name] = it->second;
  return env;
}

mcp::ServerLimits limits_for(const SessionState& session, const policy::McpServerConfig& c) {
  mcp::ServerLimits limits;
  // A hung call ends at the session's wall time per call, like a command's, or at the
  // server's own resources.wall_time when that is shorter.
  double wall = static_cast<double>(session.policy->resources().wall_time_s);
  if (c.resources.wall_time && (wall <= 0 || *c.resources.wall_time < wall))
    wall = static_cast<double>(*c.resources.wall_time);
  if (wall > 0)
    limits.request_timeout = std::chrono::milliseconds(static_cast<long long>(wall * 1000));
  return limits;
}

struct Pipes {
  sys::FdPair to_server, from_server, stderr_pipe;
  UniqueFd log;
};

Result<Pipes> open_pipes(const std::string& log) {
  Pipes p;
  MOAT_ASSIGN_OR_RETURN(p.to_server, sys::make_pipe());
  MOAT_ASSIGN_OR_RETURN(p.from_server, sys::make_pipe());
  MOAT_ASSIGN_OR_RETURN(p.stderr_pipe, sys::make_pipe());
  MOAT_ASSIGN_OR_RETURN(p.log, sys::open_path(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW,
                                              0600));
  return p;
}

// Appends what a server writes to stderr to its log: while `kept` (over all its starts) is
// under McpHost::kMaxLogBytes, then it only counts; when the pipe ends, or `stop` is raised
// and what the pipe holds is read, one line says how many bytes this start's log dropped.
void pump_stderr(int from, int log, std::uint64_t& kept, const CallCancel& stop) {
  std::uint64_t dropped = 0;
  char buf[65536];
  for (int left_after_stop = 16; left_after_stop > 0;) {
    const bool stopping = stop.load();
    pollfd fds[2] = {{from, POLLIN, 0}, {stopping ? -1 : stop.wake_fd(), POLLIN, 0}};
    // Without a wake fd the flag is read at the exec loop's tick (ticks::kExecCall).
    const int wait = stopping ? 0 : stop.wake_fd() >= 0 ? -1 : int(ticks::kExecCall.count());
    const int rc = ::poll(fds, 2, wait);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 || (rc == 0 && stopping)) break;
    left_after_stop -= stopping;
    if (!(fds[0].revents & (POLLIN | POLLHUP))) continue;
    const ssize_t n = ::read(from, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    const std::uint64_t room = McpHost::kMaxLogBytes - std::min(kept, McpHost::kMaxLogBytes);
    const std::uint64_t take = std::min<std::uint64_t>(room, static_cast<std::uint64_t>(n));
    if (take > 0) (void)sys::write_all(log, buf, take);
    kept += take;
    dropped += static_cast<std::uint64_t>(n) - take;
  }
  if (dropped == 0) return;
  const std::string line = "\n[moat: " + std::to_string(dropped) +
                           " bytes of this server's stderr dropped: its log keeps the first " +
                           std::to_string(McpHost::kMaxLogBytes) + " bytes of a session]\n";
  (void)sys::write_all(log, line.data(), line.size());
}

}  // namespace

McpHost::McpHost(SessionState& session, AskBroker& asks, McpHostOptions options)
    : session_(session), asks_(asks), options_(options) {}

McpHost::~McpHost() { stop(); }

void McpHost::start() {
  for (const policy::McpServerConfig& c : session_.policy->mcp_servers()) {
    auto s = std::make_unique<Server>();
    s->config = c;
    s->log = log_path_for(session_, c.name);
    s->shown = {c.name, "not started", "", s->log, {}, 0, kMaxRestarts};
    std::lock_guard<std::mutex> lock(s->mu);
    std::string error;  // why it did not start or list its tools
    if (auto up = start_server(*s); !up) {
      MOAT_LOG_ERROR("%s", up.error().message().c_str());
      error = up.error().message();
    } else if (auto listed = s->client->list_tools(s->stopping.get_token()); !listed) {
      error = listed.error().message();
      audit::McpServer r = server_record(*s, "list");
      r.error = listed.error().message();
      (void)session_.record(std::string(audit::McpServer::kType), r.to_json());
    } else {
      s->tools = std::move(*listed);
      offer_tools(*s);
    }
    if (c.start != "session") stop_server(*s);  // "on-use": started at its first call
    report(*s, [&](McpServerStatus& st) { st.tools = s->decided; });
    // Unless its process already ended on its own (its exec thread said so).
    if (!error.empty()) set_state(*s, "failed", error);
    else if (status_of(*s).state == "not started" && c.start == "session") set_state(*s, "started");
    servers_.push_back(std::move(s));
  }
}

void McpHost::offer_tools(Server& s) {
  std::vector<std::string> offered;
  std::string too_big;
  for (const mcp::ToolInfo& t : s.tools) {
    auto name = mcp::model_tool_name(s.config.name, t.name);
    if (!name) continue;  // `moat mcp list` says why
    json annotations = json::object();
    if (t.annotations.read_only) annotations["readOnlyHint"] = *t.annotations.read_only;
    if (t.annotations.destructive) annotations["destructiveHint"] = *t.annotations.destructive;
    const policy::Decision d = session_.policy->decide_tool(
        mcp::policy_tool_name(s.config.name, t.name), json::object(),
        policy::tool_hints(annotations));
    s.decided.push_back({*name, policy::verdict_name(d.verdict)});
    if (d.verdict == policy::Verdict::kDeny) continue;
    const std::size_t schema = t.input_schema.dump().size();
    if (schema > kMaxToolSchemaBytes || schema_bytes_ + schema > kMaxSchemaBytes) {
      too_big += (too_big.empty() ? "" : ", ") + *name + " (" + std::to_string(schema) + ")";
      continue;
    }
    schema_bytes_ += schema;
    tools::ToolSpec spec;
    spec.name = *name;
    spec.description = "[MCP server " + s.config.name +
                       "'s own description, untrusted text] " + t.description;
    spec.parameters = t.input_schema;
    specs_.push_back(spec);
    offered.push_back(*name);
  }
  audit::McpServer r = server_record(s, "tools");
  r.tools = std::move(offered);
  if (!too_big.empty())
    r.error = "not offered, their inputSchema's bytes over " + std::to_string(kMaxToolSchemaBytes) +
              " a tool or " + std::to_string(kMaxSchemaBytes) + " a session: " + too_big;
  // The client's own bounds drop a tool before the host sees it (mcp_client.h ServerLimits).
  std::string skipped;
  for (const std::string& why : s.client ? s.client->skipped_tools() : std::vector<std::string>{})
    skipped += (skipped.empty() ? "" : ", ") + why;
  if (!skipped.empty())
    r.error = (r.error ? *r.error + "; " : std::string()) + "dropped as listed: " + skipped;
  (void)session_.record(std::string(audit::McpServer::kType), r.to_json());
}

namespace {

// A url server (mcp_url.h): no process, a client over HTTP through the session's proxy. Its
// start and its end are mcp.server records like a process's; connecting again after the
// connection ended counts as a restart.
Result<void> connect_url(SessionState& session, McpHost::Server& s) {
  if (s.starts > McpHost::kMaxRestarts)
    return fail("mcp server " + s.config.name + ": its connection ended " +
                std::to_string(s.starts) + " times in this session; it is not connected again");
  if (s.client) s.client->close();
  s.client.reset();
  ++s.starts;
  audit::McpServer rec = server_record(s, "start");
  MOAT_ASSIGN_OR_RETURN(rec.decision_id, record_start_decision(session, s, rec.call_id));
  MOAT_TRY(session.record(std::string(audit::McpServer::kType), rec.to_json()));
  auto client = connect_url_server(session.net_proxy.get(), *session.policy, s.config,
                                   rec.call_id, limits_for(session, s.config),
                                   s.stopping.get_token());
  if (!client) {
    rec.event = "exit";
    rec.error = client.error().message();
    (void)session.record(std::string(audit::McpServer::kType), rec.to_json());
    return fail(client.error());
  }
  s.client = std::move(*client);
  return {};
}

// Session::exec on the server's own thread: its exec watch's thread may not start (EAGAIN:
// pids.max, RLIMIT_NPROC), and the std::system_error escaping this thread was std::terminate of
// moatd. That start fails instead, recorded as the server's exit like any other.
Result<tools::ExecStatus> exec_guarded(Session& session, const ExecSpec& spec, StopFlags stop) {
  try {
    return session.exec(spec, nullptr, std::move(stop));
  } catch (const std::system_error& e) {
    return fail(Error::from_errno("start the server's exec watch", e.code().value(), "mcp"));
  }
}

}  // namespace

Result<void> McpHost::start_server(Server& s) {
  if (!s.config.url.empty()) return connect_url(session_, s);
  const std::string who = "mcp server " + s.config.name + ": ";
  if (s.starts > kMaxRestarts) return fail(ended_too_often(s));
  if (s.starts > 0 && !backoff(s)) return fail(who + "the session is ending");
  stop_server(s);
  if (!session_.session) return fail(who + "no sandbox session");
  ++s.starts;
  audit::McpServer rec = server_record(s, "start");
  const std::map<std::string, std::string> env = env_for(session_, s.config);
  rec.env.emplace();
  for (const auto& [name, value] : env) rec.env->push_back(name);
  // Its own resources: rlimits below the session's, and its memory and pids in a child cgroup
  // (removed when its exec thread ends, after its processes).
  auto res = std::make_shared<McpServerResources>(mcp_server_resources(
      session_.policy->resources(), session_.session->describe(), s.config));
  rec.limits = res->record;
  MOAT_ASSIGN_OR_RETURN(const std::string decision_id,
                        record_start_decision(session_, s, rec.call_id));
  rec.decision_id = decision_id;
  auto pipes = open_pipes(s.log);
  if (!pipes) return fail(who + pipes.error().message());
  MOAT_TRY(session_.record(std::string(audit::McpServer::kType), rec.to_json()));
  s.kill = std::make_shared<CallCancel>();
  s.stopped_by_host = false;
  {
    std::lock_guard<std::mutex> lock(s.exit_mu);
    s.exited = false;
  }
  auto fds = std::make_shared<Pipes>(std::move(*pipes));
  s.log_stop = std::make_unique<CallCancel>();
  s.log_pump = std::thread([&s, fds, stop = s.log_stop.get()] {
    pump_stderr(fds->stderr_pipe.first.get(), fds->log.get(), s.log_kept, *stop);
  });
  s.exec = std::thread([this, &s, rec, env, kill = s.kill, fds, res]() mutable {
    ExecGate gate(session_, asks_, rec.call_id, rec.decision_id, *kill);
    ExecSpec spec;
    spec.argv = s.config.argv;
    spec.env = env;
    spec.for_session = true;
    spec.observer = &gate;
    spec.stdio[0] = fds->to_server.first.get();
    spec.stdio[1] = fds->from_server.second.get();
    spec.stdio[2] = fds->stderr_pipe.second.get();
    spec.limits = res->rlimits;
    if (res->cgroup.active())
      spec.before_program = [cgroup = &res->cgroup](pid_t pid) { return cgroup->attach(pid); };
    auto status = exec_guarded(*session_.session, spec,
                               StopFlags(kill.get(), nullptr, kill->wake_fd()));
    // The client reads EOF once moatd's copies of the server's ends are closed too.
    fds->from_server.second.reset();
    fds->to_server.first.reset();
    fds->stderr_pipe.second.reset();
    rec.event = "exit";
    rec.env.reset();
    rec.limits.reset();
    res.reset();  // its child cgroup: its processes are gone
    rec.exit = exit_json(status);
    if (!status) rec.error = status.error().message();
    (void)session_.record(std::string(audit::McpServer::kType), rec.to_json());
    if (!s.stopped_by_host) {  // it ended on its own: /mcp says so at once
      if (s.starts > kMaxRestarts)
        set_state(s, "failed", ended_too_often(s) + ", the last " + ended_how(status));
      else
        set_state(s, "ended", ended_how(status) + "; started again at its next call");
    }
    std::lock_guard<std::mutex> lock(s.exit_mu);
    s.exited = true;
    s.exited_cv.notify_all();
  });
  auto client = mcp::Client::start(s.config.name, std::move(fds->to_server.second),
                                   std::move(fds->from_server.first),
                                   limits_for(session_, s.config),
                                   s.stopping.get_token());
  if (!client) {
    stop_server(s);
    return fail(client.error());
  }
  s.client = std::move(*client);
  return {};
}

void McpHost::stop_server(Server& s) {
  s.stopped_by_host = true;
  if (s.client) s.client->close();  // stdin's end: the spec's shutdown
  if (s.exec.joinable()) {
    std::unique_lock<std::mutex> lock(s.exit_mu);
    if (!s.exited_cv.wait_for(lock, kExitGrace, [&] { return s.exited; })) s.kill->raise();
    lock.unlock();
    s.exec.join();
  }
  if (s.log_pump.joinable()) {
    s.log_stop->raise();  // the pump reads what the pipe holds, then ends
    s.log_pump.join();
  }
  s.client.reset();
}

bool McpHost::backoff(Server& s) {
  std::mutex mu;
  std::unique_lock<std::mutex> lock(mu);
  std::condition_variable_any wake;
  const auto wait = options_.restart_backoff * (1 << (s.starts - 1));
  return !wake.wait_for(lock, s.stopping.get_token(), wait, [] { return false; });
}

policy::ToolHints McpHost::hints(const mcp::ToolRef& ref) const {
  for (const auto& s : servers_) {
    if (s->config.name != ref.server) continue;
    for (const mcp::ToolInfo& t : s->tools) {
      if (t.name != ref.tool) continue;
      json annotations = json::object();
      if (t.annotations.read_only) annotations["readOnlyHint"] = *t.annotations.read_only;
      if (t.annotations.destructive) annotations["destructiveHint"] = *t.annotations.destructive;
      return policy::tool_hints(annotations);
    }
  }
  return {};
}

std::string McpHost::log_path(const std::string& server) const {
  for (const auto& s : servers_)
    if (s->config.name == server) return s->log;
  return "";
}

std::vector<McpServerStatus> McpHost::status() const {
  std::lock_guard<std::mutex> lock(status_mu_);
  std::vector<McpServerStatus> out;
  for (const auto& s : servers_) out.push_back(s->shown);
  return out;
}

void McpHost::set_on_status(std::function<void(const McpServerStatus&)> send) {
  std::lock_guard<std::mutex> lock(status_mu_);
  on_status_ = std::move(send);
}

void McpHost::report(Server& s, const std::function<void(McpServerStatus&)>& change) {
  std::lock_guard<std::mutex> lock(status_mu_);
  McpServerStatus now = s.shown;
  change(now);
  if (now == s.shown) return;  // only a change is sent
  s.shown = now;
  if (on_status_) on_status_(now);  // under the lock: frames leave in the order of the changes
}

void McpHost::set_state(Server& s, const char* state, std::string error) {
  report(s, [&](McpServerStatus& st) {
    st.state = state;
    st.error = std::move(error);
    st.restarts = std::clamp(s.starts - 1, 0, kMaxRestarts);
  });
}

Result<void> McpHost::start_for_call(Server& s) {
  const bool ran = status_of(s).state != "not started";  // it ran (or failed) before
  if (ran && s.starts <= kMaxRestarts)
    report(s, [&](McpServerStatus& st) {
      st.state = "restarting";
      st.error.clear();
      st.restarts = s.starts;  // the restart under way
    });
  auto up = start_server(s);
  if (up) set_state(s, "started");
  else set_state(s, "failed", up.error().message());
  return up;
}

McpServerStatus McpHost::status_of(const Server& s) const {
  std::lock_guard<std::mutex> lock(status_mu_);
  return s.shown;
}

Result<mcp::CallOutcome> McpHost::call(const mcp::ToolRef& ref, const json& arguments,
                                       std::stop_token stop,
                                       std::function<void(const mcp::Progress&)> progress) {
  Server* found = nullptr;
  for (const auto& s : servers_)
    if (s->config.name == ref.server) found = s.get();
  if (found == nullptr) return fail("mcp server " + ref.server + ": not a server of this session");
  std::shared_ptr<mcp::Client> client;
  {
    std::lock_guard<std::mutex> lock(found->mu);
    if (!found->client || found->client->ended()) MOAT_TRY(start_for_call(*found));
    client = found->client;
  }
  auto outcome = client->call_tool(ref.tool, arguments, stop, std::move(progress));
  // The session keeps the tools it listed at its start; /mcp says the server's changed.
  if (client->tools_changed())
    report(*found, [](McpServerStatus& st) { st.tools_changed = true; });
  return outcome;
}

void McpHost::stop() {
  set_on_status(nullptr);  // the session is ending: its connection takes no more status
  for (const auto& s : servers_) {
    s->stopping.request_stop();
    std::lock_guard<std::mutex> lock(s->mu);
    stop_server(*s);
  }
}

std::vector<BindMount> with_mcp_reads(std::vector<BindMount> binds, const policy::Policy& policy) {
  auto covered = [&binds](const std::string& dir) {
    for (const std::string& tree : default_read_only_paths())
      if (path_within(dir, tree)) return true;
    for (const BindMount& b : binds)
      if (path_within(dir, b.target)) return true;
    return false;
  };
  for (const policy::McpServerConfig& c : policy.mcp_servers())
    for (const std::string& dir : c.read)
      if (!covered(dir)) binds.push_back(BindMount{dir, dir, false});
  return binds;
}

std::shared_ptr<McpHost> start_mcp_servers(SessionState& session, AskBroker& asks,
                                           McpHostOptions options) {
  if (session.policy->mcp_servers().empty()) return nullptr;
  auto host = std::make_shared<McpHost>(session, asks, options);
  host->start();
  for (const tools::ToolSpec& spec : host->tool_specs()) {
    session.tool_specs.push_back(spec);
    session.granted.insert(spec.name);
  }
  return host;
}

}  // namespace moat::sandbox

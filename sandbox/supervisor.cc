// sandbox/supervisor.cc: moatd's serving loop: frames in, policy and audit, sandboxed calls.
#include "sandbox/supervisor.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <poll.h>
#include <unistd.h>

#include <openssl/evp.h>

#include <chrono>
#include <condition_variable>
#include <set>
#include <ctime>
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/thread_set.h"
#include "policy/digest.h"
#include "sandbox/connection_limit.h"
#include "sandbox/frame_writer.h"
#include "sandbox/own_files.h"
#include "sandbox/protect.h"
#include "sandbox/protocol.h"
#include "sandbox/session.h"
#include "sandbox/session_runner.h"
#include "sandbox/sys.h"
#include "sandbox/workspace.h"
#include "sessions/audit.h"
#include "sessions/digest.h"
#include "tools/registry.h"
#include "tools/schema.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  std::size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(buf.data() + got, bytes - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
  }
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : buf) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// Incremental SHA-256 over a call's output as it streams (EVP: the non-deprecated API).
class Sha256Stream {
 public:
  Sha256Stream() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr);
  }
  void update(std::string_view d) { EVP_DigestUpdate(ctx_.get(), d.data(), d.size()); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_.get(), md, &n);
    static const char* const kHex = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < n; ++i) {
      out += kHex[md[i] >> 4];
      out += kHex[md[i] & 15];
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

json rule_json(const policy::RuleRef& r) {
  return {{"id", r.id}, {"layer", r.layer}, {"file", r.file}, {"line", r.line}};
}

// "refused by policy: rule org.no-force-push (system, /etc/moat/policy.d/00.toml:17): why"
std::string refusal_text(const policy::Decision& d, std::string_view what) {
  if (d.decided_by == "user")
    return std::string(what) + " declined by the person (rule " + d.deciding.id +
           " asked for approval). Do not retry it; find another way or ask the person.";
  std::string s = std::string(what) + " refused by policy (" + policy::verdict_name(d.verdict) +
                  "): rule " + d.deciding.id + " (" + d.deciding.layer;
  if (!d.deciding.file.empty())
    s += ", " + d.deciding.file + ":" + std::to_string(d.deciding.line);
  s += ")";
  if (!d.reason.empty()) s += ": " + d.reason;
  if (d.verdict == policy::Verdict::kAsk)
    s += ". It needs a person's approval, which this session cannot ask for (headless).";
  return s;
}

// Turns the policy's combined resources into the sandbox's limits.
Limits limits_from(const json& r) {
  Limits l;
  auto num = [&](const char* key, auto& field) {
    if (r.contains(key) && r[key].is_number())
      field = r[key].get<std::remove_reference_t<decltype(field)>>();
  };
  num("wall_time_s", l.wall_time_s);
  num("cpu_time_s", l.cpu_time_s);
  num("memory_bytes", l.memory_bytes);
  num("pids", l.pids);
  num("file_size", l.file_size);
  num("open_files", l.open_files);
  num("output_bytes", l.output_bytes);
  num("session_wall_time_s", l.session_wall_time_s);
  num("tmp_size", l.tmp_size);
  return l;
}

std::string iso_time(std::chrono::system_clock::time_point t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm {};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(ns % 1000000000));
  return buf;
}

// The policy read the project layer by path (policy/layer.cc); the session runs on the
// directory the workspace fd names. A loaded project layer must be that directory's own
// `.moat/policy.toml`, reached beneath the fd (symlinks only within it): were the path swapped
// between the check and the load, another directory's trusted policy would govern this session.
Result<void> check_project_layer_is_the_workspaces(const policy::Policy& p, int workspace_fd) {
  const json project = p.project_json();
  if (!project.is_object() || !project.value("loaded", false)) return {};
  const std::string refusal = "the project policy that was loaded is not the workspace's own "
                              ".moat/policy.toml";
  auto fd = sys::open_beneath(workspace_fd, ".moat/policy.toml", O_RDONLY | O_NONBLOCK | O_NOCTTY,
                              false);
  if (!fd) return fail(fd.error().with_context(refusal));  // EXDEV: it leads outside
  auto text = sys::read_to_end(fd->get(), 16u << 20);
  if (!text) return fail(text.error().with_context(refusal));
  if (policy::sha256_hex(*text) != project.value("sha256", ""))
    return fail(refusal + " (it changed, or the workspace path did, while the session was set up)");
  return {};
}

// The checkpoint key, loaded (or created) once per path for the life of moatd.
Result<std::shared_ptr<const sessions::AuditKey>> audit_key(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const sessions::AuditKey>> keys;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = keys.find(path); it != keys.end()) return it->second;
  MOAT_ASSIGN_OR_RETURN(std::unique_ptr<sessions::AuditKey> key,
                        sessions::AuditKey::load_or_create(path));
  std::shared_ptr<const sessions::AuditKey> shared = std::move(key);
  keys[path] = shared;
  return shared;
}

// A word longer than kMaxCommandBytes cannot be exec'd (execve: E2BIG past MAX_ARG_STRLEN),
// so its record keeps that much and its length: a client's 15 MiB grep pattern must not
// become 15 MiB of audit log per call.
json argv_for_audit(const std::vector<std::string>& argv) {
  json out = json::array();
  for (const std::string& word : argv) {
    if (word.size() <= kMaxCommandBytes) {
      out.push_back(word);
    } else {
      out.push_back(cut_utf8(word, kMaxCommandBytes) + "[" + std::to_string(word.size()) +
                    " bytes]");
    }
  }
  return out;
}

// Wraps the session's runner for one call: every process the call executes is recorded
// (pid, exit, signal, the limit that killed it, output bytes and their SHA-256) from what
// moatd itself observed, not from what the tool reports.
class AuditingRunner final : public tools::SandboxRunner {
 public:
  explicit AuditingRunner(tools::SandboxRunner& inner) : inner_(inner) {}

  Result<tools::ExecStatus> exec(const std::vector<std::string>& argv, const std::string& cwd,
                                 double timeout_s,
                                 const std::function<void(std::string_view)>& on_output,
                                 StopFlags stop) override {
    Sha256Stream sha;
    const auto start = std::chrono::system_clock::now();
    auto st = inner_.exec(argv, cwd, timeout_s,
                          [&](std::string_view chunk) {
                            sha.update(chunk);
                            if (on_output) on_output(chunk);
                          },
                          stop);
    json rec = {{"argv", argv_for_audit(argv)}, {"cwd", cwd}, {"start", iso_time(start)}};
    if (!st) {
      rec["error"] = st.error().message();
    } else {
      const std::string hex = sha.hex();
      rec["pid"] = st->pid;
      rec["duration_ms"] = st->duration.count();
      rec["exit"] = {{"code", st->signal == 0 ? json(st->exit_code) : json(nullptr)},
                     {"signal", st->signal != 0 ? json(st->signal) : json(nullptr)},
                     {"limit", st->limit.empty() ? (st->timed_out ? json("wall_time") : json(nullptr))
                                                 : json(st->limit)}};
      rec["cancelled"] = st->cancelled;
      rec["output_bytes"] = st->output_bytes;
      rec["output_sha256"] = "sha256:" + hex;
    }
    std::lock_guard<std::mutex> lock(mu_);
    processes_.push_back(std::move(rec));
    return st;
  }
  Result<std::string> run_handler(std::string_view request) override {
    return inner_.run_handler(request);
  }
  Result<UniqueFd> create_file(const std::string& sandbox_path) override {
    return inner_.create_file(sandbox_path);
  }
  json processes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return processes_;
  }

 private:
  tools::SandboxRunner& inner_;
  mutable std::mutex mu_;
  json processes_ = json::array();
};

class Connection {
 public:
  // `console`: the person's channel attached at spawn; `consoles`: where a shared moatd's
  // sessions wait for a console to attach with their token (null for a private moatd).
  Connection(const SupervisorOptions& options, UniqueFd fd, PeerCred peer, UniqueFd console,
             ConsoleRegistry* consoles)
      : options_(options), fd_(std::move(fd)), peer_(peer),
        writer_(fd_.get(), std::chrono::milliseconds(static_cast<long long>(
                               options.client_stall_timeout_s * 1000))),
        console_fd_(std::move(console)), consoles_(consoles) {}
  ~Connection() { finish(); }

  void run();

 private:
  void send(const json& m);
  // Waits for bytes to read; false (after an error frame) when the hello or a begun frame
  // misses its deadline (kHelloDeadline, kFrameDeadline), or the socket fails.
  bool wait_readable(const FrameDecoder& decoder);
  void send_error(const std::string& message, const std::string& code,
                  const std::string& id = "");
  Result<void> on_hello(const json& m);
  void on_call(const json& m, std::size_t frame_bytes);
  std::string call_refusal(const std::string& id, std::size_t frame_bytes) const;
  void on_cancel(const json& m);
  void on_answer(const json& m);
  // Opens the session's console channel (interactive sessions): the private moatd's
  // socketpair end, or a one-time token in the welcome for a console to attach with.
  void open_console(json& welcome);
  void serve_console(const json& m, FrameDecoder& decoder);
  // Interactive sessions: an `ask` verdict goes to the person through the console channel,
  // never through the agent's connection. Returns the decision with decided_by "user" and
  // the answer recorded in `answer`; with no console attached, the verdict stays ask (deny).
  policy::Decision ask_person(policy::Decision d, const std::string& call_id,
                              const std::string& what, const std::atomic<bool>& cancel,
                              json& answer);
  void run_call(const std::string& id, const std::string& tool, const json& args,
                std::shared_ptr<std::atomic<bool>> cancel,
                std::shared_ptr<tools::MutationQueue::Ticket> ticket);
  Result<void> audit(const std::string& type, json fields,
                     sessions::AuditLog::Sync sync = sessions::AuditLog::Sync::kNow);
  Result<std::string> audit_decision(const policy::Decision& d, const std::string& tool,
                                     const std::string& call_id, json input);
  void finish();

  const SupervisorOptions& options_;
  UniqueFd fd_;
  PeerCred peer_;
  // Every frame to the client goes through it: a client that stops reading blocks no call's
  // deadline or cancel, and is disconnected after the stall timeout. Destroyed after
  // finish() (which runs in ~Connection) has queued the last results, before fd_ closes.
  FrameWriter writer_;
  bool greeted_ = false;
  bool headless_ = true;
  std::string session_id_;
  std::string workspace_;
  UniqueFd workspace_fd_;  // the directory workspace_ named when it was checked (workspace.h)
  std::unique_ptr<policy::Policy> policy_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<SessionRunner> runner_;
  std::unique_ptr<sessions::AuditLog> audit_;
  std::chrono::steady_clock::time_point hello_deadline_;
  std::optional<std::chrono::steady_clock::time_point> frame_deadline_;
  std::uint64_t frame_seq_ = 0;
  std::mutex calls_mu_;
  std::map<std::string, std::shared_ptr<std::atomic<bool>>> inflight_;
  std::size_t running_bytes_ = 0;  // frame bytes of the calls in inflight_ (kMaxRunningCallBytes)
  // edit/write wait for each other per canonical path within this session only: another
  // session's unanswered ask or slow writes never hold this one's.
  tools::MutationQueue mutations_;
  // One thread per running call, joined at the next call once finished (base/thread_set.h).
  ThreadSet threads_;
  std::set<std::string> granted_;
  UniqueFd console_fd_;
  ConsoleRegistry* consoles_;
  std::shared_ptr<ConsoleLink> console_;     // the person's channel, when the session has one
  std::thread console_thread_;               // serves an attached-at-spawn console
  std::mutex ask_mu_;
  std::set<std::string> session_allows_;     // "for the session" answers, by what was asked
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool finished_ = false;
  int calls_ = 0;
};

void Connection::send(const json& m) {
  auto encoded = try_encode_frame(m);
  bool close_after = false;
  if (!encoded) {
    // Validation bounds every field a reply echoes (protocol.h); this is the net under it:
    // an oversized reply becomes a short error, for this client only, never an abort.
    MOAT_LOG_ERROR("reply to pid %d: %s", peer_.pid, encoded.error().message().c_str());
    const std::string type = m.value("type", "");
    if (type == "result") {
      json r = tools::ToolResult::error("the result exceeded the protocol's frame limit: " +
                                        encoded.error().message())
                   .to_json();
      r["type"] = "result";
      r["id"] = m.value("id", "");
      encoded = try_encode_frame(r);
    } else {
      encoded = try_encode_frame(error_frame("moatd's '" + type + "' reply: " +
                                                 encoded.error().message(),
                                             "protocol"));
      close_after = true;
    }
  }
  // The writer thread sends it (sandbox/frame_writer.h): no caller blocks on the client.
  writer_.push(std::move(*encoded));
  // The reader sees the end and finishes; the writer still sends the error frame first.
  if (close_after) ::shutdown(fd_.get(), SHUT_RD);
}

void Connection::send_error(const std::string& message, const std::string& code,
                            const std::string& id) {
  send(error_frame(message, code, id));
}

Result<void> Connection::audit(const std::string& type, json fields,
                               sessions::AuditLog::Sync sync) {
  if (!audit_) return fail(std::string("audit log is not open"));
  auto r = audit_->append(type, std::move(fields), sync);
  if (!r) {
    MOAT_LOG_ERROR("audit append %s: %s", type.c_str(), r.error().message().c_str());
    if (policy_ && policy_->audit_required()) return r;
  }
  return {};
}

// Writes the decision record before anything runs (write-ahead). A failed write refuses the
// action: an action that cannot be audited does not happen.
Result<std::string> Connection::audit_decision(const policy::Decision& d, const std::string& tool,
                                               const std::string& call_id, json input) {
  const std::string decision_id = random_hex(16);
  json matched = json::array();
  for (const auto& m : d.matched) matched.push_back(m.id);
  json rec = {{"decision_id", decision_id},
              {"tool", tool},
              {"call_id", call_id},
              {"input", std::move(input)},
              {"result", policy::verdict_name(d.verdict)},
              {"deciding_rule", rule_json(d.deciding)},
              {"matched", matched},
              {"decided_by", d.decided_by},
              // Which channel decided: a person's answer only ever comes from the console.
              {"channel", d.decided_by == "user" ? "console" : "policy"},
              {"interactive", !headless_},
              {"mode", headless_ ? "auto" : "ask"},
              {"policy_hash", policy_->policy_hash()}};
  if (json units = d.detail(); !units.is_null()) rec["units"] = std::move(units);
  // Nothing runs without its decision on disk, whatever audit_required says: an exec record
  // must never name a decision the log lacks (`moat audit verify` fails on one).
  if (!audit_) return fail(std::string("audit log is not open"));
  if (auto r = audit_->append("decision", std::move(rec)); !r) {
    MOAT_LOG_ERROR("audit append decision: %s", r.error().message().c_str());
    return fail(r.error());
  }
  return decision_id;
}

bool Connection::wait_readable(const FrameDecoder& decoder) {
  using Clock = std::chrono::steady_clock;
  // A frame's deadline starts when its first bytes are seen; the decoder's frame count
  // tells a new frame from the rest of the same one.
  if (decoder.buffered() == 0) {
    frame_deadline_.reset();
  } else if (!frame_deadline_ || decoder.frames() != frame_seq_) {
    frame_deadline_ = Clock::now() + kFrameDeadline;
    frame_seq_ = decoder.frames();
  }
  std::optional<Clock::time_point> deadline = frame_deadline_;
  const bool hello_first = !greeted_ && (!deadline || hello_deadline_ < *deadline);
  if (hello_first) deadline = hello_deadline_;
  for (;;) {
    int timeout_ms = -1;
    if (deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
      timeout_ms = static_cast<int>(std::max<long long>(0, left.count()));
    }
    pollfd p{fd_.get(), POLLIN, 0};
    const int r = ::poll(&p, 1, timeout_ms);
    if (r > 0) return true;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (hello_first)
      send_error("no complete 'hello' within " + std::to_string(kHelloDeadline.count()) +
                     " s of connecting", "protocol");
    else
      send_error("a frame was begun but not completed within " +
                     std::to_string(kFrameDeadline.count()) + " s", "protocol");
    return false;
  }
}

void Connection::run() {
  FrameDecoder decoder;
  char buf[65536];
  hello_deadline_ = std::chrono::steady_clock::now() + kHelloDeadline;
  for (;;) {
    if (!wait_readable(decoder)) return;
    ssize_t n = ::read(fd_.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // hang-up or error: the session ends
    decoder.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    for (;;) {
      auto frame = decoder.next();
      if (!frame) {
        send_error(frame.error().message(), "protocol");
        return;
      }
      if (!frame->has_value()) break;
      const json& m = **frame;
      auto type = validate_client_message(m, decoder.last_payload_bytes());
      if (!type) {
        send_error(type.error().message(), "protocol");
        return;
      }
      if (!greeted_ && *type == ClientMessage::kConsole) {
        serve_console(m, decoder);  // this connection is a session's console from now on
        return;
      }
      if (!greeted_ && *type != ClientMessage::kHello) {
        send_error("the first frame must be 'hello'", "protocol");
        return;
      }
      switch (*type) {
        case ClientMessage::kHello: {
          if (greeted_) {
            send_error("'hello' was already received", "protocol");
            return;
          }
          if (auto r = on_hello(m); !r) return;  // on_hello sent the error
          break;
        }
        case ClientMessage::kCall:
          on_call(m, decoder.last_payload_bytes());
          break;
        case ClientMessage::kCancel:
          on_cancel(m);
          break;
        case ClientMessage::kAnswer:
          on_answer(m);
          break;
        case ClientMessage::kBye:
          finish();
          send({{"type", "bye"}});
          return;
        case ClientMessage::kConsole:
          send_error("'console' opens a console connection; it cannot follow 'hello'", "protocol");
          return;
      }
    }
  }
}

Result<void> Connection::on_hello(const json& m) {
  if (m["version"].get<long long>() != kProtocolVersion) {
    send_error("protocol version " + m["version"].dump() + " is not supported (this moatd speaks " +
                   std::to_string(kProtocolVersion) + ")",
               "protocol");
    return fail(std::string("version"));
  }
  if (m.contains("headless") && m["headless"].is_boolean()) headless_ = m["headless"].get<bool>();
  // Interactive needs a channel to the person that the agent cannot forge. A private moatd
  // started without a console socketpair has none, whatever the agent claims.
  if (!console_fd_.valid() && consoles_ == nullptr) headless_ = true;
  // The workspace: an existing directory, and the peer's own (or the peer is root). moatd may
  // be root: it must not lend its rights to another user's directory. Resolved once, with no
  // symlink followed: the session is built from this fd, so swapping the path for a link after
  // the check changes nothing (workspace.h).
  const std::string requested = m["workspace"].get<std::string>();
  auto opened = open_workspace(requested, peer_.uid == 0 ? std::nullopt
                                                         : std::optional<uid_t>(peer_.uid));
  if (!opened) {
    send_error("workspace " + moat::quoted(requested) + ": " + opened.error().message(),
               "workspace");
    return fail(opened.error());
  }
  workspace_ = opened->path;
  workspace_fd_ = std::move(opened->fd);
  session_id_ = random_hex(16);

  policy::LoadOptions lo = options_.policy;
  lo.workspace = workspace_;
  lo.headless = headless_;
  auto pol = policy::Policy::load(lo);
  if (!pol) {
    send_error("policy: " + pol.error().message(), "policy");
    return fail(pol.error());
  }
  policy_ = std::move(*pol);
  if (auto own = check_project_layer_is_the_workspaces(*policy_, workspace_fd_.get()); !own) {
    send_error("policy: " + own.error().message(), "policy");
    return fail(own.error());
  }
  // The organisation may restrict how sessions run: headless sessions run in "auto" mode
  // (ask becomes deny), interactive ones in "ask" mode.
  const std::string mode = headless_ ? "auto" : "ask";
  if (!policy_->mode_allowed(mode)) {
    send_error("policy: mode '" + mode + "' is not allowed by the organisation's constraints",
               "policy");
    return fail(std::string("mode"));
  }

  auto key = audit_key(audit_key_path(options_));
  // Without its key the log is still written, unsigned, and session.start says why: the
  // chain alone still shows edits, only not a rewrite by someone who can write the file.
  std::string signing = "ed25519";
  if (!key) {
    signing = "off: " + key.error().message();
    MOAT_LOG_ERROR("audit key: %s", key.error().message().c_str());
  }
  auto log = sessions::AuditLog::open(options_.audit_dir, session_id_, policy_->policy_hash(),
                                      key ? *key : nullptr);
  if (!log) {
    MOAT_LOG_ERROR("audit log: %s", log.error().message().c_str());
    if (policy_->audit_required()) {
      send_error("audit log: " + log.error().message() + " (the policy requires an audit log)",
                 "audit");
      return fail(log.error());
    }
  } else {
    audit_ = std::move(*log);
  }

  SessionConfig cfg;
  cfg.workspace = workspace_;
  cfg.workspace_fd = workspace_fd_.get();
  cfg.protected_paths = {".git/hooks", ".git/config", ".moat"};
  for (const auto& p : host_executed_paths()) cfg.protected_paths.push_back(p.pattern);
  for (const auto& g : policy_->protected_globs()) cfg.protected_paths.push_back(g);
  // Read-denied paths (.env, *.pem, ...) are hidden from the code too, not only from the
  // file tools: the policy's path rules and the sandbox's view must agree.
  cfg.hidden_paths = policy_->unreadable_globs();
  // moat's own config (where the API key is sent), policies, trust pins, sessions and audit
  // logs are out of reach of a workspace at or above the home directory that holds them.
  if (auto r = protect_own_files(own_files(options_, peer_.uid), workspace_, &cfg.protected_paths,
                                 &cfg.hidden_paths);
      !r) {
    send_error(r.error().message(), "workspace");
    (void)audit("session.refused", {{"reason", r.error().message()}});
    return r;
  }
  cfg.limits = limits_from(policy_->resources());
  cfg.unprivileged_uid = options_.unprivileged_uid;
  cfg.unprivileged_gid = options_.unprivileged_gid;
  cfg.allow_without = options_.allow_without;
  cfg.handler = &tools::handle_in_sandbox;
  auto session = Session::create(cfg);
  if (!session) {
    send_error("sandbox: " + session.error().message(), "sandbox");
    (void)audit("session.refused", {{"reason", session.error().message()},
                                    {"peer", {{"uid", peer_.uid}, {"gid", peer_.gid},
                                              {"pid", peer_.pid}}}});
    return fail(session.error());
  }
  session_ = std::move(*session);
  runner_ = std::make_unique<SessionRunner>(*session_);

  json tools = json::array();
  json granted_names = json::array();
  for (const auto& t : tools::all_tools()) {
    if (policy_->decide_tool(t.name).verdict == policy::Verdict::kDeny) continue;
    granted_.insert(t.name);
    granted_names.push_back(t.name);
    tools.push_back(t.to_json());
  }
  json start = {{"moat_version", MOAT_VERSION},
                {"peer", {{"uid", peer_.uid}, {"gid", peer_.gid}, {"pid", peer_.pid}}},
                {"workspace", workspace_},
                {"interactive", !headless_},
                {"console", headless_ ? "none" : console_fd_.valid() ? "socketpair" : "token"},
                {"layers", policy_->layers_json()},
                {"policy_hash", policy_->policy_hash()},
                {"sandbox", json::parse(session_->describe_json(), nullptr, false)},
                {"tools", granted_names},
                {"audit_signing", signing}};
  // Whether the workspace's .moat/policy.toml was loaded, or skipped and why (unpinned, or
  // changed since it was pinned): the policy checked its hash against the pin itself.
  if (json project = policy_->project_json(); !project.is_null()) start["project_policy"] = std::move(project);
  if (auto r = audit("session.start", std::move(start)); !r) {
    send_error("audit log: " + r.error().message() + " (the policy requires an audit log)",
               "audit");
    return r;
  }
  greeted_ = true;
  json welcome = {{"type", "welcome"},
                  {"version", kProtocolVersion},
                  {"session", session_id_},
                  {"tools", tools},
                  {"workspace", workspace_},
                  {"audit", audit_ ? audit_->path() : ""},
                  {"sandbox", json::parse(session_->describe_json(), nullptr, false)}};
  if (!headless_) open_console(welcome);
  send(welcome);
  return {};
}

void Connection::open_console(json& welcome) {
  if (console_fd_.valid()) {
    console_ = std::make_shared<ConsoleLink>(std::move(console_fd_));
    console_thread_ = std::thread([link = console_] {
      FrameDecoder decoder;
      link->serve(decoder);
    });
    return;
  }
  // A shared moatd: the client's console attaches on a connection of its own with this
  // token, which works once. `moat run` attaches it before the loop exists.
  const std::string token = random_hex(32);
  console_ = std::make_shared<ConsoleLink>(peer_.uid, token);
  consoles_->add(session_id_, console_);
  welcome["console_token"] = token;
}

void Connection::serve_console(const json& m, FrameDecoder& decoder) {
  std::shared_ptr<ConsoleLink> link =
      consoles_ == nullptr ? nullptr : consoles_->find(m["session"].get<std::string>());
  // One answer for every refusal: a wrong guess learns nothing about which check failed.
  if (!link || !link->claim(m["token"].get<std::string>(), peer_.uid, fd_)) {
    send_error("console: no session waits for a console with this token", "console");
    return;
  }
  (void)link->send({{"type", "attached"}, {"session", m["session"]}});
  link->serve(decoder);
}

// Why a call cannot start now (calls_mu_ held), or "" when it may.
std::string Connection::call_refusal(const std::string& id, std::size_t frame_bytes) const {
  if (inflight_.count(id) != 0) return "call id " + moat::quoted(id) + " is already running";
  // Each running call holds a thread and its arguments: a client gets a bounded share.
  if (inflight_.size() >= kMaxConcurrentCalls)
    return "refused: " + std::to_string(inflight_.size()) +
           " calls are already running on this connection (the limit is " +
           std::to_string(kMaxConcurrentCalls) + "); wait for one to finish";
  if (running_bytes_ + frame_bytes > kMaxRunningCallBytes)
    return "refused: the running calls' arguments already hold " +
           std::to_string(running_bytes_) + " bytes (the limit is " +
           std::to_string(kMaxRunningCallBytes) + "); wait for one to finish";
  return "";
}

void Connection::on_call(const json& m, std::size_t frame_bytes) {
  const std::string id = m["id"].get<std::string>();
  const std::string tool = m["tool"].get<std::string>();
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  {
    std::lock_guard<std::mutex> lock(calls_mu_);
    if (std::string why = call_refusal(id, frame_bytes); !why.empty()) {
      send({{"type", "result"}, {"id", id}, {"isError", true},
            {"content", {{{"type", "text"}, {"text", why}}}}});
      return;
    }
    inflight_[id] = cancel;
    running_bytes_ += frame_bytes;
  }
  ++calls_;
  // edit/write take their place in the session's mutation queue here, on the thread that
  // reads frames, so they run in the order they arrived whatever order their threads start.
  tools::CallContext order;
  order.mutations = &mutations_;
  tools::take_mutation_ticket(tool, order);
  threads_.spawn([this, id, tool, args = m["arguments"], cancel, frame_bytes,
                  ticket = std::move(order.mutation_ticket)] {
    run_call(id, tool, args, cancel, ticket);
    std::lock_guard<std::mutex> lock(calls_mu_);
    inflight_.erase(id);
    running_bytes_ -= frame_bytes;
  });
}

void Connection::on_cancel(const json& m) {
  std::lock_guard<std::mutex> lock(calls_mu_);
  auto it = inflight_.find(m["id"].get<std::string>());
  if (it != inflight_.end()) it->second->store(true);
}

void Connection::on_answer(const json&) {
  // The agent's own connection never answers: the person's answers come only from the
  // console channel (console_link.h). Dropped unread and unanswered, so an agent sending
  // them neither decides anything nor makes moatd hold or write anything.
}

policy::Decision Connection::ask_person(policy::Decision d, const std::string& call_id,
                                        const std::string& what, const std::atomic<bool>& cancel,
                                        json& answer) {
  if (d.verdict != policy::Verdict::kAsk || headless_) return d;
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(ask_mu_);
    if (session_allows_.count(what) != 0) {
      d.verdict = policy::Verdict::kAllow;
      d.decided_by = "user";
      answer = {{"answer", "allow"}, {"scope", "session"}, {"remembered", true}, {"latency_ms", 0}};
      return d;
    }
  }
  const std::string ask_id = random_hex(8);
  std::string question = what + " needs your approval: rule " + d.deciding.id + " (" +
                         d.deciding.layer + ") says ask";
  if (!d.reason.empty()) question += ": " + d.reason;
  // No console attached (not yet, or it hung up): nobody can answer, the verdict stays ask.
  std::optional<json> asked =
      console_ ? console_->ask({{"type", "ask"}, {"id", call_id}, {"ask", ask_id},
                                {"question", question}, {"rule", rule_json(d.deciding)}},
                               cancel)
               : std::nullopt;
  if (!asked) return d;
  const json& reply = *asked;
  if (reply.contains("unanswered")) {
    // Cancelled, or the console went away: a deny, but not a person's.
    d.verdict = policy::Verdict::kDeny;
    d.reason = "nobody answered (the call was cancelled or the console hung up)";
    return d;
  }
  std::lock_guard<std::mutex> lock(ask_mu_);
  const bool allow = reply.value("decision", "deny") == "allow";
  const std::string scope = reply.value("scope", "once");
  if (allow && scope == "session") session_allows_.insert(what);
  d.verdict = allow ? policy::Verdict::kAllow : policy::Verdict::kDeny;
  d.decided_by = "user";
  answer = {{"answer", allow ? "allow" : "deny"},
            {"scope", scope},
            {"channel", "console"},
            {"latency_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - t0)
                               .count()}};
  if (!allow) d.reason = "the person declined";
  return d;
}

void Connection::run_call(const std::string& id, const std::string& tool, const json& args,
                          std::shared_ptr<std::atomic<bool>> cancel,
                          std::shared_ptr<tools::MutationQueue::Ticket> ticket) {
  auto reply = [&](const tools::ToolResult& r) {
    json out = r.to_json();
    out["type"] = "result";
    out["id"] = id;
    send(out);
  };
  // Only announced tools may be called; an unknown name is the model's mistake, answered
  // as an error result it can read, and audited as a refusal.
  if (granted_.count(tool) == 0) {
    policy::Decision d = policy_->decide_tool(tool);
    if (tools::find_tool(tool) == nullptr) d.reason = "no such tool";
    d.verdict = policy::Verdict::kDeny;
    (void)audit_decision(d, tool, id, {{"tool", tool}});
    std::string names;
    for (const auto& g : granted_) names += (names.empty() ? "" : ", ") + g;
    reply(tools::ToolResult::error("unknown or refused tool " + moat::quoted(tool) +
                                   "; the tools of this session are: " + names));
    return;
  }
  // Before the policy sees them: a path or command cut at a NUL by the kernel or argv is not
  // the one that would be judged (`server.pem\0` is not `*.pem`, the file opened is).
  if (auto field = tools::field_with_nul(args)) {
    reply(tools::ToolResult::error("refused: argument " + moat::quoted(*field) +
                                   " holds a NUL byte, which no path, command or pattern may"));
    return;
  }
  policy::Decision d = policy_->decide_tool(tool);
  json input = {{"tool", tool}};
  if (tool == "bash" && args.contains("command") && args["command"].is_string()) {
    const std::string line = args["command"].get<std::string>();
    policy::Decision cd = policy_->decide_command(line, workspace_);
    if (cd.verdict >= d.verdict) d = cd;
    input["script_sha256"] = "sha256:" + sessions::sha256_hex(line);
    input["command"] = line;
    input["cwd"] = workspace_;
  }
  json answer;
  d = ask_person(std::move(d), id,
                 tool == "bash" && input.contains("command")
                     ? "the command " + moat::quoted(input["command"].get<std::string>())
                     : "the tool " + tool,
                 *cancel, answer);
  if (!answer.is_null()) input["user"] = answer;
  auto decision_id = audit_decision(d, tool, id, input);
  if (!decision_id) {
    reply(tools::ToolResult::error("refused: the audit log could not be written (" +
                                   decision_id.error().message() + ")"));
    return;
  }
  if (d.verdict != policy::Verdict::kAllow) {
    reply(tools::ToolResult::error(refusal_text(d, "this call was")));
    return;
  }

  AuditingRunner auditing(*runner_);
  tools::CallContext ctx;
  ctx.runner = &auditing;
  ctx.mutations = &mutations_;
  ctx.mutation_ticket = std::move(ticket);
  ctx.workspace = workspace_;
  ctx.cancel = cancel.get();
  json res = policy_->resources();
  if (res.contains("wall_time_s") && res["wall_time_s"].is_number()) {
    ctx.max_timeout_s = res["wall_time_s"].get<double>();
    ctx.default_timeout_s = std::min(120.0, ctx.max_timeout_s);
  }
  if (res.contains("output_bytes") && res["output_bytes"].is_number())
    ctx.output_ceiling = res["output_bytes"].get<std::uint64_t>();
  ctx.progress = [this, &id](std::string_view chunk) {
    send({{"type", "progress"}, {"id", id}, {"chunk", std::string(chunk)}});
  };
  ctx.authorize = [this, &id, &tool, &cancel](const std::string& path,
                                              tools::PathAccess access) -> std::optional<std::string> {
    const bool write = access == tools::PathAccess::kWrite;
    policy::Decision pd = policy_->decide_path(path, write ? policy::Access::kWrite
                                                           : policy::Access::kRead);
    json answer;
    pd = ask_person(std::move(pd), id,
                    std::string(write ? "writing " : "reading ") + moat::quoted(path), *cancel,
                    answer);
    json in = {{"path", path}, {"access", write ? "write" : "read"}};
    if (!answer.is_null()) in["user"] = answer;
    auto did = audit_decision(pd, tool, id, in);
    if (!did) return "refused: the audit log could not be written (" + did.error().message() + ")";
    if (pd.verdict != policy::Verdict::kAllow)
      return refusal_text(pd, std::string("access to ") + moat::quoted(path) + " was");
    return std::nullopt;
  };

  const auto t0 = std::chrono::system_clock::now();
  tools::ToolResult result = tools::execute(tool, args, ctx);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now() - t0)
                      .count();
  json exec = {{"decision_id", *decision_id}, {"call_id", id}, {"tool", tool},
               {"cwd", workspace_}, {"duration_ms", ms}, {"is_error", result.is_error}};
  exec["processes"] = auditing.processes();
  for (const char* key : {"filesMutated", "path", "fullOutputPath", "timedOut"})
    if (result.details.is_object() && result.details.contains(key)) exec[key] = result.details[key];
  // The action already ran; its record reaches the disk with the next synced one (the next
  // call's decision, or session.end), which saves an fdatasync per call.
  (void)audit("exec", std::move(exec), sessions::AuditLog::Sync::kWithNext);
  reply(result);
}

void Connection::finish() {
  if (finished_) return;
  finished_ = true;
  {
    std::lock_guard<std::mutex> lock(calls_mu_);
    for (auto& [id, flag] : inflight_) flag->store(true);
  }
  threads_.join_all();
  if (console_) {
    if (consoles_ != nullptr) consoles_->remove(session_id_);
    console_->close();
  }
  if (console_thread_.joinable()) console_thread_.join();
  if (greeted_) {
    const auto secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_);
    (void)audit("session.end", {{"calls", calls_}, {"duration_s", secs.count()}});
  }
  runner_.reset();
  session_.reset();  // kills the session's init, and with it every process of the session
}

}  // namespace

Result<PeerCred> peer_credentials(int fd) {
  struct ucred cred {};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
    return fail(Error::from_errno("getsockopt", errno, "SO_PEERCRED"));
  return PeerCred{cred.pid, cred.uid, cred.gid};
}

void Supervisor::serve_connection(UniqueFd conn, UniqueFd console) {
  serve(std::move(conn), std::move(console), nullptr);
}

void Supervisor::serve(UniqueFd conn, UniqueFd console, ConsoleRegistry* consoles) {
  auto peer = peer_credentials(conn.get());
  if (!peer) {
    MOAT_LOG_ERROR("%s", peer.error().message().c_str());
    return;
  }
  try {
    Connection c(options_, std::move(conn), *peer, std::move(console), consoles);
    c.run();
  } catch (const std::exception& e) {
    // A bug must not take the daemon down with every other client's session.
    MOAT_LOG_ERROR("connection from pid %d ended by an exception: %s", peer->pid, e.what());
  }
}

// A slot for connection `c`, or (beyond a bound) an error frame sent without waiting and the
// connection closed: the accept loop never blocks on a client that does not read.
static Result<std::shared_ptr<void>> refuse_beyond_limit(int c, ConnectionLimit& limit) {
  auto peer = peer_credentials(c);
  Result<std::shared_ptr<void>> slot = fail(Error{0, "no peer credentials"});
  if (peer) slot = limit.take(peer->uid);
  if (!slot) {
    const std::string frame = encode_frame(error_frame(slot.error().message(), "protocol"));
    (void)::send(c, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(c);
  }
  return slot;
}

Result<void> Supervisor::serve_socket(const ListeningSocket& socket, const std::atomic<bool>& stop) {
  const int lfd = socket.fd();
  ThreadSet clients;  // a system moatd serves session after session: join each when it ends
  ConnectionLimit limit(kMaxConnectionsPerUser, kMaxConnections);
  while (!stop.load()) {
    pollfd p{lfd, POLLIN, 0};
    int r = ::poll(&p, 1, 200);
    clients.join_finished();
    if (r <= 0) continue;
    int c = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    auto slot = refuse_beyond_limit(c, limit);
    if (!slot) continue;
    clients.spawn([this, c, slot = *slot] { serve(UniqueFd(c), UniqueFd(), &consoles_); });
  }
  clients.join_all();
  return {};
}

}  // namespace moat::sandbox

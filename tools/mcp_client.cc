// tools/mcp_client.cc: the MCP client and its stdio transport (contract and bounds in
// mcp_client.h).
//
// One reader thread per client:
//  1. takes each message its transport received (stdio: the server's stdout, a LF-ended line
//     at a time, one JSON-RPC message per line, no embedded newline);
//  2. checks each message against the bounds before parsing: size, rate, nesting depth;
//  3. hands a response to the caller waiting on its id; a progress notification to that
//     caller's callback; notes tools/list_changed; answers the server's requests (ping with
//     an empty result, anything else with "method not found": we declare no client feature);
//  4. on EOF or a broken bound ends the connection: every waiting call fails with that error.
// Callers send with a deadline (a server that stops reading cannot hang us); the stdio
// transport writes under its write_mu.
#include "tools/mcp_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "base/base64.h"
#include "base/json_depth.h"
#include "base/lf_lines.h"
#include "base/log.h"
#include "base/sys.h"
#include "base/utf8.h"
#include "tools/image.h"
#include "tools/truncate.h"

namespace moat::tools::mcp {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// JSON-RPC 2.0's "method not found": the answer to a server's request for a feature we do
// not offer (sampling, roots, elicitation), so the server is not left waiting.
constexpr int kMethodNotFound = -32601;

// C0 controls (but LF and TAB), DEL and the C1 controls (U+0080..U+009F, which some terminals
// take as CSI and friends) move a terminal's cursor or recolour it: text from a server that a
// person or the model reads keeps them as visible \xNN.
bool is_control_sequence(std::string_view seq) {
  const auto b0 = static_cast<unsigned char>(seq[0]);
  if (seq.size() == 1) return (b0 < 0x20 && b0 != '\n' && b0 != '\t') || b0 == 0x7f;
  return seq.size() == 2 && b0 == 0xC2 && static_cast<unsigned char>(seq[1]) < 0xA0;
}

// Untrusted text made visible and cut to `max` bytes at a UTF-8 boundary (the escapes count).
std::string visible_text(std::string_view s, std::size_t max) {
  std::string out;
  while (!s.empty()) {
    std::size_t n = utf8_sequence_length(s);
    std::string piece;
    if (n == 0 || is_control_sequence(s.substr(0, n))) {
      n = n == 0 ? 1 : n;
      for (std::size_t i = 0; i < n; ++i) append_hex_escape(piece, static_cast<unsigned char>(s[i]));
    } else {
      piece = s.substr(0, n);
    }
    if (out.size() + piece.size() > max) break;
    out += piece;
    s.remove_prefix(n);
  }
  return out;
}

std::string string_at(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<bool> bool_at(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

std::string versions_we_speak() {
  std::string out;
  for (const auto v : kProtocolVersions) out += (out.empty() ? "" : ", ") + std::string(v);
  return out;
}

// Writes all of `bytes` before `deadline`. A pipe whose reader is gone raises SIGPIPE: it is
// blocked on this thread for the write and a pending one taken back, so the process lives
// whatever its SIGPIPE disposition (moatd ignores it; a test binary does not).
Result<void> write_until(int fd, std::string_view bytes, Clock::time_point deadline) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  int err = 0;
  while (!bytes.empty() && err == 0) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) { err = errno; break; }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, POLLOUT, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) == 0) err = ETIMEDOUT;
  }
  const timespec zero{0, 0};
  while (sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (err != 0) return fail(Error::from_errno("write", err, "its stdin"));
  return {};
}

struct Pending {
  std::string method;
  bool done = false;
  json result;
  std::optional<Error> error;
  std::size_t bytes = 0;  // the response line's
  std::function<void(const Progress&)> on_progress;
};

// Newline-delimited JSON-RPC on a server's stdin and stdout (the spec's stdio transport).
class StdioTransport final : public Transport {
 public:
  StdioTransport(std::string server, UniqueFd to_server, UniqueFd from_server, UniqueFd wake_read,
                 UniqueFd wake_write, std::size_t max_frame_bytes)
      : server_(std::move(server)), to_server_(std::move(to_server)),
        from_server_(std::move(from_server)), wake_read_(std::move(wake_read)),
        wake_write_(std::move(wake_write)), max_frame_bytes_(max_frame_bytes) {}

  Result<void> send(std::string_view message, Clock::time_point deadline) override {
    const std::string line = std::string(message) + "\n";
    std::lock_guard<std::mutex> lock(write_mu_);
    if (!to_server_.valid()) return fail(err("connection closed"));
    if (auto w = write_until(to_server_.get(), line, deadline); !w)
      return fail(w.error().with_context("mcp server " + server_));
    return {};
  }
  std::optional<Error> receive(const Deliver& deliver) override;
  void close() override {
    {
      std::lock_guard<std::mutex> lock(write_mu_);
      to_server_.reset();  // the server reads EOF on its stdin: the spec's stdio shutdown
    }
    const char byte = 1;
    (void)sys::write_all(wake_write_.get(), &byte, 1);
  }

 private:
  Error err(const std::string& what) const {
    return Error::msg("mcp server " + server_ + ": " + what);
  }

  std::string server_;
  std::mutex write_mu_;  // one message at a time on the server's stdin
  UniqueFd to_server_, from_server_, wake_read_, wake_write_;
  std::size_t max_frame_bytes_;
};

std::optional<Error> StdioTransport::receive(const Deliver& deliver) {
  std::string partial;
  char buf[64 * 1024];
  for (;;) {
    pollfd fds[2] = {{from_server_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return Error::from_errno("poll", errno).with_context("mcp server " + server_);
    }
    if (fds[1].revents != 0) return std::nullopt;  // close()
    const ssize_t n = ::read(from_server_.get(), buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0)
      return Error::from_errno("read", errno, "its stdout").with_context("mcp server " + server_);
    if (n == 0) return err("closed its stdout (the server ended)");
    std::optional<Error> broken;
    take_lf_lines(partial, std::string_view(buf, static_cast<std::size_t>(n)),
                  [&](std::string_view line) {
                    if (line.ends_with('\r')) line.remove_suffix(1);
                    if (!broken && !line.empty()) broken = deliver(line);
                  });
    if (!broken && partial.size() > max_frame_bytes_)
      broken = err("sent a message over " + std::to_string(max_frame_bytes_) +
                   " bytes (max_frame_bytes)");
    if (broken) return broken;
  }
}

}  // namespace

Result<std::unique_ptr<Transport>> stdio_transport(const std::string& server, UniqueFd to_server,
                                                   UniqueFd from_server,
                                                   const ServerLimits& limits) {
  // Non-blocking, so a write waits in poll() with a deadline (write_until).
  const int flags = ::fcntl(to_server.get(), F_GETFL);
  if (flags < 0 || ::fcntl(to_server.get(), F_SETFL, flags | O_NONBLOCK) < 0)
    return fail(
        Error::from_errno("fcntl", errno, "O_NONBLOCK").with_context("mcp server " + server));
  MOAT_ASSIGN_OR_RETURN(auto wake, sys::make_pipe());
  return std::unique_ptr<Transport>(
      new StdioTransport(server, std::move(to_server), std::move(from_server),
                         std::move(wake.first), std::move(wake.second), limits.max_frame_bytes));
}

struct Client::State {
  std::string server;
  ServerLimits limits;
  ServerInfo info;
  std::unique_ptr<Transport> transport;
  std::thread reader;
  std::atomic<bool> tools_changed{false};
  std::vector<std::string> skipped;  // by the last list_tools (its caller's thread only)
  bool closed = false;

  std::mutex mu;        // guards what follows
  std::condition_variable_any cv;
  std::map<std::int64_t, std::shared_ptr<Pending>> pending;
  std::optional<Error> ended;
  std::int64_t next_id = 1;

  // Reader-only state: the rate window.
  Clock::time_point window_start = Clock::now();
  std::size_t window_messages = 0;

  Error err(const std::string& what) const { return Error::msg("mcp server " + server + ": " + what); }

  Result<void> send(const json& message);
  Result<json> request(const std::string& method, json params, const std::stop_token& stop,
                       std::function<void(const Progress&)> on_progress = {},
                       std::size_t* bytes = nullptr);
  Result<void> initialize(const std::stop_token& stop);
  void read_loop();
  std::optional<Error> on_line(std::string_view line);
  std::optional<Error> check_bounds(std::string_view line);
  void on_response(const json& message, std::size_t bytes);
  void on_notification(const json& message);
  void answer_request(const json& message);
  void end(Error why);
};

Result<void> Client::State::send(const json& message) {
  // dump escapes every control byte in strings, so the text holds no LF (stdio's framing).
  return transport->send(message.dump(-1, ' ', false, json::error_handler_t::replace),
                         Clock::now() + limits.request_timeout);
}

Result<json> Client::State::request(const std::string& method, json params,
                                    const std::stop_token& stop,
                                    std::function<void(const Progress&)> on_progress,
                                    std::size_t* bytes) {
  auto p = std::make_shared<Pending>();
  p->method = method;
  p->on_progress = std::move(on_progress);
  std::int64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (ended) return fail(*ended);
    id = next_id++;
    pending[id] = p;
  }
  if (p->on_progress) params["_meta"]["progressToken"] = id;
  json message = {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
  auto sent = send(message);
  std::unique_lock<std::mutex> lock(mu);
  const bool answered = sent && cv.wait_until(lock, stop, Clock::now() + limits.request_timeout,
                                              [&] { return p->done; });
  pending.erase(id);
  lock.unlock();
  if (!sent) return fail(sent.error());
  if (!answered) {
    const bool stopped = stop.stop_requested();
    // The spec: a request being abandoned is cancelled, except initialize.
    if (method != "initialize")
      (void)send({{"jsonrpc", "2.0"},
                  {"method", "notifications/cancelled"},
                  {"params", {{"requestId", id}, {"reason", stopped ? "cancelled" : "timed out"}}}});
    if (stopped) return fail(err(method + ": cancelled"));
    return fail(err(method + ": no answer within " +
                    std::to_string(limits.request_timeout.count()) + " ms"));
  }
  if (bytes != nullptr) *bytes = p->bytes;  // 0 unless a response came (a result or an error)
  if (p->error) return fail(*p->error);
  return std::move(p->result);
}

Result<void> Client::State::initialize(const std::stop_token& stop) {
  json params = {{"protocolVersion", kProtocolVersions[0]},
                 {"capabilities", json::object()},  // no roots, sampling or elicitation
                 {"clientInfo", {{"name", "moat"}, {"version", "1"}}}};
  std::size_t answered = 0;
  auto r = request("initialize", std::move(params), stop, {}, &answered);
  // A server that answers initialize with an error may speak only the stateless revision
  // (2026-07-28 has no initialize): say which revisions we speak, as for an unknown version.
  if (!r && answered > 0)
    return fail(Error::msg(r.error().message() + "; moat speaks " + versions_we_speak() +
                           " (a server speaking only the stateless 2026-07-28 has no initialize)"));
  if (!r) return fail(r.error());
  const std::string version = string_at(*r, "protocolVersion");
  if (std::find(kProtocolVersions.begin(), kProtocolVersions.end(), version) ==
      kProtocolVersions.end())
    return fail(err("answered protocol version " + moat::quoted(version) + " to our " +
                    std::string(kProtocolVersions[0]) + "; moat speaks " + versions_we_speak()));
  info.protocol_version = version;
  const json server_info = r->value("serverInfo", json::object());
  info.name = visible_text(string_at(server_info, "name"), 128);
  info.version = visible_text(string_at(server_info, "version"), 64);
  info.instructions = visible_text(string_at(*r, "instructions"), limits.max_description_bytes);
  const json caps = r->value("capabilities", json::object());
  info.tools_list_changed = caps.is_object() && caps.contains("tools") &&
                            caps["tools"].is_object() &&
                            bool_at(caps["tools"], "listChanged").value_or(false);
  transport->negotiated(version);
  return send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
}

void Client::State::read_loop() {
  if (auto why = transport->receive([this](std::string_view m) { return on_line(m); })) end(*why);
}

std::optional<Error> Client::State::check_bounds(std::string_view line) {
  if (line.size() > limits.max_frame_bytes)
    return err("sent a message of " + std::to_string(line.size()) + " bytes, over " +
               std::to_string(limits.max_frame_bytes) + " (max_frame_bytes)");
  const auto now = Clock::now();
  if (now - window_start >= std::chrono::seconds(1)) {
    window_start = now;
    window_messages = 0;
  }
  if (++window_messages > limits.max_messages_per_second)
    return err("sent more than " + std::to_string(limits.max_messages_per_second) +
               " messages in a second (max_messages_per_second)");
  if (json_nests_deeper_than(line, limits.max_depth))
    return err("sent JSON nested deeper than " + std::to_string(limits.max_depth) +
               " levels (max_depth)");
  return std::nullopt;
}

std::optional<Error> Client::State::on_line(std::string_view line) {
  if (auto broken = check_bounds(line)) return broken;
  json message = json::parse(line, nullptr, false);
  if (message.is_discarded() || !message.is_object())
    return err("sent a line that is not a JSON-RPC message: " +
               moat::quoted(line.substr(0, std::min<std::size_t>(line.size(), 80))));
  if (message.contains("method") && message.contains("id")) answer_request(message);
  else if (message.contains("method")) on_notification(message);
  else if (message.contains("id")) on_response(message, line.size());
  return std::nullopt;
}

void Client::State::on_response(const json& message, std::size_t bytes) {
  const auto& id = message["id"];
  if (!id.is_number_integer()) return;  // not one of ours: our ids are integers
  std::lock_guard<std::mutex> lock(mu);
  const auto it = pending.find(id.get<std::int64_t>());
  if (it == pending.end()) return;  // answered after we gave up on it
  Pending& p = *it->second;
  p.bytes = bytes;
  if (const auto e = message.find("error"); e != message.end()) {
    const json fields = e->is_object() ? *e : json::object();
    const std::string code = fields.contains("code") ? fields["code"].dump() : "?";
    p.error = err(p.method + " failed: error " + code + ": " +
                  moat::quoted(visible_text(string_at(fields, "message"), 512)));
  } else {
    p.result = message.value("result", json::object());
    if (!p.result.is_object()) p.error = err(p.method + ": its result is not an object");
  }
  p.done = true;
  cv.notify_all();
}

void Client::State::on_notification(const json& message) {
  const std::string method = string_at(message, "method");
  if (method == "notifications/tools/list_changed") {
    tools_changed = true;
    return;
  }
  if (method != "notifications/progress") return;  // logging, cancelled, resources: unused
  const json params = message.value("params", json::object());
  const auto token = params.find("progressToken");
  const auto progress = params.find("progress");
  if (token == params.end() || !token->is_number_integer() || progress == params.end() ||
      !progress->is_number())
    return;
  std::function<void(const Progress&)> callback;
  {
    std::lock_guard<std::mutex> lock(mu);
    const auto it = pending.find(token->get<std::int64_t>());
    if (it != pending.end()) callback = it->second->on_progress;
  }
  if (!callback) return;
  Progress p;
  p.progress = progress->get<double>();
  if (const auto total = params.find("total"); total != params.end() && total->is_number())
    p.total = total->get<double>();
  p.message = visible_text(string_at(params, "message"), limits.max_description_bytes);
  callback(p);
}

void Client::State::answer_request(const json& message) {
  const std::string method = string_at(message, "method");
  json answer = {{"jsonrpc", "2.0"}, {"id", message["id"]}};
  if (method == "ping") {
    answer["result"] = json::object();
  } else {
    answer["error"] = {{"code", kMethodNotFound},
                       {"message", "moat does not offer " + visible_text(method, 128)}};
  }
  (void)send(answer);  // a failure shows as the EOF or timeout that follows
}

void Client::State::end(Error why) {
  std::lock_guard<std::mutex> lock(mu);
  if (!ended) ended = std::move(why);
  for (auto& [id, p] : pending) {
    if (p->done) continue;
    p->error = *ended;
    p->done = true;
  }
  cv.notify_all();
}

Client::Client(std::unique_ptr<State> state) : state_(std::move(state)) {}
Client::~Client() { close(); }

Result<std::unique_ptr<Client>> Client::start(std::string server, UniqueFd to_server,
                                              UniqueFd from_server, ServerLimits limits,
                                              std::stop_token stop) {
  MOAT_ASSIGN_OR_RETURN(auto transport, stdio_transport(server, std::move(to_server),
                                                        std::move(from_server), limits));
  return start(std::move(server), std::move(transport), limits, std::move(stop));
}

Result<std::unique_ptr<Client>> Client::start(std::string server,
                                              std::unique_ptr<Transport> transport,
                                              ServerLimits limits, std::stop_token stop) {
  auto st = std::make_unique<State>();
  st->server = std::move(server);
  st->limits = limits;
  st->transport = std::move(transport);
  State* raw = st.get();
  st->reader = std::thread([raw] { raw->read_loop(); });
  std::unique_ptr<Client> client(new Client(std::move(st)));
  MOAT_TRY(client->state_->initialize(stop));
  return client;
}

namespace {

// A tool as the server lists it, or nullopt (logged) when it has no name or its input schema
// is not an object (the spec requires both).
// `skipped` gets the tool's name and why.
std::optional<ToolInfo> parse_tool(const json& t, const ServerLimits& limits,
                                   const std::string& server, std::vector<std::string>& skipped) {
  const std::string name = visible_text(t.is_object() ? string_at(t, "name") : "", 64);
  if (!t.is_object() || string_at(t, "name").empty() || !t.contains("inputSchema") ||
      !t["inputSchema"].is_object()) {
    MOAT_LOG_WARN("mcp server %s: a tool without a name or an object inputSchema is skipped",
                  server.c_str());
    skipped.push_back((name.empty() ? "a tool without a name" : name) +
                      " (no name or no object inputSchema)");
    return std::nullopt;
  }
  if (const std::size_t bytes = t["inputSchema"].dump().size(); bytes > limits.max_schema_bytes) {
    MOAT_LOG_WARN("mcp server %s: tool %s is skipped: its inputSchema is %zu bytes "
                  "(max_schema_bytes %zu)",
                  server.c_str(), name.c_str(), bytes, limits.max_schema_bytes);
    skipped.push_back(name + " (its inputSchema is " + std::to_string(bytes) +
                      " bytes, over max_schema_bytes " + std::to_string(limits.max_schema_bytes) +
                      ")");
    return std::nullopt;
  }
  ToolInfo info;
  info.name = string_at(t, "name");
  info.title = visible_text(string_at(t, "title"), limits.max_description_bytes);
  info.description = visible_text(string_at(t, "description"), limits.max_description_bytes);
  info.input_schema = t["inputSchema"];
  if (t.contains("outputSchema") && t["outputSchema"].is_object()) info.output_schema = t["outputSchema"];
  const json a = t.value("annotations", json::object());
  if (a.is_object())
    info.annotations = {bool_at(a, "readOnlyHint"), bool_at(a, "destructiveHint"),
                        bool_at(a, "idempotentHint"), bool_at(a, "openWorldHint")};
  return info;
}

}  // namespace

Result<std::vector<ToolInfo>> Client::list_tools(std::stop_token stop) {
  State& s = *state_;
  s.tools_changed = false;
  s.skipped.clear();
  std::vector<ToolInfo> tools;
  json params = json::object();
  // Pages are bounded like tools: a server handing out cursors forever must not loop us.
  for (std::size_t page = 0; page <= s.limits.max_tools; ++page) {
    MOAT_ASSIGN_OR_RETURN(json r, s.request("tools/list", params, stop));
    const json list = r.value("tools", json::array());
    for (const auto& t : list.is_array() ? list : json::array()) {
      if (tools.size() == s.limits.max_tools)
        return fail(s.err("offers more than " + std::to_string(s.limits.max_tools) +
                          " tools (max_tools)"));
      if (auto info = parse_tool(t, s.limits, s.server, s.skipped))
        tools.push_back(std::move(*info));
    }
    const std::string cursor = string_at(r, "nextCursor");
    if (cursor.empty()) return tools;
    params = {{"cursor", cursor}};
  }
  return fail(s.err("tools/list: more than " + std::to_string(s.limits.max_tools) + " pages"));
}

namespace {

Content parse_content(const json& block) {
  Content c;
  const std::string type = string_at(block, "type");
  if (type == "text") {
    c.text = string_at(block, "text");
  } else if (type == "image" || type == "audio") {
    c.kind = type == "image" ? Content::Kind::kImage : Content::Kind::kAudio;
    c.mime_type = string_at(block, "mimeType");
    c.data = string_at(block, "data");
  } else if (type == "resource_link") {
    c.text = "resource link: " + string_at(block, "uri");
  } else if (type == "resource") {
    const json r = block.value("resource", json::object());
    const std::string text = r.is_object() ? string_at(r, "text") : std::string();
    c.text = text.empty() ? "resource: " + (r.is_object() ? string_at(r, "uri") : "") : text;
  } else {
    c.text = "[content of type " + moat::quoted(type) + "]";
  }
  return c;
}

}  // namespace

Result<CallOutcome> Client::call_tool(const std::string& name, const json& arguments,
                                      std::stop_token stop,
                                      std::function<void(const Progress&)> on_progress) {
  State& s = *state_;
  CallOutcome out;
  json params = {{"name", name}, {"arguments", arguments.is_object() ? arguments : json::object()}};
  MOAT_ASSIGN_OR_RETURN(json r, s.request("tools/call", std::move(params), stop,
                                          std::move(on_progress), &out.bytes));
  if (out.bytes > s.limits.max_result_bytes)
    return fail(s.err("tools/call " + moat::quoted(name) + ": result of " + std::to_string(out.bytes) +
                      " bytes, over " + std::to_string(s.limits.max_result_bytes) +
                      " (max_result_bytes)"));
  out.is_error = bool_at(r, "isError").value_or(false);
  if (const auto c = r.find("content"); c != r.end() && c->is_array())
    for (const auto& block : *c)
      if (block.is_object()) out.content.push_back(parse_content(block));
  if (const auto sc = r.find("structuredContent"); sc != r.end()) out.structured = *sc;
  return out;
}

Result<void> Client::ping(std::stop_token stop) {
  MOAT_TRY(state_->request("ping", json::object(), stop));
  return {};
}

bool Client::tools_changed() const { return state_->tools_changed; }

const std::vector<std::string>& Client::skipped_tools() const { return state_->skipped; }

std::optional<Error> Client::ended() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->ended;
}

const ServerInfo& Client::info() const { return state_->info; }
const std::string& Client::server() const { return state_->server; }

void Client::close() {
  State& s = *state_;
  if (s.closed) return;
  s.closed = true;
  s.transport->close();  // stdio: the server reads EOF on its stdin, the spec's shutdown
  if (s.reader.joinable()) s.reader.join();
  s.end(s.err("connection closed"));
}

namespace {

// A server's image as the model may get it: its base64 canonical (a provider refuses the
// whole request over a bad one, which would wedge the session), its bytes a format every
// provider takes (sniffed from the bytes, never the server's word) and at most
// kMaxImageBytes, like the read tool's. Otherwise a text line saying what came and why not.
ContentBlock image_block(const Content& c) {
  const std::string bytes = base64_decode(c.data);
  const std::string what = "[image " + visible_text(c.mime_type, 64) + ", " +
                           std::to_string(bytes.size()) + " bytes, not shown: ";
  if (base64_encode(bytes) != c.data)
    return {{"type", "text"}, {"text", what + "not valid base64]"}};
  if (bytes.size() > kMaxImageBytes)
    return {{"type", "text"},
            {"text", what + "over the " + format_size(kMaxImageBytes) + " limit of one image]"}};
  const std::optional<std::string> mime = sniff_image_mime(std::string_view(bytes).substr(0, 16));
  if (!mime) return {{"type", "text"}, {"text", what + "not PNG, JPEG, GIF or WebP]"}};
  return {{"type", "image"}, {"mimeType", *mime}, {"data", c.data}};
}

}  // namespace

ToolResult to_tool_result(const CallOutcome& outcome) {
  ToolResult r;
  r.is_error = outcome.is_error;
  bool has_text = false;
  for (const auto& c : outcome.content) {
    if (c.kind == Content::Kind::kImage) {
      r.content.push_back(image_block(c));
      has_text |= r.content.back()["type"] == "text";
      continue;
    }
    const std::string text = c.kind == Content::Kind::kAudio
                                 ? "[audio " + c.mime_type + ", " + std::to_string(c.data.size()) +
                                       " base64 bytes, not shown]"
                                 : c.text;
    r.content.push_back({{"type", "text"}, {"text", text}});
    has_text = true;
  }
  if (!outcome.structured.is_null()) {
    r.details["structuredContent"] = outcome.structured;
    if (!has_text) r.content.push_back({{"type", "text"}, {"text", outcome.structured.dump()}});
  }
  return r;
}

}  // namespace moat::tools::mcp

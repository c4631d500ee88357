// tests/support/mcp_test_server.cc: a real stdio MCP server written for the tests (JSON-RPC 2.0,
// one message per line on stdin/stdout), honest or hostile as its first argument says. The
// client tests (tests/unit/tools/mcp_client_test.cc) run it as a child; the sandbox tests run
// it inside a session. Built as tests/unit/tools/mcp_test_server (meson: mcp_test_server).
//
// Usage: mcp_test_server [MODE] [--version=V] [--ask-client]
// Modes:
//   normal (default)  the tools below, listed 3 per page (nextCursor "page-N"); declares
//                     tools.listChanged.
//   escapes           one tool "esc" whose title and 100 KB description are full of terminal
//                     escapes (OSC title, clear screen, colours, C1 CSI U+009B).
//   many-tools        5000 tools on one page.
//   huge-schema       the normal tools and "wide", whose inputSchema holds 7 MiB (a property
//                     description: one line, under the client's 8 MiB frame bound).
//   endless-pages     every tools/list page is empty and names a next cursor.
//   silent            reads its input and never answers anything.
//   garbage           answers initialize, then answers every request with lines that are
//                     not JSON.
//   flood             answers initialize, then sends 100000 progress notifications at once.
//   exit-on-call      as normal, but exits (status 3) when a tools/call arrives.
//   stderr-flood      as normal, but first writes 8 MiB of 'e' lines to stderr (the host's log
//                     bound, sandbox/mcp_host.h kMaxLogBytes).
//   spawn             as normal, plus the tool "spawn" (a server's resources: pids, memory).
//   no-initialize     answers initialize with JSON-RPC error -32601, as a server speaking only
//                     the stateless 2026-07-28 revision (no initialize) does.
// Options:
//   --version=V       answer protocolVersion V to initialize (default: the client's version
//                     when it is one we know, else 2025-11-25).
//   --ask-client      after notifications/initialized, send the client sampling/createMessage,
//                     roots/list, elicitation/create and ping requests; the tool client_replies
//                     returns the client's answers.
// Tools (normal mode):
//   echo {text}       text content.
//   add {a, b}        structuredContent {sum} with an outputSchema, and the sum as text.
//   image             a 1x1 PNG image block.
//   fail              isError: true with a text block.
//   slow {steps}      one notifications/progress (with total) every 20 ms for `steps` steps
//                     (default 1000), then "done"; a notifications/cancelled for it stops it
//                     without an answer (the spec: no response to a cancelled request).
//   cancelled         the request ids this server saw cancelled, as a JSON array in text.
//   touch             adds the tool "late" and sends notifications/tools/list_changed.
//   big {bytes}       a text result of `bytes` x's (default 100 MB), written as one line.
//   deep {depth}      structuredContent nested `depth` arrays deep (default 65536).
//   probe {write}     tries to read ~/.ssh (list it, read its files), write outside its working
//                     directory (../ and $HOME, and each absolute path of the array `write`),
//                     and connect to the network (1.1.1.1:443 and [2606:4700:4700::1111]:443
//                     over TCP); structuredContent says what happened to each ("ok" or the
//                     errno's name; `write`'s under "written", by path). A file it created in
//                     ../ or $HOME it removes; one of `write` it leaves, so a test can look.
//   daemon            forks a grandchild in a new session (fork, setsid, fork) that sleeps an
//                     hour; structuredContent {pid} is the grandchild's pid.
//   env               the names of its environment variables, as a JSON array in text.
//   client_replies    the client's answers to --ask-client's requests, as a JSON array in text.
//   spawn {children, bytes}  (mode spawn) forks `children` (default 8) children that each
//                     write `bytes` (default 0) of fresh memory, say so on a pipe and wait;
//                     after all said so, or 10 s, kills them. structuredContent {forked,
//                     fork_error (the first fork's errno name, or "ok"), touched (how many
//                     wrote all their memory)}.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using json = nlohmann::json;

std::string g_mode = "normal";
std::string g_version;
bool g_ask_client = false;
std::mutex g_out_mu;
std::mutex g_state_mu;
std::set<std::int64_t> g_cancelled;
json g_client_replies = json::array();
bool g_late_tool = false;

void send_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(g_out_mu);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}
void send(const json& j) { send_line(j.dump()); }
void reply(const json& id, json result) {
  send({{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}
json text_result(const std::string& text, bool is_error = false) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", is_error}};
}

const char* errno_name(int e) {
  switch (e) {
    case 0: return "ok";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case EROFS: return "EROFS";
    case EAGAIN: return "EAGAIN";
    case ENETUNREACH: return "ENETUNREACH";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case ECONNREFUSED: return "ECONNREFUSED";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EINPROGRESS: return "EINPROGRESS (timed out)";  // connect past SO_SNDTIMEO
    default: return strerror(e);
  }
}

json tool(const std::string& name, const std::string& description, json props = json::object()) {
  return {{"name", name},
          {"description", description},
          {"inputSchema", {{"type", "object"}, {"properties", std::move(props)}}}};
}

std::vector<json> normal_tools() {
  std::vector<json> t = {
      tool("echo", "Echoes its text.", {{"text", {{"type", "string"}}}}),
      tool("add", "Adds a and b.", {{"a", {{"type", "number"}}}, {"b", {{"type", "number"}}}}),
      tool("image", "A 1x1 PNG."),
      tool("fail", "Always fails."),
      tool("slow", "Reports progress until done or cancelled.", {{"steps", {{"type", "integer"}}}}),
      tool("cancelled", "The request ids seen cancelled."),
      tool("touch", "Adds the tool late and says the list changed."),
      tool("big", "A huge text result.", {{"bytes", {{"type", "integer"}}}}),
      tool("deep", "A deeply nested result.", {{"depth", {{"type", "integer"}}}}),
      tool("probe", "Tries what a sandbox must stop.",
           {{"write", {{"type", "array"}, {"items", {{"type", "string"}}}}}}),
      tool("daemon", "Leaves a daemon behind."),
      tool("env", "Its environment's names."),
      tool("client_replies", "The client's answers to our requests."),
  };
  t[1]["outputSchema"] = {{"type", "object"}, {"properties", {{"sum", {{"type", "number"}}}}}};
  t[1]["annotations"] = {{"readOnlyHint", true}, {"idempotentHint", true}};
  t[10]["annotations"] = {{"destructiveHint", true}, {"openWorldHint", false}};
  std::lock_guard<std::mutex> lock(g_state_mu);
  if (g_late_tool) t.push_back(tool("late", "Added by touch."));
  if (g_mode == "spawn")
    t.push_back(tool("spawn", "Forks children that each write fresh memory.",
                     {{"children", {{"type", "integer"}}}, {"bytes", {{"type", "integer"}}}}));
  return t;
}

std::string escapes_text() {
  std::string chunk = "\x1b]0;pwned\x07\x1b[2J\x1b[H\x1b[31mRED\xc2\x9b" "1mC1\x1b[0m \xe2\x9c\x93 ";
  std::string out;
  while (out.size() < 100 * 1024) out += chunk;
  return out;
}

json list_tools(const json& params) {
  if (g_mode == "huge-schema") {
    std::vector<json> t = normal_tools();
    t.push_back(tool("wide", "A tool with a huge input schema.",
                     {{"x", {{"type", "string"}, {"description", std::string(7u << 20, 'w')}}}}));
    return {{"tools", t}};
  }
  if (g_mode == "escapes") {
    json t = tool("esc", escapes_text());
    t["title"] = escapes_text();
    return {{"tools", json::array({t})}};
  }
  if (g_mode == "many-tools") {
    json all = json::array();
    for (int i = 0; i < 5000; ++i) all.push_back(tool("t" + std::to_string(i), "one of many"));
    return {{"tools", all}};
  }
  const std::string cursor = params.value("cursor", "page-0");
  const int page = std::atoi(cursor.c_str() + 5);
  if (g_mode == "endless-pages")
    return {{"tools", json::array()}, {"nextCursor", "page-" + std::to_string(page + 1)}};
  const auto all = normal_tools();
  json out = {{"tools", json::array()}};
  for (std::size_t i = page * 3; i < all.size() && i < page * 3u + 3; ++i) out["tools"].push_back(all[i]);
  if (static_cast<std::size_t>(page * 3 + 3) < all.size()) out["nextCursor"] = "page-" + std::to_string(page + 1);
  return out;
}

void run_slow(json id, int steps, json token) {
  for (int i = 1; i <= steps; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    {
      std::lock_guard<std::mutex> lock(g_state_mu);
      if (g_cancelled.count(id.get<std::int64_t>())) return;
    }
    if (!token.is_null())
      send({{"jsonrpc", "2.0"},
            {"method", "notifications/progress"},
            {"params", {{"progressToken", token}, {"progress", i}, {"total", steps},
                        {"message", "step " + std::to_string(i)}}}});
  }
  reply(id, text_result("done"));
}

std::string try_read_ssh() {
  const char* home = std::getenv("HOME");
  const std::string dir = std::string(home ? home : "/root") + "/.ssh";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return errno_name(errno);
  int first_err = 0;
  bool read_any = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const int fd = open((dir + "/" + e->d_name).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) { if (!first_err) first_err = errno; continue; }
    char buf[64];
    if (read(fd, buf, sizeof buf) >= 0) read_any = true;
    close(fd);
  }
  closedir(d);
  if (read_any) return "ok";
  return first_err ? errno_name(first_err) : "listed (no files)";
}

std::string try_write(const std::string& path, bool keep = false) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return errno_name(errno);
  const bool wrote = write(fd, "mcp probe\n", 10) == 10;
  close(fd);
  if (!keep) unlink(path.c_str());
  return wrote ? "ok" : "created (write failed)";
}

std::string try_connect(int family, const char* addr) {
  const int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return errno_name(errno);
  timeval tv{1, 0};
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int rc;
  if (family == AF_INET) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(443);
    inet_pton(AF_INET, addr, &sa.sin_addr);
    rc = connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  } else {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(443);
    inet_pton(AF_INET6, addr, &sa.sin6_addr);
    rc = connect(s, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  }
  const int e = rc == 0 ? 0 : errno;
  close(s);
  return errno_name(e);
}

json probe(const json& args) {
  const char* home = std::getenv("HOME");
  const std::string tag = "mcp_probe_" + std::to_string(getpid());
  json r = {{"read_ssh", try_read_ssh()},
            {"write_parent", try_write("../" + tag)},
            {"write_home", try_write(std::string(home ? home : "/root") + "/" + tag)},
            {"connect_ipv4", try_connect(AF_INET, "1.1.1.1")},
            {"connect_ipv6", try_connect(AF_INET6, "2606:4700:4700::1111")}};
  for (const json& path : args.value("write", json::array()))
    if (path.is_string()) r["written"][path.get<std::string>()] = try_write(path, true);
  return {{"content", json::array({{{"type", "text"}, {"text", r.dump()}}})},
          {"structuredContent", r}};
}

json daemon() {
  int fds[2];
  if (pipe(fds) != 0) return text_result("pipe failed", true);
  const pid_t child = fork();
  if (child == 0) {
    setsid();
    if (fork() == 0) {
      const pid_t me = getpid();
      (void)!write(fds[1], &me, sizeof me);
      for (int fd = 0; fd < 3; ++fd) close(fd);
      sleep(3600);
      _exit(0);
    }
    _exit(0);
  }
  close(fds[1]);
  pid_t grandchild = -1;
  (void)!read(fds[0], &grandchild, sizeof grandchild);
  close(fds[0]);
  return {{"content", json::array({{{"type", "text"}, {"text", std::to_string(grandchild)}}})},
          {"structuredContent", {{"pid", grandchild}}}};
}

// A child of spawn: writes `bytes` of fresh memory, says so, waits to be killed.
[[noreturn]] void spawned_child(int done_fd, std::size_t bytes) {
  if (bytes > 0) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) _exit(1);
    for (std::size_t i = 0; i < bytes; i += 4096) static_cast<char*>(p)[i] = 1;
  }
  (void)!write(done_fd, "d", 1);
  for (;;) pause();
}

// Reads one byte per child that wrote all its memory, until each child did or died (the OOM
// killer), or 10 s passed.
int count_done(int fd, const std::vector<pid_t>& pids) {
  int done = 0, dead = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (done + dead < static_cast<int>(pids.size()) &&
         std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) > 0) {
      char c;
      if (read(fd, &c, 1) == 1) ++done;
    }
    while (waitpid(-1, nullptr, WNOHANG) > 0) ++dead;
  }
  return done;
}

json spawn(const json& args) {
  const int children = args.value("children", 8);
  const std::size_t bytes = args.value("bytes", std::size_t{0});
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return text_result("pipe failed", true);
  std::vector<pid_t> pids;
  std::string fork_error = "ok";
  for (int i = 0; i < children; ++i) {
    const pid_t pid = fork();
    if (pid == 0) spawned_child(fds[1], bytes);
    if (pid < 0) {
      fork_error = errno_name(errno);
      break;
    }
    pids.push_back(pid);
  }
  close(fds[1]);
  const int touched = count_done(fds[0], pids);
  close(fds[0]);
  for (pid_t pid : pids) kill(pid, SIGKILL);
  for (pid_t pid : pids) waitpid(pid, nullptr, 0);  // the dead are reaped already: ECHILD
  json r = {{"forked", pids.size()}, {"fork_error", fork_error}, {"touched", touched}};
  return {{"content", json::array({{{"type", "text"}, {"text", r.dump()}}})},
          {"structuredContent", r}};
}

void big(const json& id, std::size_t bytes) {
  std::string head = json{{"jsonrpc", "2.0"}, {"id", id}}.dump();
  head.pop_back();
  head += R"(,"result":{"content":[{"type":"text","text":")";
  std::lock_guard<std::mutex> lock(g_out_mu);
  std::fwrite(head.data(), 1, head.size(), stdout);
  const std::string chunk(1 << 16, 'x');
  for (std::size_t left = bytes; left > 0;) {
    const std::size_t n = std::min(left, chunk.size());
    if (std::fwrite(chunk.data(), 1, n, stdout) != n) return;  // the client hung up
    left -= n;
  }
  std::fputs("\"}]}}\n", stdout);
  std::fflush(stdout);
}

void deep(const json& id, std::size_t depth) {
  std::string nested(depth, '[');
  nested += std::string(depth, ']');
  send_line(R"({"jsonrpc":"2.0","id":)" + id.dump() +
            R"(,"result":{"content":[],"structuredContent":)" + nested + "}}");
}

json env_names() {
  json names = json::array();
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    names.push_back(kv.substr(0, kv.find('=')));
  }
  return text_result(names.dump());
}

void call_tool(const json& id, const json& params) {
  const std::string name = params.value("name", "");
  const json args = params.value("arguments", json::object());
  if (g_mode == "exit-on-call") std::exit(3);
  if (name == "echo") return reply(id, text_result(args.value("text", "")));
  if (name == "add") {
    const double sum = args.value("a", 0.0) + args.value("b", 0.0);
    json r = text_result(json(sum).dump());
    r["structuredContent"] = {{"sum", sum}};
    return reply(id, r);
  }
  if (name == "image")
    return reply(id, {{"content", json::array({{{"type", "image"}, {"mimeType", "image/png"},
        {"data", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="}}})}});
  if (name == "fail") return reply(id, text_result("this tool always fails", true));
  if (name == "slow") {
    const json token = params.contains("_meta") ? params["_meta"].value("progressToken", json()) : json();
    std::thread(run_slow, id, args.value("steps", 1000), token).detach();
    return;
  }
  if (name == "cancelled") {
    std::lock_guard<std::mutex> lock(g_state_mu);
    return reply(id, text_result(json(g_cancelled).dump()));
  }
  if (name == "touch") {
    { std::lock_guard<std::mutex> lock(g_state_mu); g_late_tool = true; }
    send({{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}});
    return reply(id, text_result("touched"));
  }
  if (name == "big") return big(id, args.value("bytes", std::size_t{100} << 20));
  if (name == "deep") return deep(id, args.value("depth", std::size_t{65536}));
  if (name == "probe") return reply(id, probe(args));
  if (name == "daemon") return reply(id, daemon());
  if (name == "spawn") return reply(id, spawn(args));
  if (name == "env") return reply(id, env_names());
  if (name == "client_replies") {
    std::lock_guard<std::mutex> lock(g_state_mu);
    return reply(id, text_result(g_client_replies.dump()));
  }
  send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", -32602}, {"message", "unknown tool " + name}}}});
}

json initialize_result(const json& params) {
  static const std::set<std::string> known = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
  std::string version = g_version;
  if (version.empty()) {
    const std::string asked = params.value("protocolVersion", "");
    version = known.count(asked) ? asked : "2025-11-25";
  }
  return {{"protocolVersion", version},
          {"capabilities", {{"tools", {{"listChanged", true}}}}},
          {"serverInfo", {{"name", "mcp-test-server"}, {"version", "1.0.0"}}},
          {"instructions", "A server for moat's tests."}};
}

void ask_client() {
  int n = 1000;
  for (const char* m : {"sampling/createMessage", "roots/list", "elicitation/create", "ping"})
    send({{"jsonrpc", "2.0"}, {"id", n++}, {"method", m}, {"params", json::object()}});
}

void on_request(const json& m) {
  const std::string method = m.value("method", "");
  const json& id = m["id"];
  const json params = m.value("params", json::object());
  if (g_mode == "silent") return;
  if (method == "initialize" && g_mode == "no-initialize")
    return send({{"jsonrpc", "2.0"}, {"id", id},
                 {"error", {{"code", -32601}, {"message", "Method not found"}}}});
  if (method == "initialize") return reply(id, initialize_result(params));
  if (g_mode == "garbage") return send_line("this is not json \x1b[31m{");
  if (method == "ping") return reply(id, json::object());
  if (method == "tools/list") return reply(id, list_tools(params));
  if (method == "tools/call") return call_tool(id, params);
  send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", -32601}, {"message", "no method " + method}}}});
}

void on_notification(const json& m) {
  const std::string method = m.value("method", "");
  if (method == "notifications/initialized") {
    if (g_ask_client) ask_client();
    if (g_mode == "flood")
      for (int i = 0; i < 100000; ++i)
        send({{"jsonrpc", "2.0"}, {"method", "notifications/progress"},
              {"params", {{"progressToken", "none"}, {"progress", i}}}});
  }
  if (method == "notifications/cancelled") {
    const json params = m.value("params", json::object());
    if (params.contains("requestId") && params["requestId"].is_number_integer()) {
      std::lock_guard<std::mutex> lock(g_state_mu);
      g_cancelled.insert(params["requestId"].get<std::int64_t>());
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--version=", 0) == 0) g_version = a.substr(10);
    else if (a == "--ask-client") g_ask_client = true;
    else g_mode = a;
  }
  if (g_mode == "stderr-flood") {
    const std::string line(1023, 'e');
    for (int i = 0; i < 8192; ++i) std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    const json m = json::parse(line, nullptr, false);
    if (m.is_discarded() || !m.is_object()) continue;
    if (m.contains("method") && m.contains("id")) on_request(m);
    else if (m.contains("method")) on_notification(m);
    else if (m.contains("id")) {  // the client's answer to one of our requests
      std::lock_guard<std::mutex> lock(g_state_mu);
      g_client_replies.push_back(m);
    }
  }
  return 0;
}

// sandbox/net_proxy.cc: the session's filtering HTTP proxy (see net_proxy.h).
#include "sandbox/net_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <system_error>
#include <utility>
#include <vector>

#include "base/log.h"
#include "base/sys.h"
#include "policy/network.h"
#include "sandbox/net_request.h"
#include "sandbox/net_socks.h"

namespace moat::sandbox {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int kConnectTimeoutMs = 10'000;
constexpr std::size_t kRelayBuffer = 256 * 1024;

// What one connection did, for its record and for the program's error reply.
struct Outcome {
  json record = json::object();
  int status = 0;     // an HTTP error status sent to the program; 0: none
  std::string error;  // why the connection was refused or ended early
};

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Waits for `events` on fd, or the stop event, for at most timeout_ms: true when fd is ready.
bool wait_for(int fd, short events, int stop_fd, int timeout_ms) {
  pollfd p[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
  int n;
  while ((n = poll(p, 2, timeout_ms)) < 0 && errno == EINTR) {}
  return n > 0 && p[1].revents == 0 && p[0].revents != 0;
}

// Reads up to the empty line that ends a request head; what came after it is in `rest`.
Result<std::string> read_head(int fd, int stop_fd, int timeout_ms, std::string& rest) {
  std::string buf;
  char chunk[4096];
  for (;;) {
    const auto end = buf.find("\r\n\r\n");
    if (end != std::string::npos) {
      rest = buf.substr(end + 4);
      buf.resize(end + 4);
      return buf;
    }
    if (buf.size() > kMaxRequestHead) return fail("the request head is longer than 16 KiB");
    if (!wait_for(fd, POLLIN, stop_fd, timeout_ms)) return fail("no request head in time");
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return fail("the program closed the connection before its request head");
    buf.append(chunk, static_cast<std::size_t>(n));
  }
}

void send_text(int fd, const std::string& text) {
  (void)sys::write_all(fd, text.data(), text.size());
}

void send_error(int fd, int status, const std::string& message) {
  const char* reason = status == 403   ? "Forbidden"
                       : status == 400 ? "Bad Request"
                       : status == 503 ? "Service Unavailable"
                                       : "Bad Gateway";
  const std::string body = "moat: " + message + "\n";
  send_text(fd, "HTTP/1.1 " + std::to_string(status) + " " + reason +
                    "\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body);
}

// The addresses `host` resolves to: the override a test set, the literal itself, or the
// system resolver's answer (getaddrinfo, as moatd sees the network, never the sandbox).
Result<std::vector<std::string>> resolve(const std::string& host, const NetProxyOptions& o) {
  if (auto it = o.resolve_overrides.find(host); it != o.resolve_overrides.end())
    return std::vector<std::string>{it->second};
  if (policy::is_ip_literal(host)) return std::vector<std::string>{host};
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0)
    return fail("resolving '" + host + "': " + gai_strerror(rc));
  std::vector<std::string> out;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    char buf[INET6_ADDRSTRLEN] = {};
    const void* src =
        a->ai_family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr)
            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr);
    if (inet_ntop(a->ai_family, src, buf, sizeof buf) &&
        std::find(out.begin(), out.end(), buf) == out.end())
      out.emplace_back(buf);
  }
  freeaddrinfo(res);
  if (out.empty()) return fail("resolving '" + host + "': no address");
  return out;
}

Result<UniqueFd> connect_to(const std::string& ip, int port, int stop_fd) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    len = sizeof *v4;
  } else if (inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    len = sizeof *v6;
  } else {
    return fail("'" + ip + "' is not an address");
  }
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::make_socket(ss.ss_family, SOCK_STREAM));
  set_nonblocking(fd.get());
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS)
    return fail(Error::from_errno("connect", errno, ip));
  if (!wait_for(fd.get(), POLLOUT, stop_fd, kConnectTimeoutMs))
    return fail(Error::from_errno("connect", ETIMEDOUT, ip));
  int err = 0;
  socklen_t elen = sizeof err;
  getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &elen);
  if (err != 0) return fail(Error::from_errno("connect", err, ip));
  return fd;
}

// One direction of a relay: bytes read from `from` wait in `buf` until `to` takes them.
struct Flow {
  int from, to;
  std::vector<char> buf = std::vector<char>(kRelayBuffer);
  std::size_t off = 0, len = 0;
  bool eof = false, shut = false;
  std::int64_t total = 0;
};

// Plain HTTP's answer: each response head (the 1xx ones, then the final one) reaches the
// program as closing_response_head made it, so the program sends no second request on a
// connection judged for one host (net_request.h). Past the final head, bytes pass untouched.
struct ResponseHeads {
  bool active = false;
  std::string held;  // the start of a head whose empty line has not come yet
};

// Takes the flow's bytes just read through `h`: complete heads rewritten, an incomplete one
// held (the flow then has nothing to send until more comes); at the end of the stream what is
// held goes as it is. False when a head outgrows kMaxRequestHead.
bool pass_heads(ResponseHeads& h, Flow& f, std::string& why) {
  h.held.append(f.buf.data() + f.off, f.len);
  std::string out;
  for (std::size_t end; h.active && (end = h.held.find("\r\n\r\n")) != std::string::npos;) {
    const std::string head = h.held.substr(0, end + 4);
    h.held.erase(0, end + 4);
    h.active = is_interim_response(head);
    out += closing_response_head(head);
  }
  if (h.active && !f.eof && h.held.size() > kMaxRequestHead) {
    why = "the server's response head exceeds " + std::to_string(kMaxRequestHead) + " bytes";
    return false;
  }
  if (!h.active || f.eof) out += std::exchange(h.held, {});
  if (out.size() > f.buf.size()) f.buf.resize(out.size());
  std::copy(out.begin(), out.end(), f.buf.begin());
  f.off = 0;
  f.len = out.size();
  return true;
}

// Moves what is ready on one flow; false when the connection must end (error in `why`).
// `heads`: the server's flow of a plain HTTP request (pass_heads).
bool step(Flow& f, short from_ev, short to_ev, std::atomic<std::int64_t>& session_bytes,
          std::int64_t max_bytes, std::string& why, ResponseHeads* heads = nullptr) {
  if (f.len == 0 && !f.eof && (from_ev & (POLLIN | POLLHUP | POLLERR))) {
    const ssize_t n = ::read(f.from, f.buf.data(), f.buf.size());
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    if (n == 0) f.eof = true;
    if (n > 0) {
      if (session_bytes.fetch_add(n) + n > max_bytes) {
        why = "the session's network_bytes limit (" + std::to_string(max_bytes) + ") is reached";
        return false;
      }
      f.off = 0;
      f.len = static_cast<std::size_t>(n);
    }
    if (n >= 0 && heads != nullptr && heads->active && !pass_heads(*heads, f, why)) return false;
  }
  if (f.len > 0 && (to_ev & (POLLOUT | POLLERR | POLLHUP))) {
    const ssize_t n = ::send(f.to, f.buf.data() + f.off, f.len, MSG_NOSIGNAL);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    if (n > 0) {
      f.off += static_cast<std::size_t>(n);
      f.len -= static_cast<std::size_t>(n);
      f.total += n;
    }
  }
  if (f.eof && f.len == 0 && !f.shut) {
    shutdown(f.to, SHUT_WR);  // the other side sees the end of this direction
    f.shut = true;
  }
  return true;
}

// Relays until both directions ended, the idle timeout, the byte limit or the stop event.
// `first` is sent to the server before anything else (the rewritten head, what followed it).
void relay(int client, int upstream, const std::string& first, bool plain_http, int stop_fd,
           const NetProxyOptions& o, std::atomic<std::int64_t>& session_bytes, Outcome& out) {
  set_nonblocking(client);
  Flow up{client, upstream}, down{upstream, client};
  ResponseHeads heads{plain_http, {}};
  if (first.size() > up.buf.size()) up.buf.resize(first.size());
  std::copy(first.begin(), first.end(), up.buf.begin());
  up.len = first.size();
  const int idle_ms = static_cast<int>(std::min<std::int64_t>(o.idle_s, 86400) * 1000);
  // Ends once the server's side is over and nothing the program sent is still pending: a
  // server that closed answers no more, and a program that keeps its end open must not hold
  // the connection (and its thread) until the idle timeout.
  while (!down.shut || (!up.shut && up.len > 0)) {
    pollfd p[3] = {{client, 0, 0}, {upstream, 0, 0}, {stop_fd, POLLIN, 0}};
    if (!up.eof && up.len == 0) p[0].events |= POLLIN;
    if (down.len > 0) p[0].events |= POLLOUT;
    if (!down.eof && down.len == 0) p[1].events |= POLLIN;
    if (up.len > 0) p[1].events |= POLLOUT;
    const int n = poll(p, 3, idle_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) out.error = "idle for " + std::to_string(o.idle_s) + " s (resources.network_idle)";
    if (n <= 0 || p[2].revents) break;
    if (!step(up, p[0].revents, p[1].revents, session_bytes, o.max_bytes, out.error) ||
        !step(down, p[1].revents, p[0].revents, session_bytes, o.max_bytes, out.error, &heads))
      break;
  }
  out.record["bytes_up"] = up.total;
  out.record["bytes_down"] = down.total;
}

void note_decision(const policy::Decision& d, Outcome& out) {
  out.record["decision"] = policy::verdict_name(d.verdict);
  out.record["rule"] = d.deciding.id;
  out.record["layer"] = d.deciding.layer;
  if (d.headless_downgraded) out.record["headless_downgraded"] = true;
}

// Why a connection was refused, as the program reads it (the 403's body): the rule and its
// reason, and who said no when it was an ask.
std::string refusal(const ProxyRequest& req, const policy::Decision& d) {
  std::string s = "connection to " + req.host + ":" + std::to_string(req.port);
  if (d.decided_by == policy::DecidedBy::kUser)
    return s + " declined by the person (rule " + d.deciding.id + " asked for approval)" +
           (d.reason.empty() || d.reason == "the person declined" ? "" : ": " + d.reason);
  s += " refused by rule " + d.deciding.id + (d.reason.empty() ? "" : " (" + d.reason + ")");
  if (d.verdict == policy::Verdict::kAsk)
    s += ": it needs a person's approval, and no console is attached to ask";
  return s;
}

// Why a name may not lead to `address` unless a rule names it: the host's own interfaces (a
// host service bound to 0.0.0.0 answers on each of them, issue 26 item 9), then the internal
// ranges (loopback, private networks, every special-purpose block: DNS rebinding). The rule
// it is refused by goes to `rule`; an empty result lets the address through.
std::string address_refusal(const std::string& address, HostAddresses& host, std::string& rule) {
  auto iface = host.interface_of(address);
  if (!iface) {
    rule = "builtin.network-host-address";
    return "the host's own addresses could not be read (" + iface.error().message() +
           "), so no resolved address is trusted";
  }
  if (*iface) {
    rule = "builtin.network-host-address";
    return "it resolves to " + address + ", an address of this host (interface " + **iface + ")";
  }
  if (const char* why = policy::internal_address_reason(address)) {
    rule = "builtin.network-internal-address";
    return "it resolves to the internal address " + address + ", " + why;
  }
  return {};
}

// Whether the rules let the connection reach an address address_refusal holds back: a rule
// naming it allows, or it asks and the person already allowed this connection under that same
// rule (an ask for an IP literal is answered once, for the name and its address alike).
bool is_address_named(const policy::Decision& named, const policy::Decision& d) {
  if (named.verdict == policy::Verdict::kAllow) return true;
  return named.verdict == policy::Verdict::kAsk && d.verdict == policy::Verdict::kAllow &&
         d.decided_by == policy::DecidedBy::kUser && named.deciding.id == d.deciding.id;
}

// The policy's verdict `d` on the name, then on every address it resolves to (see
// address_refusal): one such address refuses the connection unless a rule names that address.
// Returns the addresses to try; on a refusal, out.status and out.error say why.
std::vector<std::string> judge(const ProxyRequest& req, const policy::Decision& d,
                               const policy::Policy& policy, const NetProxyOptions& o,
                               HostAddresses& host, Outcome& out) {
  note_decision(d, out);
  if (d.verdict != policy::Verdict::kAllow) {
    out.status = 403;
    out.error = refusal(req, d);
    return {};
  }
  const std::string name = policy::normalize_host(req.host).value_or(req.host);
  auto addresses = resolve(name, o);
  if (!addresses) {
    out.status = 502;
    out.error = addresses.error().message();
    return {};
  }
  for (const auto& a : *addresses) {
    std::string rule;
    const std::string why = address_refusal(a, host, rule);
    if (why.empty()) continue;
    if (is_address_named(policy.decide_network(a, req.port), d)) continue;
    out.record["address"] = a;
    out.record["decision"] = "deny";
    out.record["rule"] = rule;
    out.status = 403;
    out.error = "connection to " + req.host + " refused by rule " + rule + ": " + why +
                ", which no [[network]] rule names";
    return {};
  }
  return std::move(*addresses);
}

Result<UniqueFd> connect_any(const std::vector<std::string>& addresses, int port, int stop_fd,
                             Outcome& out) {
  Error last = Error::msg("no address");
  for (const auto& a : addresses) {
    auto fd = connect_to(a, port, stop_fd);
    if (fd) {
      out.record["address"] = a;
      return fd;
    }
    last = fd.error();
  }
  return fail(last);
}

// Judged, resolved, connected: the tunnel's 200 or the rewritten head goes first, then what
// the program sent after its head, then the relay.
void connect_and_relay(int client, const ProxyRequest& req, const std::string& rest, int stop_fd,
                       const policy::Decision& d, const policy::Policy& policy,
                       const NetProxyOptions& o, HostAddresses& host,
                       std::atomic<std::int64_t>& session_bytes, Outcome& out) {
  const std::vector<std::string> addresses = judge(req, d, policy, o, host, out);
  if (out.status != 0) return;
  auto upstream = connect_any(addresses, req.port, stop_fd, out);
  if (!upstream) {
    out.status = 502;
    out.error = upstream.error().message();
    return;
  }
  if (req.socks5) send_text(client, socks5_reply(SocksReply::kSucceeded));
  else if (req.tunnel) send_text(client, "HTTP/1.1 200 Connection established\r\n\r\n");
  relay(client, upstream->get(), req.tunnel ? rest : req.upstream_head + rest, !req.tunnel,
        stop_fd, o, session_bytes, out);
}

// Exactly n bytes from the program within the timeout.
Result<std::string> read_exact(int fd, int stop_fd, int timeout_ms, std::size_t n) {
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    if (!wait_for(fd, POLLIN, stop_fd, timeout_ms)) return fail("no SOCKS5 request in time");
    const ssize_t r = ::read(fd, out.data() + got, n - got);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (r <= 0) return fail("the program closed the connection before its SOCKS5 request");
    got += static_cast<std::size_t>(r);
  }
  return out;
}

// The program's request: SOCKS5 when its first byte is 5 (`socks` set; on a refusal SOCKS5
// can say, `socks_refusal` holds the code), else an HTTP proxy request head.
Result<ProxyRequest> read_request(int fd, int stop_fd, std::int64_t idle_s, std::string& rest,
                                  bool& socks, SocksReply& socks_refusal) {
  const int head_ms = static_cast<int>(std::min<std::int64_t>(idle_s, 60) * 1000);
  char first = 0;
  if (!wait_for(fd, POLLIN, stop_fd, head_ms)) return fail("no request head in time");
  if (::recv(fd, &first, 1, MSG_PEEK) == 1 && first == char(kSocks5Version)) {
    socks = true;
    return read_socks5([&](std::size_t n) { return read_exact(fd, stop_fd, head_ms, n); },
                       [&](std::string_view bytes) { send_text(fd, std::string(bytes)); },
                       &socks_refusal);
  }
  MOAT_ASSIGN_OR_RETURN(std::string head, read_head(fd, stop_fd, head_ms, rest));
  return parse_proxy_request(head);
}

// A TCP socket bound to the host's 127.0.0.1, port chosen by the kernel.
Result<UniqueFd> loopback_socket() {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::make_socket(AF_INET, SOCK_STREAM));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return fail(Error::from_errno("bind", errno, "127.0.0.1"));
  return fd;
}

sockaddr_in local_address(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return a;
}

// The connection from 127.0.0.1:`port` (the socket open_local bound: no other can hold that
// port), within kConnectTimeoutMs; anything else that connects meanwhile is closed.
UniqueFd accept_from(int listener, int port, int stop_fd) {
  const auto until = Clock::now() + std::chrono::milliseconds(kConnectTimeoutMs);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0 || !wait_for(listener, POLLIN, stop_fd, static_cast<int>(left))) return {};
    sockaddr_in peer{};
    socklen_t len = sizeof peer;
    UniqueFd c(::accept4(listener, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC));
    if (c.valid() && peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK) && ntohs(peer.sin_port) == port)
      return c;
  }
}

}  // namespace

std::map<std::string, std::string> proxy_environment(const policy::Policy& policy) {
  // One port for both: the proxy tells a SOCKS5 greeting (first byte 5) from an HTTP request.
  // socks5h: the program sends the name, and moatd resolves it (never the sandbox).
  const std::string url = "http://127.0.0.1:" + std::to_string(kProxyPort);
  const std::string socks = "socks5h://127.0.0.1:" + std::to_string(kProxyPort);
  std::map<std::string, std::string> env = {{"HTTP_PROXY", url},  {"HTTPS_PROXY", url},
                                            {"ALL_PROXY", socks}, {"http_proxy", url},
                                            {"https_proxy", url}, {"all_proxy", socks}};
  std::string no_proxy;
  for (const char* local : {"localhost", "127.0.0.1"})
    if (!policy.may_allow_network_host(local))
      no_proxy += (no_proxy.empty() ? "" : ",") + std::string(local);
  if (!no_proxy.empty()) env["NO_PROXY"] = env["no_proxy"] = no_proxy;
  return env;
}

Result<std::unique_ptr<NetProxy>> NetProxy::start(UniqueFd listener, const policy::Policy& policy,
                                                  NetProxyOptions options, NetRecorder record) {
  UniqueFd stop(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop.valid()) return fail(Error::from_errno("eventfd", errno, "net proxy"));
  std::unique_ptr<NetProxy> proxy(new NetProxy(std::move(listener), std::move(stop), policy,
                                               std::move(options), std::move(record)));
  proxy->acceptor_ = std::thread([p = proxy.get()] { p->accept_loop(); });
  return proxy;
}

NetProxy::NetProxy(UniqueFd listener, UniqueFd stop, const policy::Policy& policy,
                   NetProxyOptions options, NetRecorder record)
    : listener_(std::move(listener)),
      stop_(std::move(stop)),
      policy_(policy),
      options_(std::move(options)),
      host_addresses_(HostAddresses::watching_interfaces()),
      rate_tokens_(static_cast<double>(options_.rate_burst)),
      rate_last_(Clock::now()),
      records_(std::move(record), options_.record_interval) {}

NetProxy::~NetProxy() {
  stopping_ = true;
  const std::uint64_t one = 1;
  (void)::write(stop_.get(), &one, sizeof one);
  if (acceptor_.joinable()) acceptor_.join();
  connections_.join_all();
  {
    std::lock_guard<std::mutex> lock(local_mu_);
    local_.join_all();
  }
  refuse_backlog();
}

// Connections the kernel completed but the proxy never took (a flood outruns the accept
// thread) are each answered and recorded as the session ends, so the records count every
// connection the sandbox opened. No attribution: the session's processes are gone or going.
void NetProxy::refuse_backlog() {
  for (;;) {
    pollfd p{listener_.get(), POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return;
    UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
    if (!client.valid()) return;
    const std::string why = "the session ended before its proxy took the connection";
    send_error(client.get(), 503, why);
    records_.add({{"decision", "deny"}, {"rule", "builtin.network-session-ended"}, {"error", why}});
  }
}

// A connection past the session's rate or resources.network_connections gets a 503 from this
// thread (a short write to a fresh socket) and a record; the others get a thread each.
void NetProxy::accept_loop() {
  for (;;) {
    if (!wait_for(listener_.get(), POLLIN, stop_.get(), -1)) return;
    UniqueFd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client.valid()) continue;
    if (!admit_at_rate()) {
      refuse_over_rate(std::move(client));
      continue;
    }
    if (open_.load() >= options_.max_connections) {
      refuse_at_accept(std::move(client), "resources.network_connections",
                       "the session's network_connections limit (" +
                           std::to_string(options_.max_connections) + ") is reached");
      continue;
    }
    ++open_;
    auto c = std::make_shared<UniqueFd>(std::move(client));
    try {
      connections_.spawn([this, c] {
        serve(std::move(*c));
        --open_;
      });
    } catch (const std::system_error& e) {
      // No thread to spare (EAGAIN): this connection is refused; escaping the acceptor,
      // std::system_error was std::terminate of moatd and every session on it.
      --open_;
      refuse_at_accept(std::move(*c), "builtin.network-no-thread",
                       std::string("moatd could not start a thread for this connection (") +
                           e.what() + ")");
    }
  }
}

// A token bucket of rate_burst tokens refilled at rate_per_s. A connection that finds it empty
// is refused, so a flood costs moatd an accept and a short write per connection and the log one
// counted record a second; the call that floods is ended (refuse_over_rate).
bool NetProxy::admit_at_rate() {
  const auto now = Clock::now();
  const double refill = std::chrono::duration<double>(now - rate_last_).count() *
                        static_cast<double>(options_.rate_per_s);
  rate_tokens_ = std::min(static_cast<double>(options_.rate_burst), rate_tokens_ + refill);
  rate_last_ = now;
  if (rate_tokens_ < 1) return false;
  rate_tokens_ -= 1;
  return true;
}

// Past the rate: the connection gets a 503, and the call whose program opened it is ended, not
// the session's network (issue 26 item 10). The record of the connection that ends a call
// says so (`call_ended`) and is written alone, at once (net_records.h); the call's later
// refusals are counted. A connection no call can be named for (closed at once) is refused only.
void NetProxy::refuse_over_rate(UniqueFd client) {
  set_nonblocking(client.get());
  json rec = attributed(client.get());
  const std::string why = "the call opened connections faster than resources.network_rate (" +
                          std::to_string(options_.rate_per_s) + " a second, after a burst of " +
                          std::to_string(options_.rate_burst) + ")";
  send_error(client.get(), 503, why + ": the call is ended");
  const std::string call = rec.value("call_id", "");
  if (!call.empty() && options_.end_call && options_.end_call(call, why)) rec["call_ended"] = true;
  rec.update({{"decision", "deny"}, {"rule", "resources.network_rate"}, {"error", why}});
  records_.add(std::move(rec));
}

void NetProxy::refuse_at_accept(UniqueFd client, const char* rule, const std::string& why) {
  set_nonblocking(client.get());
  json rec = attributed(client.get());
  send_error(client.get(), 503, why);
  rec.update({{"decision", "deny"}, {"rule", rule}, {"error", why}});
  records_.add(std::move(rec));
}

// Looked up first, while the program waits for its answer and so still holds its end.
json NetProxy::attributed(int client) const {
  return options_.attribute ? options_.attribute(client) : json::object();
}

void NetProxy::set_ask(NetAsk ask) {
  std::lock_guard<std::mutex> lock(ask_mu_);
  ask_ = std::move(ask);
}

policy::Decision NetProxy::decide(const std::string& host, int port, const json& record,
                                  json& answer) {
  policy::Decision d = policy_.decide_network(host, port);
  if (d.verdict != policy::Verdict::kAsk) return d;
  NetAsk ask;
  {
    std::lock_guard<std::mutex> lock(ask_mu_);
    ask = ask_;
  }
  if (!ask) return d;
  const std::string what = "a connection to " + host + ":" + std::to_string(port);
  const std::string call = record.contains("call_id") ? record.value("call_id", "") : "net";
  return ask(std::move(d), call, what, stopping_, answer);
}

Result<NetProxy::LocalEntry> NetProxy::open_local(json who,
                                                  std::shared_ptr<LocalRefusal> refused) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd listener, loopback_socket());
  if (::listen(listener.get(), 1) != 0)
    return fail(Error::from_errno("listen", errno, "net proxy"));
  LocalEntry entry;
  MOAT_ASSIGN_OR_RETURN(entry.socket, loopback_socket());
  entry.address = local_address(listener.get());
  const int port = ntohs(local_address(entry.socket.get()).sin_port);
  std::lock_guard<std::mutex> lock(local_mu_);
  if (stopping_) return fail("the session's proxy is stopping");
  if (open_.load() >= options_.max_connections)
    return fail("the session's network_connections limit (" +
                std::to_string(options_.max_connections) + ") is reached");
  ++open_;
  auto l = std::make_shared<UniqueFd>(std::move(listener));
  try {
    local_.spawn([this, l, port, who = std::move(who), refused] {
      if (UniqueFd client = accept_from(l->get(), port, stop_.get()); client.valid())
        serve(std::move(client), who, refused);
      --open_;
    });
  } catch (const std::system_error& e) {  // no thread to spare: this connection fails alone
    --open_;
    return fail(
        Error::from_errno("start the connection's thread", e.code().value(), "net proxy"));
  }
  return entry;
}

void NetProxy::serve(UniqueFd client, std::optional<json> who,
                     std::shared_ptr<LocalRefusal> refused) {
  const auto started = Clock::now();
  Outcome out;
  out.record = who ? std::move(*who) : attributed(client.get());
  std::string rest;
  SocksReply socks_refusal = SocksReply::kGeneralFailure;
  bool socks = false;
  auto req = read_request(client.get(), stop_.get(), options_.idle_s, rest, socks, socks_refusal);
  if (!req) {
    out.status = 400;
    // The stop event also ends the wait for a head: say which it was.
    out.error =
        stopping_ ? "the session ended before the request head came" : req.error().message();
  } else {
    out.record["host"] = req->host;
    out.record["port"] = req->port;
    out.record["method"] = req->method;
    json answer;
    const policy::Decision d = decide(req->host, req->port, out.record, answer);
    if (!answer.is_null()) out.record["user"] = answer;
    connect_and_relay(client.get(), *req, rest, stop_.get(), d, policy_, options_, host_addresses_,
                      bytes_, out);
  }
  if (out.status != 0 && refused) {
    std::lock_guard<std::mutex> lock(refused->mu);
    refused->why = out.error;
  }
  if (out.status != 0 && socks)
    send_text(client.get(),
              socks5_reply(req ? socks5_reply_for_status(out.status) : socks_refusal));
  else if (out.status != 0) send_error(client.get(), out.status, out.error);
  if (!out.error.empty()) out.record["error"] = out.error;
  if (!out.record.contains("decision")) out.record["decision"] = "deny";
  out.record["duration_ms"] =
      std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  records_.add(std::move(out.record));
}

}  // namespace moat::sandbox

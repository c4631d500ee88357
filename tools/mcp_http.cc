// tools/mcp_http.cc: MCP over HTTP (see mcp_http.h).
//
// One curl multi handle, driven by the client's reader thread (receive()): every exchange (a
// POST of one message, the session's GET stream, HTTP+SSE's event stream) runs there, and the
// messages its body carries are delivered there, in order, as they arrive. send() prepares a
// POST on the caller's thread, queues it, wakes the reader and waits for the answer's status;
// on the reader thread itself (the client answering a server's ping) it only queues.
#include "tools/mcp_http.h"

#include <curl/curl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "base/sse.h"

namespace moat::tools::mcp {
namespace {

using Clock = std::chrono::steady_clock;

// How curl names the proxy: never connected to, open_socket_cb gives the socket and the
// address it connects to (the discard port, so a libcurl that connected there would reach
// nothing).
constexpr const char* kProxyName = "http://127.0.0.1:9";
// What a non-2xx answer's body may add to its error.
constexpr std::size_t kErrorBodyBytes = 512;
// DELETE of the session at close(): best effort, the server forgets it at its own timeout too.
constexpr std::chrono::milliseconds kDeleteTimeout{1000};

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

bool is_success(long status) { return status >= 200 && status < 300; }

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string printable(std::string_view s, std::size_t max) {
  std::string out;
  for (char c : s.substr(0, std::min(s.size(), max)))
    out += (c >= 0x20 && c < 0x7f) ? c : ' ';
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// The URL `ref` names, relative to `base` (an `endpoint` event's data).
std::optional<std::string> resolve_url(const std::string& base, const std::string& ref) {
  CURLU* u = curl_url();
  std::optional<std::string> out;
  char* full = nullptr;
  if (curl_url_set(u, CURLUPART_URL, base.c_str(), 0) == CURLUE_OK &&
      curl_url_set(u, CURLUPART_URL, ref.c_str(), 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_URL, &full, 0) == CURLUE_OK)
    out = full;
  curl_free(full);
  curl_url_cleanup(u);
  return out;
}

class HttpTransport;

// One HTTP exchange and what its answer brought so far.
struct Exchange {
  enum class Role { kPost, kStream, kSseStream };
  HttpTransport* transport = nullptr;
  Role role = Role::kPost;
  std::string body;  // a POST's message
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  long status = 0;
  bool head_done = false;  // status and headers known (guarded by the transport's mu_)
  bool finished = false;   // the same
  std::string content_type, session_id;
  std::string json_body;   // an application/json answer
  std::string error_body;  // the first bytes of a non-2xx answer
  std::string detail;      // libcurl's description of a transport failure
  std::optional<SseParser> sse;
  std::size_t since_event = 0;  // bytes fed to sse since its last event

  ~Exchange() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    if (headers != nullptr) curl_slist_free_all(headers);
  }
};

class HttpTransport final : public Transport {
 public:
  HttpTransport(std::string server, HttpOptions o, ServerLimits limits)
      : server_(std::move(server)), o_(std::move(o)), limits_(limits), multi_(curl_multi_init()) {
    if (o_.kind == HttpKind::kSse) legacy_ = true;
  }
  ~HttpTransport() override {
    for (auto& e : running_) curl_multi_remove_handle(multi_, e->easy);
    running_.clear();
    queued_.clear();
    curl_multi_cleanup(multi_);
  }

  Result<void> send(std::string_view message, Clock::time_point deadline) override;
  std::optional<Error> receive(const Deliver& deliver) override;
  void negotiated(const std::string& protocol_version) override;
  void close() override;

  // libcurl's callbacks, on the reader thread.
  void on_head(Exchange& e);
  bool on_body(Exchange& e, std::string_view bytes);
  void on_event(Exchange& e, const SseEvent& ev);
  curl_socket_t open_socket(curl_sockaddr& address);

 private:
  Error err(const std::string& what) const {
    return Error::msg("mcp server " + server_ + ": " + what);
  }
  std::shared_ptr<Exchange> prepare(Exchange::Role role, const std::string& url,
                                    std::string body);
  void queue(std::shared_ptr<Exchange> e);
  Result<void> post(std::string_view message, Clock::time_point deadline);
  Result<void> open_sse_stream(Clock::time_point deadline);
  Error answer_error(const Exchange& e) const;
  void finish(Exchange& e, CURLcode result);
  void deliver(std::string_view message);
  void breaks(Error why);
  void delete_session();

  const std::string server_;
  const HttpOptions o_;
  const ServerLimits limits_;
  CURLM* multi_;
  std::mutex mu_;  // guards what follows, and each Exchange's head_done and finished
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Exchange>> queued_;  // for the reader to start
  std::string session_id_, protocol_version_;
  std::string post_url_;        // HTTP+SSE: from the `endpoint` event
  bool legacy_ = false;         // HTTP+SSE
  bool stream_opened_ = false;  // the GET stream was asked for (once)
  bool closing_ = false;
  bool receiving_ = false;
  std::string proxy_error_;     // why proxy_entry gave no socket
  std::optional<Error> broken_;  // what ended the connection
  std::thread::id reader_;
  // The reader's alone.
  std::vector<std::shared_ptr<Exchange>> running_;
  const Deliver* deliver_ = nullptr;
};

size_t header_cb(char* data, size_t size, size_t n, void* user) {
  auto& e = *static_cast<Exchange*>(user);
  const std::string_view line(data, size * n);
  if (line == "\r\n" || line == "\n") {
    e.transport->on_head(e);
    return size * n;
  }
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;  // a status line
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
    value.remove_suffix(1);
  const std::string name = lower(line.substr(0, colon));
  if (name == "content-type") e.content_type = lower(value);
  if (name == "mcp-session-id") e.session_id = std::string(value);
  return size * n;
}

size_t write_cb(char* data, size_t size, size_t n, void* user) {
  auto& e = *static_cast<Exchange*>(user);
  return e.transport->on_body(e, std::string_view(data, size * n)) ? size * n : 0;
}

curl_socket_t open_socket_cb(void* user, curlsocktype, curl_sockaddr* address) {
  return static_cast<HttpTransport*>(user)->open_socket(*address);
}

size_t discard_cb(char*, size_t size, size_t n, void*) { return size * n; }

std::shared_ptr<Exchange> HttpTransport::prepare(Exchange::Role role, const std::string& url,
                                                 std::string body) {
  static CurlGlobal global;  // curl_global_init is not thread-safe; a static is
  auto e = std::make_shared<Exchange>();
  e->transport = this;
  e->role = role;
  e->body = std::move(body);
  e->easy = curl_easy_init();
  CURL* c = e->easy;
  std::vector<std::string> h = {role == Exchange::Role::kPost
                                    ? "Accept: application/json, text/event-stream"
                                    : "Accept: text/event-stream",
                                "Expect:"};
  if (role == Exchange::Role::kPost) h.push_back("Content-Type: application/json");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!session_id_.empty()) h.push_back("Mcp-Session-Id: " + session_id_);
    if (!protocol_version_.empty()) h.push_back("MCP-Protocol-Version: " + protocol_version_);
  }
  for (const auto& line : h) e->headers = curl_slist_append(e->headers, line.c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, e->headers);
  if (role == Exchange::Role::kPost) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, e->body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(e->body.size()));
    // A POST's stream is the answer to one request: the client gives up on it at its
    // request_timeout, and the stream is not kept past it.
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                      static_cast<long>((limits_.request_timeout + o_.connect_timeout).count()));
  }
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o_.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, e.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, e.get());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  if (o_.proxy_entry) {
    curl_easy_setopt(c, CURLOPT_PROXY, kProxyName);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "");  // no host goes around it, whatever no_proxy says
    curl_easy_setopt(c, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket_cb);
    curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, this);
    // The session's proxy rewrites only the first request of a plain-http connection for its
    // server (and asks it to close): each http request gets a connection (and a record) of
    // its own. An https tunnel is the server's own connection and is kept.
    if (lower(url.substr(0, 7)) == "http://") curl_easy_setopt(c, CURLOPT_FORBID_REUSE, 1L);
  } else {
    curl_easy_setopt(c, CURLOPT_PROXY, "");  // not the environment's proxy either
  }
  return e;
}

// libcurl's socket for a connection: the proxy's entry, its address where libcurl connects
// (an IPv4 address fits the curl_sockaddr libcurl gives, whatever family it resolved).
curl_socket_t HttpTransport::open_socket(curl_sockaddr& address) {
  auto entry = o_.proxy_entry();
  if (!entry) {
    std::lock_guard<std::mutex> lock(mu_);
    proxy_error_ = entry.error().message();
    return CURL_SOCKET_BAD;
  }
  address.family = AF_INET;
  address.socktype = SOCK_STREAM;
  address.protocol = IPPROTO_TCP;
  address.addrlen = sizeof entry->address;
  std::memcpy(&address.addr, &entry->address, sizeof entry->address);
  return entry->socket.release();
}

void HttpTransport::queue(std::shared_ptr<Exchange> e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_.push_back(std::move(e));
  }
  curl_multi_wakeup(multi_);
}

// The error an answer that is not 2xx (or no answer) gives, naming the status and the body's
// first bytes (the session's proxy says there which rule refused the connection).
Error HttpTransport::answer_error(const Exchange& e) const {
  if (e.status == 0 && !proxy_error_.empty())
    return err("no connection to " + o_.url + " through the session's proxy: " + proxy_error_);
  if (e.status == 0)
    return err("no answer from " + o_.url + (e.detail.empty() ? "" : ": " + e.detail));
  std::string why = "answered HTTP " + std::to_string(e.status);
  if (e.status == 404 && e.role == Exchange::Role::kPost && !session_id_.empty())
    why += " to a request in its session (Mcp-Session-Id): the session ended";
  const std::string body = printable(e.error_body, kErrorBodyBytes);
  return err(why + " (" + o_.url + ")" + (body.empty() ? "" : ": " + body));
}

Result<void> HttpTransport::send(std::string_view message, Clock::time_point deadline) {
  bool auto_fallback = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto_fallback = o_.kind == HttpKind::kAuto && !legacy_ && session_id_.empty() &&
                    protocol_version_.empty();
  }
  auto sent = post(message, deadline);
  if (sent || !auto_fallback || std::this_thread::get_id() == reader_) return sent;
  const std::string text = sent.error().message();
  const bool old_server = text.find("answered HTTP 400") != std::string::npos ||
                          text.find("answered HTTP 404") != std::string::npos ||
                          text.find("answered HTTP 405") != std::string::npos;
  if (!old_server) return sent;
  {
    std::lock_guard<std::mutex> lock(mu_);
    legacy_ = true;
  }
  return post(message, deadline);
}

Result<void> HttpTransport::open_sse_stream(Clock::time_point deadline) {
  auto stream = prepare(Exchange::Role::kSseStream, o_.url, {});
  queue(stream);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, deadline, [&] {
    return !post_url_.empty() || stream->finished || broken_ || closing_;
  });
  if (!post_url_.empty()) return {};
  if (broken_) return fail(*broken_);
  if (stream->finished && !is_success(stream->status)) return fail(answer_error(*stream));
  return fail(err("its event stream (" + o_.url + ") named no endpoint in time"));
}

Result<void> HttpTransport::post(std::string_view message, Clock::time_point deadline) {
  std::string url = o_.url;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (closing_) return fail(err("connection closed"));
    if (broken_) return fail(*broken_);
    if (legacy_ && post_url_.empty()) {
      lock.unlock();
      MOAT_TRY(open_sse_stream(deadline));
      lock.lock();
    }
    if (legacy_) url = post_url_;
  }
  auto e = prepare(Exchange::Role::kPost, url, std::string(message));
  queue(e);
  if (std::this_thread::get_id() == reader_) return {};  // the reader cannot wait for itself
  std::unique_lock<std::mutex> lock(mu_);
  // A refusal's body (the session's proxy names its rule there) is read before it is told.
  const bool answered = cv_.wait_until(lock, deadline, [&] {
    return (e->head_done && is_success(e->status)) || e->finished || broken_ || closing_;
  });
  if (e->head_done && is_success(e->status)) return {};
  if (e->head_done || e->finished) return fail(answer_error(*e));
  if (broken_) return fail(*broken_);
  if (!answered) return fail(err("no answer to a POST to " + url + " in time"));
  return fail(err("connection closed"));
}

void HttpTransport::on_head(Exchange& e) {
  long status = 0;
  curl_easy_getinfo(e.easy, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200) return;  // 100 Continue: the real head follows
  if (is_success(status) && e.content_type.starts_with("text/event-stream"))
    e.sse.emplace([this, &e](const SseEvent& ev) { on_event(e, ev); });
  std::lock_guard<std::mutex> lock(mu_);
  e.status = status;
  e.head_done = true;
  if (e.role == Exchange::Role::kPost && status == 404 && !session_id_.empty() && !broken_)
    broken_ = answer_error(e);  // the server forgot the session: this connection is over
  // The session id the server gave at initialize (its first answer) is the session's.
  if (session_id_.empty() && !e.session_id.empty() && is_success(status))
    session_id_ = e.session_id;
  cv_.notify_all();
}

bool HttpTransport::on_body(Exchange& e, std::string_view bytes) {
  if (!is_success(e.status)) {
    const std::size_t room = kErrorBodyBytes - std::min(kErrorBodyBytes, e.error_body.size());
    e.error_body.append(bytes.substr(0, room));
    return true;
  }
  const std::string over = "sent a message over " + std::to_string(limits_.max_frame_bytes) +
                           " bytes (max_frame_bytes)";
  if (e.sse) {
    e.since_event += bytes.size();
    if (e.since_event > limits_.max_frame_bytes) {
      breaks(err(over));
      return false;
    }
    e.sse->feed(bytes);
    return !broken_;
  }
  if (!e.content_type.starts_with("application/json")) return true;  // 202's "Accepted"
  if (e.json_body.size() + bytes.size() > limits_.max_frame_bytes) {
    breaks(err(over));
    return false;
  }
  e.json_body.append(bytes);
  return true;
}

void HttpTransport::on_event(Exchange& e, const SseEvent& ev) {
  e.since_event = 0;
  if (ev.type == "endpoint" && e.role == Exchange::Role::kSseStream) {
    auto url = resolve_url(o_.url, ev.data);
    std::lock_guard<std::mutex> lock(mu_);
    if (!url) broken_ = err("its endpoint event named no URL: " + printable(ev.data, 128));
    else if (post_url_.empty()) post_url_ = *url;
    cv_.notify_all();
    return;
  }
  if (ev.type == "message" && !ev.data.empty()) deliver(ev.data);
}

void HttpTransport::deliver(std::string_view message) {
  if (broken_ || deliver_ == nullptr) return;
  if (auto why = (*deliver_)(message)) breaks(*why);
}

void HttpTransport::breaks(Error why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!broken_) broken_ = std::move(why);
  cv_.notify_all();
}

void HttpTransport::finish(Exchange& e, CURLcode result) {
  if (result != CURLE_OK && result != CURLE_WRITE_ERROR) e.detail = curl_easy_strerror(result);
  if (e.sse) e.sse->finish();
  if (result == CURLE_OK && is_success(e.status) && !e.json_body.empty()) deliver(e.json_body);
  {
    std::lock_guard<std::mutex> lock(mu_);
    e.finished = true;
    cv_.notify_all();
  }
  // HTTP+SSE's stream carries every answer: the connection ends with it.
  if (e.role == Exchange::Role::kSseStream && !closing_)
    breaks(e.head_done && is_success(e.status) ? err("closed its event stream (" + o_.url + ")")
                                               : answer_error(e));
}

std::optional<Error> HttpTransport::receive(const Deliver& deliver) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    reader_ = std::this_thread::get_id();
    receiving_ = true;
  }
  deliver_ = &deliver;
  for (;;) {
    std::deque<std::shared_ptr<Exchange>> start;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (closing_) return std::nullopt;
      if (broken_) return broken_;
      start.swap(queued_);
    }
    for (auto& e : start) {
      curl_multi_add_handle(multi_, e->easy);
      running_.push_back(std::move(e));
    }
    int still = 0;
    curl_multi_perform(multi_, &still);
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      auto it = std::find_if(running_.begin(), running_.end(),
                             [&](const auto& e) { return e->easy == m->easy_handle; });
      if (it == running_.end()) continue;
      const CURLcode result = m->data.result;
      std::shared_ptr<Exchange> done = *it;
      running_.erase(it);
      curl_multi_remove_handle(multi_, done->easy);
      finish(*done, result);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (broken_ && !closing_) return broken_;  // a callback broke it: end at once
    }
    // Woken by curl_multi_wakeup (a queued exchange, close()); curl's own timers shorten it.
    curl_multi_poll(multi_, nullptr, 0, 60000, nullptr);
  }
}

void HttpTransport::negotiated(const std::string& protocol_version) {
  bool open_stream = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    protocol_version_ = protocol_version;
    open_stream = !legacy_ && !stream_opened_;
    stream_opened_ = true;
  }
  // Streamable HTTP's GET stream, for the server's own messages (list_changed, pings); a
  // server offering none answers 405 and the exchange just ends.
  if (open_stream) queue(prepare(Exchange::Role::kStream, o_.url, {}));
}

void HttpTransport::delete_session() {
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (legacy_ || session_id_.empty()) return;
    id = session_id_;
  }
  auto e = prepare(Exchange::Role::kStream, o_.url, {});
  curl_easy_setopt(e->easy, CURLOPT_CUSTOMREQUEST, "DELETE");
  curl_easy_setopt(e->easy, CURLOPT_TIMEOUT_MS, static_cast<long>(kDeleteTimeout.count()));
  curl_easy_setopt(e->easy, CURLOPT_HEADERFUNCTION, discard_cb);
  curl_easy_setopt(e->easy, CURLOPT_WRITEFUNCTION, discard_cb);
  (void)curl_easy_perform(e->easy);
}

void HttpTransport::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closing_) return;
    closing_ = true;
    cv_.notify_all();
  }
  curl_multi_wakeup(multi_);
  delete_session();
}

}  // namespace

Result<std::unique_ptr<Transport>> http_transport(const std::string& server, HttpOptions options,
                                                  const ServerLimits& limits) {
  const std::string scheme = lower(options.url.substr(0, options.url.find("://") + 3));
  if (scheme != "http://" && scheme != "https://")
    return fail(Error::msg("mcp server " + server + ": url " + options.url +
                           " is not an http:// or https:// URL"));
  return std::unique_ptr<Transport>(new HttpTransport(server, std::move(options), limits));
}

}  // namespace moat::tools::mcp

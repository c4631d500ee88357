// agent/providers/http_stream.cc: libcurl (multi interface) transfer loop.
#include "agent/providers/http_stream.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/select.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <stop_token>

namespace moat::agent::providers {
namespace {

using Clock = std::chrono::steady_clock;

struct Transfer {
  CURL* easy;
  const HttpRequest* request;
  const std::function<bool(std::string_view)>* on_body;
  HttpOutcome outcome;
  Clock::time_point last_byte = Clock::now();
  bool stopped_by_sink = false;
  bool cancelled = false;
  bool idle = false;
};

bool is_success(long status) { return status >= 200 && status < 300; }

long status_of(CURL* easy) {
  long code = 0;
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
  return code;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  t->last_byte = Clock::now();
  // A new status line (after a 100 Continue or a redirect) starts a new header set.
  if (line.substr(0, 5) == "HTTP/") t->outcome.headers.clear();
  const size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    t->outcome.headers[name] = std::string(value);
  }
  return size * n;
}

size_t on_write(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  t->last_byte = Clock::now();
  std::string_view chunk(data, size * n);
  // The body starts after the headers, so the status is final here; it routes the body.
  t->outcome.status = status_of(t->easy);
  if (!is_success(t->outcome.status)) {
    // Error bodies are small JSON documents; keep at most 64 KiB of one.
    if (t->outcome.error_body.size() < 65536) t->outcome.error_body.append(chunk);
    return chunk.size();
  }
  if (!(*t->on_body)(chunk)) {
    t->stopped_by_sink = true;
    return CURL_WRITEFUNC_ERROR;
  }
  return chunk.size();
}

bool should_abort(Transfer* t) {
  const HttpRequest& r = *t->request;
  if (r.stop.stop_requested()) t->cancelled = true;
  if (Clock::now() - t->last_byte > r.idle_timeout) t->idle = true;
  return t->cancelled || t->idle;
}

// The poll's timeout: the time left until the transfer has been idle too long (+1 ms, so it
// wakes past the deadline, not just before it).
int until_idle(const Transfer& t) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      t.last_byte + t.request->idle_timeout - Clock::now());
  return static_cast<int>(std::clamp<std::int64_t>(left.count() + 1, 0, INT32_MAX));
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return should_abort(static_cast<Transfer*>(user)) ? 1 : 0;
}

struct CurlGlobal {
  CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct MultiDeleter {
  void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};
struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};

// The multi handle the request runs in: the caller's, kept between requests, whose connection
// cache keeps the connection open for the next one (libcurl notices one the server has closed
// meanwhile and connects again); else a handle of the request's own, in *own.
CURLM* multi_for(const HttpRequest& r, std::unique_ptr<CURLM, MultiDeleter>* own) {
  if (r.connections == nullptr) {
    own->reset(curl_multi_init());
    return own->get();
  }
  if (!*r.connections)
    *r.connections = std::shared_ptr<void>(
        curl_multi_init(), [](void* m) { curl_multi_cleanup(static_cast<CURLM*>(m)); });
  return static_cast<CURLM*>(r.connections->get());
}

void configure(CURL* easy, Transfer& t, curl_slist* headers) {
  const HttpRequest& r = *t.request;
  curl_easy_setopt(easy, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(easy, CURLOPT_POST, 1L);
  curl_easy_setopt(easy, CURLOPT_POSTFIELDS, r.body.data());
  curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connect_timeout.count()));
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(easy, CURLOPT_XFERINFODATA, &t);
  // Signals are how the loop's owner sees Ctrl-C; libcurl must not install handlers.
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
}

// Acknowledges what the transfer's socket has received at once rather than after the delayed-ACK
// timer (issue 27 item 22). A server that writes its answer in pieces without TCP_NODELAY
// (Python's http.server, some local model servers) holds each piece back under Nagle until
// the one before is acknowledged; on a reused connection Linux delays that ACK by up to 40 ms
// (tcp(7): a connection that sends and receives is in "pingpong" mode), where a fresh one
// acknowledges at once. TCP_QUICKACK is not permanent (tcp(7)), so it is set again after every
// perform: setting it also sends an ACK the kernel was holding. The sockets are the ones the
// multi handle waits on to read (CURLINFO_ACTIVESOCKET names none during a transfer; one
// numbered FD_SETSIZE or more is not listed and keeps the delay). Not a TCP socket (a unix
// socket): the call fails and changes nothing.
void acknowledge_at_once(CURLM* multi) {
  fd_set reads, writes, errors;
  FD_ZERO(&reads);
  FD_ZERO(&writes);
  FD_ZERO(&errors);
  int max_fd = -1;
  if (curl_multi_fdset(multi, &reads, &writes, &errors, &max_fd) != CURLM_OK) return;
  const int on = 1;
  for (int fd = 0; fd <= max_fd; ++fd)
    if (FD_ISSET(fd, &reads)) (void)::setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &on, sizeof on);
}

// Whether the connect failed because the host refused it (ECONNREFUSED): an answer, not a
// silence, so waiting and trying again only delays the error.
bool refused(CURL* easy) {
  long os_errno = 0;
  return curl_easy_getinfo(easy, CURLINFO_OS_ERRNO, &os_errno) == CURLE_OK &&
         os_errno == ECONNREFUSED;
}

}  // namespace

HttpOutcome http_post_stream(const HttpRequest& request,
                             const std::function<bool(std::string_view)>& on_body) {
  static CurlGlobal global;  // curl_global_init is not thread-safe; a static is
  std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
  Transfer t{easy.get(), &request, &on_body, {}, Clock::now(), false, false, false};
  std::unique_ptr<CURLM, MultiDeleter> own;
  CURLM* multi = multi_for(request, &own);
  std::unique_ptr<curl_slist, SlistDeleter> headers;
  for (const auto& h : request.headers)
    headers.reset(curl_slist_append(headers.release(), h.c_str()));
  configure(easy.get(), t, headers.get());
  const std::stop_callback wake(request.stop, [multi] { curl_multi_wakeup(multi); });
  curl_multi_add_handle(multi, easy.get());
  CURLcode result = CURLE_OK;
  for (int running = 1; running;) {
    curl_multi_perform(multi, &running);
    acknowledge_at_once(multi);
    t.outcome.status = status_of(easy.get());
    int queued = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &queued))
      if (msg->msg == CURLMSG_DONE) result = msg->data.result;
    if (!running) break;
    // While the server sends nothing libcurl does not call the progress function: the poll
    // wakes at the idle deadline (or libcurl's own timer), and at once for a stop.
    if (should_abort(&t)) {
      result = CURLE_ABORTED_BY_CALLBACK;
      break;
    }
    curl_multi_poll(multi, nullptr, 0, until_idle(t), nullptr);
  }
  curl_multi_remove_handle(multi, easy.get());
  t.outcome.status = status_of(easy.get());
  if (t.cancelled) {
    t.outcome.transport = Transport::kCancelled;
  } else if (t.idle) {
    t.outcome.transport = Transport::kIdleTimeout;
  } else if (t.stopped_by_sink) {
    t.outcome.transport = Transport::kStopped;
  } else if (result == CURLE_COULDNT_CONNECT && refused(easy.get())) {
    t.outcome.transport = Transport::kRefused;
  } else if (result == CURLE_COULDNT_CONNECT || result == CURLE_COULDNT_RESOLVE_HOST ||
             (result == CURLE_OPERATION_TIMEDOUT && t.outcome.status == 0) ||
             result == CURLE_SSL_CONNECT_ERROR) {
    t.outcome.transport = Transport::kConnectFailed;
  } else if (result != CURLE_OK) {
    t.outcome.transport = Transport::kBroken;
  }
  if (result != CURLE_OK) t.outcome.detail = curl_easy_strerror(result);
  return t.outcome;
}

Result<void> load_http_transport() { return {}; }  // linked in: nothing to load

}  // namespace moat::agent::providers

// agent/providers/http_provider.cc: request, stream, decode, and retry transient failures.
#include "agent/providers/http_provider.h"

#include <condition_variable>
#include <mutex>
#include <stop_token>

#include "agent/providers/http_stream.h"
#include "agent/providers/json_util.h"
#include "agent/providers/request_body.h"
#include "base/log.h"

namespace moat::agent::providers {
namespace {

using std::chrono::milliseconds;

// What one attempt ended with: an answer, a cancellation, or a failure to classify.
struct Attempt {
  std::optional<Message> message;
  bool cancelled = false;
  int status = 0;
  std::string kind;
  std::string text;  // the provider's message or the transport's description
  std::map<std::string, std::string> headers;
};

// Error bodies are JSON in three common shapes: OpenAI {"error":{message,type,code}},
// Anthropic {"type":"error","error":{type,message}}, and servers' {"error":"text"} or
// {"message"|"detail":...}. Anything else is quoted, shortened.
void read_error_body(const std::string& body, Attempt& a) {
  auto j = parse_json(body);
  if (j && j->is_object()) {
    const json* e = field(*j, "error");
    if (e && e->is_object()) {
      a.text = string_field(*e, "message").value_or("");
      a.kind = string_field(*e, "code").value_or(string_field(*e, "type").value_or(""));
      return;
    }
    if (e && e->is_string()) {
      a.text = e->get<std::string>();
      return;
    }
    for (const char* k : {"message", "detail"})
      if (auto m = string_field(*j, k)) {
        a.text = *m;
        return;
      }
  }
  a.text = ::moat::quoted(body.substr(0, 300));
}

class HttpProvider final : public Provider {
 public:
  explicit HttpProvider(ProviderSettings s) : s_(std::move(s)), rng_(std::random_device{}()) {}

  std::string name() const override { return s_.name; }
  std::string model() const override { return s_.model; }

  Result<Message> complete(const ModelRequest& request, const StreamCallbacks& stream,
                           std::stop_token cancel) override {
    HttpRequest http = build(request, cancel);
    http.connections = &connections_;
    for (int attempt = 0;; ++attempt) {
      Attempt a = attempt_once(http, stream);
      if (a.message) return std::move(*a.message);
      if (a.cancelled) return aborted_message();
      const std::string reason = describe(a);
      if (!is_retryable(a.status, a.kind) || attempt >= s_.retry.max_retries)
        return fail(error(
            a,
            reason + (attempt > 0 ? " (after " + std::to_string(attempt + 1) + " attempts)" : "")));
      milliseconds delay = backoff_delay(s_.retry, attempt, rng_);
      if (auto asked = retry_after(a.headers)) {
        if (*asked > s_.retry.max_retry_after)
          return fail(error(a, reason + " (server asked to retry after " +
                                   std::to_string(asked->count() / 1000) + "s, over the cap)"));
        delay = *asked;
      }
      if (s_.on_retry) s_.on_retry({attempt + 1, delay, reason});
      if (stream.on_retry) stream.on_retry(attempt + 1, delay, reason);
      MOAT_LOG_INFO("%s: retry %d in %lld ms: %s", s_.name.c_str(), attempt + 1,
                    static_cast<long long>(delay.count()), reason.c_str());
      if (!sleep_unless_stopped(delay, cancel)) return aborted_message();
    }
  }

 private:
  HttpRequest build(const ModelRequest& request, std::stop_token stop) const {
    BodyOptions opts{s_.model, s_.legacy_max_tokens, true, s_.thinking_budget};
    json body;
    switch (s_.api) {
      case Api::kOpenAiChat: body = openai_chat_body(request, opts); break;
      case Api::kAnthropic: body = anthropic_body(request, opts); break;
      case Api::kOpenAiResponses: body = responses_body(request, opts); break;
    }
    HttpRequest r;
    r.url = s_.base_url + std::string(api_path(s_.api));
    r.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    r.headers = {"Content-Type: application/json", "Accept: text/event-stream"};
    if (s_.api == Api::kAnthropic) {
      r.headers.push_back("anthropic-version: 2023-06-01");
      if (!s_.api_key.empty()) r.headers.push_back("x-api-key: " + s_.api_key);
    } else if (!s_.api_key.empty()) {
      r.headers.push_back("Authorization: Bearer " + s_.api_key);
    }
    for (const auto& h : s_.extra_headers) r.headers.push_back(h);
    r.connect_timeout = s_.connect_timeout;
    r.idle_timeout = s_.idle_timeout;
    r.stop = std::move(stop);
    return r;
  }

  Attempt attempt_once(const HttpRequest& http, const StreamCallbacks& stream) {
    last_decoder_ = make_decoder(s_.api, {s_.name, s_.model, &stream});
    StreamDecoder* decoder = last_decoder_.get();
    SseParser parser([&](const SseEvent& ev) { decoder->on_event(ev); });
    HttpOutcome out = http_post_stream(http, [&](std::string_view bytes) {
      parser.feed(bytes);
      return !decoder->failure().has_value();  // stop reading at the first failure
    });
    Attempt a;
    a.status = static_cast<int>(out.status);
    a.headers = std::move(out.headers);
    switch (out.transport) {
      case Transport::kCancelled: a.cancelled = true; return a;
      case Transport::kConnectFailed:
        a.kind = "connect_failed";
        a.text = out.detail;
        return a;
      case Transport::kRefused:  // not retryable: nothing listens, waiting changes nothing
        a.kind = "connect_refused";
        a.text = "the connection to " + http.url +
                 " was refused: nothing listens there (is the server running? is base_url in "
                 "config.toml right?)";
        return a;
      case Transport::kIdleTimeout:
        a.kind = "idle_timeout";
        a.text = "no data for " + std::to_string(http.idle_timeout.count()) + " ms";
        return a;
      case Transport::kBroken:
        a.kind = "connection_broken";
        a.text = out.detail;
        return a;
      case Transport::kStopped:
      case Transport::kOk: break;
    }
    if (a.status < 200 || a.status >= 300) {
      read_error_body(out.error_body, a);
      return a;
    }
    if (out.transport == Transport::kOk) {
      parser.finish();
      decoder->end_of_stream();
    }
    if (auto f = decoder->failure()) {
      a.status = f->status;
      a.kind = f->kind;
      a.text = f->message;
      return a;
    }
    a.message = decoder->message();
    return a;
  }

  Message aborted_message() const {
    Message m = last_decoder_ ? last_decoder_->message()
                              : Message{{"role", "assistant"},
                                        {"content", json::array()},
                                        {"provider", s_.name},
                                        {"model", s_.model}};
    // Half-streamed calls must not run: keep only what the user already saw.
    json kept = json::array();
    for (const auto& b : m["content"])
      if (b.value("type", "") != "toolCall") kept.push_back(b);
    m["content"] = kept;
    m["stopReason"] = "aborted";
    m["errorMessage"] = s_.name + ": request cancelled";
    if (!m.contains("usage")) m["usage"] = usage_json(0, 0, 0, 0, 0);
    return m;
  }

  std::string describe(const Attempt& a) const {
    std::string s = a.status > 0 ? "HTTP " + std::to_string(a.status) : std::string("transport");
    if (!a.kind.empty()) s += " " + a.kind;
    if (!a.text.empty()) s += ": " + a.text;
    return redact(s);
  }

  // A provider may echo (part of) the key back in its message; the key never leaves here.
  std::string redact(std::string s) const {
    if (s_.api_key.size() < 4) return s;
    for (size_t p; (p = s.find(s_.api_key)) != std::string::npos;)
      s.replace(p, s_.api_key.size(), "[redacted]");
    return s;
  }

  Error error(const Attempt& a, const std::string& reason) const {
    return Error{a.status, s_.name + " (" + s_.model + "): " + reason};
  }

  // Waits out a retry's delay; false when the stop came first (it wakes the wait at once).
  static bool sleep_unless_stopped(milliseconds delay, const std::stop_token& stop) {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(mu);
    return !cv.wait_for(lock, stop, delay, [] { return false; }) && !stop.stop_requested();
  }

  ProviderSettings s_;
  std::mt19937_64 rng_;
  std::unique_ptr<StreamDecoder> last_decoder_;
  std::shared_ptr<void> connections_;  // the transport's open connection, kept between turns
};

}  // namespace

std::unique_ptr<Provider> make_http_provider(ProviderSettings settings) {
  return std::make_unique<HttpProvider>(std::move(settings));
}

}  // namespace moat::agent::providers

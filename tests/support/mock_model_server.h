// tests/support/mock_model_server.h: a real HTTP model server on 127.0.0.1 that speaks the
// three streaming APIs, plays scripted turns, reports prompt-cache usage and injects faults.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/providers/decoder.h"

namespace httplib {
class Server;
}

namespace moat::testing {

struct ScriptedCall {
  std::string id;
  std::string name;
  nlohmann::json arguments = nlohmann::json::object();
};

struct ScriptedTurn {
  std::string text;
  std::string reasoning;
  std::vector<ScriptedCall> calls;
  bool hit_output_limit = false;  // finish as truncated (length / max_tokens / incomplete)
};

enum class Fault {
  kRateLimit,            // 429 with retry-after (see set_retry_after)
  kInsufficientQuota,    // 429 insufficient_quota: must not be retried
  kServerError,          // 500
  kOverloaded,           // 529 overloaded_error
  kOverloadedMidStream,  // 200, a few events, then the API's in-stream error
  kUnauthorized,         // 401 whose message echoes the key it received
  kBadRequest,           // 400 invalid_request_error
  kDropMidStream,        // 200, half the events, then the connection is cut
  kMalformedChunk,       // 200, an event whose data is not JSON, then the rest
  kStall,                // 200, a few events, then silence for stall(), then the rest
  kMissingFinish,        // 200, everything but the finish reason / terminal event
};

struct RecordedRequest {
  std::string path;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
  int client_port = 0;                         // the client's end of the connection it came on
};

// What the server reported for one served request, in tokens (bytes / 4).
struct ServedUsage {
  int64_t prompt = 0;  // the whole prompt
  int64_t cached = 0;  // the common prefix with the previous request's prompt
  int64_t output = 0;
};

// When the server had a request's whole body, and when it had written the last byte of its
// answer (steady_clock, so a bench can read the client's time between two requests).
struct RequestTiming {
  std::chrono::steady_clock::time_point received;
  std::optional<std::chrono::steady_clock::time_point> answered;  // none for an error reply
};

// The prompt as a provider's cache keys it: tools, system, then messages (input), one
// element per line, cache_control markers removed (they move every turn). If request B
// repeats request A and appends to it, A's canonical prompt is a prefix of B's.
std::string canonical_prompt(agent::providers::Api api, nlohmann::json body);

// A name for parameterised tests over the APIs: "openai-chat" becomes "openai_chat".
inline std::string api_test_name(agent::providers::Api api) {
  std::string name(agent::providers::api_name(api));
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

class MockModelServer {
 public:
  using Api = agent::providers::Api;
  // Serves `api` on a free port of 127.0.0.1; paths /v1/chat/completions, /v1/messages,
  // /v1/responses. `tcp_nodelay` false: a server that lets Nagle hold its small writes (Python's
  // http.server, some local model servers; loop_bench measures the client against one).
  explicit MockModelServer(Api api, bool tcp_nodelay = true);
  ~MockModelServer();
  MockModelServer(const MockModelServer&) = delete;
  MockModelServer& operator=(const MockModelServer&) = delete;

  std::string base_url() const;  // "http://127.0.0.1:PORT/v1"
  // A config.toml provider table for this server (no key), so `moat run --model
  // NAME/any-id` with XDG_CONFIG_HOME pointing at it talks to the mock.
  std::string provider_toml(const std::string& name) const;

  void push_turn(ScriptedTurn turn);
  // Used when no scripted turn is queued: computes the answer from the request body.
  void set_responder(std::function<ScriptedTurn(const nlohmann::json& body, size_t n)> f);
  // The next `times` requests get `fault` (faults queue in order); a scripted turn is used
  // up only by a request whose stream was written out whole without a fault that makes
  // the client retry.
  void inject(Fault fault, int times = 1);
  void set_retry_after(std::chrono::milliseconds d) { retry_after_ = d; }
  void set_stall(std::chrono::milliseconds d) { stall_ = d; }
  void set_fragment_size(size_t bytes) { fragment_ = bytes; }  // tool argument pieces

  std::vector<RecordedRequest> requests() const;
  std::vector<ServedUsage> served_usage() const;  // one per successful stream
  size_t request_count() const;
  std::vector<RequestTiming> timings() const;  // one per request, in order

 private:
  struct Plan;
  void handle(const std::string& path, const std::string& body,
              const std::map<std::string, std::string>& headers, int client_port, int& status,
              std::string& content_type, std::string& error_body,
              std::map<std::string, std::string>& reply_headers, std::shared_ptr<Plan>& plan);

  Api api_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  std::deque<ScriptedTurn> turns_;
  std::function<ScriptedTurn(const nlohmann::json&, size_t)> responder_;
  std::deque<Fault> faults_;
  std::vector<RecordedRequest> requests_;
  std::vector<RequestTiming> timings_;
  std::vector<ServedUsage> usage_;
  std::string previous_prompt_;
  size_t answered_ = 0;
  std::chrono::milliseconds retry_after_{1000};
  std::chrono::milliseconds stall_{3000};
  size_t fragment_ = 3;
};

}  // namespace moat::testing

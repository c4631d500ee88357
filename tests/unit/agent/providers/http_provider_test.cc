// tests/unit/agent/providers/http_provider_test.cc: the three streaming clients over libcurl
// against the mock model server on 127.0.0.1: answers, request shapes, every fault, cancellation.
#include "agent/providers/http_provider.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "tests/support/mock_model_server.h"

namespace moat::agent::providers {
namespace {

using moat::testing::Fault;
using moat::testing::MockModelServer;
using moat::testing::ScriptedCall;
using moat::testing::ScriptedTurn;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kKey = "sk-test-SECRET-0123456789";

class HttpProviderTest : public ::testing::TestWithParam<Api> {
 protected:
  HttpProviderTest() : server_(GetParam()) {}

  ProviderSettings settings() {
    ProviderSettings s;
    s.name = "mockprov";
    s.api = GetParam();
    s.base_url = server_.base_url();
    s.api_key = kKey;
    s.model = "mock-model";
    s.retry.base_delay = 5ms;
    s.retry.max_delay = 20ms;
    s.retry.max_retries = 3;
    s.connect_timeout = 2000ms;
    s.idle_timeout = 5000ms;
    s.on_retry = [this](const RetryNotice& n) { notices_.push_back(n); };
    return s;
  }

  static ModelRequest request() {
    ModelRequest r;
    r.system = "You are a test.";
    r.tools.push_back({"read", "Read a file",
                       json::parse(R"({"type":"object","properties":{"path":{"type":"string"}}})"),
                       false, false});
    r.messages.push_back(
        {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "hi"}}})}});
    return r;
  }

  Result<Message> run(const ProviderSettings& s, std::stop_token cancel = {}) {
    auto p = make_http_provider(s);
    StreamCallbacks cb;
    cb.on_text = [this](std::string_view t) { streamed_ += t; };
    return p->complete(request(), cb, cancel);
  }

  static ScriptedTurn text_turn(const std::string& text) {
    ScriptedTurn t;
    t.text = text;
    return t;
  }

  MockModelServer server_;
  std::vector<RetryNotice> notices_;
  std::string streamed_;
};

TEST_P(HttpProviderTest, PlainAnswerComesBackAsAssistantMessage) {
  server_.push_turn(text_turn("Hello from the mock, caf\xC3\xA9."));
  auto r = run(settings());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)["role"], "assistant");
  EXPECT_EQ((*r)["stopReason"], "stop");
  EXPECT_EQ((*r)["content"][0]["text"], "Hello from the mock, caf\xC3\xA9.");
  EXPECT_EQ((*r)["provider"], "mockprov");
  EXPECT_EQ((*r)["model"], "mock-model");
  EXPECT_EQ(streamed_, "Hello from the mock, caf\xC3\xA9.");
  EXPECT_GT((*r)["usage"]["output"].get<int>(), 0);
}

TEST_P(HttpProviderTest, RequestHasTheApisShapeAndAuthHeaders) {
  server_.push_turn(text_turn("ok"));
  auto s = settings();
  s.extra_headers = {"X-Extra: yes"};
  ASSERT_TRUE(run(s));
  const auto reqs = server_.requests();
  ASSERT_EQ(reqs.size(), 1u);
  const json body = json::parse(reqs[0].body);
  EXPECT_EQ(body["model"], "mock-model");
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(reqs[0].headers.at("x-extra"), "yes");
  switch (GetParam()) {
    case Api::kOpenAiChat:
      EXPECT_EQ(reqs[0].path, "/v1/chat/completions");
      EXPECT_EQ(reqs[0].headers.at("authorization"), std::string("Bearer ") + kKey);
      EXPECT_EQ(body["messages"][0], json({{"role", "system"}, {"content", "You are a test."}}));
      EXPECT_EQ(body["tools"][0]["function"]["name"], "read");
      EXPECT_EQ(body["stream_options"]["include_usage"], true);
      break;
    case Api::kAnthropic:
      EXPECT_EQ(reqs[0].path, "/v1/messages");
      EXPECT_EQ(reqs[0].headers.at("x-api-key"), kKey);
      EXPECT_EQ(reqs[0].headers.at("anthropic-version"), "2023-06-01");
      EXPECT_FALSE(reqs[0].headers.count("authorization"));
      EXPECT_EQ(body["system"][0]["text"], "You are a test.");
      EXPECT_EQ(body["system"][0]["cache_control"]["type"], "ephemeral");
      EXPECT_EQ(body["messages"].back()["content"].back()["cache_control"]["type"], "ephemeral");
      EXPECT_EQ(body["tools"][0]["input_schema"]["type"], "object");
      break;
    case Api::kOpenAiResponses:
      EXPECT_EQ(reqs[0].path, "/v1/responses");
      EXPECT_EQ(body["instructions"], "You are a test.");
      EXPECT_EQ(body["input"][0]["content"][0]["type"], "input_text");
      EXPECT_EQ(body["store"], false);
      EXPECT_EQ(body["tools"][0]["name"], "read");
      break;
  }
}

TEST_P(HttpProviderTest, ToolArgumentsSplitIntoManyFragmentsAreAssembled) {
  server_.set_fragment_size(1);
  ScriptedTurn t;
  t.text = "Reading.";
  const json args = {
      {"path", "src/\xE6\x97\xA5\xE6\x9C\xAC.txt"}, {"limit", 20}, {"nested", {{"a", {1, 2}}}}};
  t.calls = {{"call_1", "read", args}, {"call_2", "read", {{"path", "b"}}}};
  server_.push_turn(t);
  auto r = run(settings());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)["stopReason"], "toolUse");
  std::vector<json> calls;
  for (const auto& b : (*r)["content"])
    if (b["type"] == "toolCall") calls.push_back(b);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["id"], "call_1");
  EXPECT_EQ(calls[0]["arguments"], args);
  EXPECT_EQ(calls[1]["arguments"], json({{"path", "b"}}));
}

TEST_P(HttpProviderTest, OutputLimitIsReportedAsLength) {
  ScriptedTurn t = text_turn("cut sho");
  t.hit_output_limit = true;
  server_.push_turn(t);
  auto r = run(settings());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)["stopReason"], "length");
}

TEST_P(HttpProviderTest, RateLimitIsRetriedAfterTheServersRetryAfter) {
  server_.inject(Fault::kRateLimit);
  server_.set_retry_after(300ms);
  server_.push_turn(text_turn("after wait"));
  const auto start = std::chrono::steady_clock::now();
  auto r = run(settings());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_EQ(server_.request_count(), 2u);
  ASSERT_EQ(notices_.size(), 1u);
  EXPECT_EQ(notices_[0].delay, 300ms);
  EXPECT_NE(notices_[0].reason.find("HTTP 429"), std::string::npos);
}

TEST_P(HttpProviderTest, StreamCallbacksHearAboutRetries) {
  server_.inject(Fault::kServerError);
  server_.push_turn(text_turn("ok"));
  auto p = make_http_provider(settings());
  std::vector<std::string> heard;
  StreamCallbacks cb;
  cb.on_retry = [&](int attempt, std::chrono::milliseconds, std::string_view reason) {
    heard.push_back(std::to_string(attempt) + " " + std::string(reason));
  };
  ASSERT_TRUE(p->complete(request(), cb, {}));
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].rfind("1 HTTP 500", 0), 0u) << heard[0];
}

TEST_P(HttpProviderTest, RetryAfterOverTheCapFailsWithoutWaiting) {
  server_.inject(Fault::kRateLimit);
  server_.set_retry_after(120s);
  server_.push_turn(text_turn("never"));
  auto s = settings();
  s.retry.max_retry_after = 1s;
  const auto start = std::chrono::steady_clock::now();
  auto r = run(s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 429);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
  EXPECT_NE(r.error().context.find("over the cap"), std::string::npos);
}

TEST_P(HttpProviderTest, ServerErrorOverloadAndMidStreamOverloadAreRetried) {
  for (Fault f : {Fault::kServerError, Fault::kOverloaded, Fault::kOverloadedMidStream}) {
    server_.inject(f);
    server_.push_turn(text_turn("recovered"));
  }
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("fault " + std::to_string(i));
    auto r = run(settings());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ((*r)["content"][0]["text"], "recovered");
  }
  EXPECT_EQ(server_.request_count(), 6u);
  ASSERT_EQ(notices_.size(), 3u);
  EXPECT_NE(notices_[0].reason.find("HTTP 500"), std::string::npos);
  EXPECT_NE(notices_[1].reason.find("HTTP 529"), std::string::npos);
}

TEST_P(HttpProviderTest, ExhaustedRetriesNameProviderStatusAndMessage) {
  server_.inject(Fault::kServerError, 4);
  server_.push_turn(text_turn("never"));
  auto r = run(settings());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 500);
  const std::string m = r.error().context;
  EXPECT_NE(m.find("mockprov"), std::string::npos) << m;
  EXPECT_NE(m.find("HTTP 500"), std::string::npos) << m;
  EXPECT_NE(m.find("Internal error"), std::string::npos) << m;
  EXPECT_NE(m.find("after 4 attempts"), std::string::npos) << m;
  EXPECT_EQ(server_.request_count(), 4u);
}

TEST_P(HttpProviderTest, InsufficientQuotaIsNotRetried) {
  server_.inject(Fault::kInsufficientQuota);
  server_.push_turn(text_turn("never"));
  auto r = run(settings());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 429);
  EXPECT_NE(r.error().context.find("insufficient_quota"), std::string::npos);
  EXPECT_EQ(server_.request_count(), 1u);
}

TEST_P(HttpProviderTest, BadRequestIsNotRetried) {
  server_.inject(Fault::kBadRequest);
  server_.push_turn(text_turn("never"));
  auto r = run(settings());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 400);
  EXPECT_NE(r.error().context.find("messages: field required"), std::string::npos);
  EXPECT_EQ(server_.request_count(), 1u);
}

TEST_P(HttpProviderTest, AuthErrorIsNotRetriedAndNeverShowsTheKey) {
  server_.inject(Fault::kUnauthorized);
  server_.push_turn(text_turn("never"));
  auto r = run(settings());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 401);
  EXPECT_EQ(r.error().message().find(kKey), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("[redacted]"), std::string::npos);
  EXPECT_EQ(server_.request_count(), 1u);
}

TEST_P(HttpProviderTest, DroppedMalformedAndUnfinishedStreamsAreRetried) {
  for (Fault f : {Fault::kDropMidStream, Fault::kMalformedChunk, Fault::kMissingFinish}) {
    server_.inject(f);
    server_.push_turn(text_turn("whole answer number " + std::to_string(static_cast<int>(f))));
    auto r = run(settings());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ((*r)["content"][0]["text"],
              "whole answer number " + std::to_string(static_cast<int>(f)));
  }
  EXPECT_EQ(server_.request_count(), 6u);
  ASSERT_EQ(notices_.size(), 3u);
  EXPECT_NE(notices_[0].reason.find("connection_broken"), std::string::npos) << notices_[0].reason;
  EXPECT_NE(notices_[1].reason.find("malformed_chunk"), std::string::npos) << notices_[1].reason;
  EXPECT_NE(notices_[2].reason.find("incomplete_stream"), std::string::npos) << notices_[2].reason;
}

TEST_P(HttpProviderTest, StreamWithoutTerminalEventFailsWhenRetriesRunOut) {
  server_.inject(Fault::kMissingFinish, 4);
  server_.push_turn(text_turn("partial"));
  auto r = run(settings());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().context.find("incomplete_stream"), std::string::npos) << r.error().context;
}

TEST_P(HttpProviderTest, StallHitsTheIdleTimeoutAndTheRetrySucceeds) {
  server_.inject(Fault::kStall);
  server_.set_stall(4s);
  server_.push_turn(text_turn("a long enough answer to be cut in the middle"));
  auto s = settings();
  s.idle_timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  auto r = run(s);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  ASSERT_EQ(notices_.size(), 1u);
  EXPECT_NE(notices_[0].reason.find("idle_timeout"), std::string::npos);
}

TEST_P(HttpProviderTest, CancelStopsAStalledRequestAtOnceAndKeepsNoToolCalls) {
  server_.inject(Fault::kStall);
  server_.set_stall(5s);
  ScriptedTurn t = text_turn("some words before the stall happens here");
  t.calls = {{"c1", "read", {{"path", "x"}}}};
  server_.push_turn(t);
  std::stop_source cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    cancel.request_stop();
  });
  const auto start = std::chrono::steady_clock::now();
  auto r = run(settings(), cancel.get_token());
  const auto took = std::chrono::steady_clock::now() - start;
  canceller.join();
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ((*r)["stopReason"], "aborted");
  EXPECT_LT(took, 1s);
  for (const auto& b : (*r)["content"]) EXPECT_NE(b["type"], "toolCall");
  EXPECT_EQ(server_.request_count(), 1u);
}

// A refusal is the host's answer that nothing listens: no retry, and the message names the
// provider and the URL (retries here cost 13 s before the error came).
TEST_P(HttpProviderTest, ARefusedConnectionFailsAtOnceNamingTheProviderAndTheUrl) {
  auto s = settings();
  s.base_url = "http://127.0.0.1:1/v1";  // port 1: nothing listens, connect is refused
  s.retry.max_retries = 3;
  auto r = run(s);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, 0);
  EXPECT_NE(r.error().context.find("mockprov"), std::string::npos);
  EXPECT_NE(r.error().context.find("connect_refused"), std::string::npos) << r.error().context;
  EXPECT_NE(r.error().context.find("http://127.0.0.1:1/v1"), std::string::npos);
  EXPECT_EQ(notices_.size(), 0u) << "a refused connection was retried";
}

// A session's requests go out on one connection: a new one each turn would pay a TCP (and, on a
// real provider, a TLS) handshake every turn. One the server closes (cpp-httplib closes a
// connection after 5 requests) is replaced, and the requests still succeed.
TEST_P(HttpProviderTest, ASessionsRequestsShareOneConnectionUntilTheServerClosesIt) {
  constexpr int kRequests = 7;
  for (int i = 0; i < kRequests; ++i) server_.push_turn(text_turn("answer " + std::to_string(i)));
  auto p = make_http_provider(settings());
  for (int i = 0; i < kRequests; ++i) {
    auto r = p->complete(request(), {}, {});
    ASSERT_TRUE(r) << "request " << i << ": " << r.error().message();
    EXPECT_EQ((*r)["content"][0]["text"], "answer " + std::to_string(i));
  }
  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), static_cast<size_t>(kRequests));
  std::set<int> ports;
  for (const auto& r : requests) ports.insert(r.client_port);
  EXPECT_NE(requests[0].client_port, 0);
  EXPECT_EQ(requests[1].client_port, requests[0].client_port);
  EXPECT_EQ(requests[2].client_port, requests[0].client_port);
  EXPECT_LE(ports.size(), 2u) << "a connection was opened for more requests than the server "
                                 "closed connections";
  EXPECT_TRUE(notices_.empty()) << "a request on a reused connection was retried";
}

// Issue 27 item 22: a server that writes its answer in pieces without TCP_NODELAY (Nagle holds
// each piece until the one before is acknowledged) cost ~43 ms a turn on a reused connection,
// the client's delayed ACK, where a fresh connection cost none. The client acknowledges at once
// (TCP_QUICKACK): the connection is kept and a turn takes what it takes against a server with
// TCP_NODELAY (under a millisecond here; 20 ms leaves a loaded machine room).
TEST_P(HttpProviderTest, AReusedConnectionToAServerWithoutNodelayWaitsForNoDelayedAck) {
  MockModelServer nagle(GetParam(), /*tcp_nodelay=*/false);
  ProviderSettings s = settings();
  s.base_url = nagle.base_url();
  for (int i = 0; i < 4; ++i) nagle.push_turn(text_turn("answer " + std::to_string(i)));
  auto p = make_http_provider(s);
  std::vector<double> reused_ms;
  for (int i = 0; i < 4; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = p->complete(request(), {}, {});
    ASSERT_TRUE(r) << "request " << i << ": " << r.error().message();
    if (i > 0)
      reused_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  const auto requests = nagle.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[3].client_port, requests[0].client_port) << "the connection is kept";
  std::sort(reused_ms.begin(), reused_ms.end());
  EXPECT_LT(reused_ms[1], 20.0) << "the median turn on the reused connection, ms";
}

INSTANTIATE_TEST_SUITE_P(Apis, HttpProviderTest,
                         ::testing::Values(Api::kOpenAiChat, Api::kAnthropic,
                                           Api::kOpenAiResponses),
                         [](const ::testing::TestParamInfo<Api>& info) {
                           switch (info.param) {
                             case Api::kOpenAiChat: return std::string("OpenAiChat");
                             case Api::kAnthropic: return std::string("Anthropic");
                             case Api::kOpenAiResponses: return std::string("OpenAiResponses");
                           }
                           return std::string("Unknown");
                         });

}  // namespace
}  // namespace moat::agent::providers

// tests/integration/e2e/provider_run_test.cc: `moat run` against the mock model server: the
// real moat binary, a real moatd and sandbox, and the mock (tests/support) in this process,
// for each API, each fault the mock injects, each stop rule, steering and follow-ups.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

#include "e2e_support.h"
#include "mocked_run.h"
#include "tests/support/mock_model_server.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using agent::providers::Api;
using nlohmann::json;
using testing::Fault;
using testing::MockModelServer;
using testing::ScriptedCall;
using testing::ScriptedTurn;
using namespace std::chrono_literals;

constexpr const char* kKeyEnv = "MOAT_E2E_MOCK_KEY";
constexpr const char* kKey = "sk-e2e-SECRET-5f1c9a7e3b";

// Small retry delays and timeouts, so the faults cost milliseconds (config.toml keys).
constexpr const char* kProviderTuning =
    "api_key_env = \"MOAT_E2E_MOCK_KEY\"\n"
    "max_retries = 3\n"
    "retry_base_ms = 10\n"
    "retry_max_ms = 40\n"
    "retry_after_cap_ms = 5000\n"
    "connect_timeout_ms = 3000\n"
    "idle_timeout_ms = 1000\n";

std::string read_file(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string text_of(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array())
    for (const auto& b : content)
      if (b.is_object() && b.contains("text") && b["text"].is_string())
        out += b["text"].get<std::string>();
  return out;
}

// One request's conversation in a form every API shares: "user:TEXT", "assistant:TEXT",
// "call:ID:NAME", "result:ID:TEXT" (system prompts left out).
std::vector<std::string> conversation(Api api, const json& body) {
  std::vector<std::string> out;
  auto text_line = [&out](const std::string& role, const std::string& text) {
    if (!text.empty()) out.push_back(role + ":" + text);
  };
  if (api == Api::kOpenAiChat) {
    for (const auto& m : body["messages"]) {
      const std::string role = m.value("role", "");
      if (role == "user" || role == "assistant") text_line(role, text_of(m["content"]));
      if (role == "tool")
        out.push_back("result:" + m.value("tool_call_id", "") + ":" + text_of(m["content"]));
      if (m.contains("tool_calls"))
        for (const auto& c : m["tool_calls"])
          out.push_back("call:" + c.value("id", "") + ":" + c["function"].value("name", ""));
    }
  } else if (api == Api::kAnthropic) {
    for (const auto& m : body["messages"])
      for (const auto& b : m["content"]) {
        const std::string type = b.value("type", "");
        if (type == "text") text_line(m.value("role", ""), b.value("text", ""));
        if (type == "tool_use")
          out.push_back("call:" + b.value("id", "") + ":" + b.value("name", ""));
        if (type == "tool_result")
          out.push_back("result:" + b.value("tool_use_id", "") + ":" + text_of(b["content"]));
      }
  } else {
    for (const auto& item : body["input"]) {
      const std::string type = item.value("type", "message");
      if (type == "message") text_line(item.value("role", ""), text_of(item["content"]));
      if (type == "function_call")
        out.push_back("call:" + item.value("call_id", "") + ":" + item.value("name", ""));
      if (type == "function_call_output")
        out.push_back("result:" + item.value("call_id", "") + ":" + item.value("output", ""));
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

ScriptedTurn call_turn(const std::string& id, const std::string& tool, json args) {
  ScriptedTurn t;
  t.calls.push_back({id, tool, std::move(args)});
  return t;
}

std::string api_label(const ::testing::TestParamInfo<Api>& info) {
  return moat::testing::api_test_name(info.param);
}

// `moat run` in the background with a pipe on its stdin, its output going to a file: for a
// person who types while the agent works.
struct Background {
  pid_t pid = -1;
  int stdin_fd = -1;
};

Background start_with_stdin(const std::vector<std::string>& argv, const std::string& log_path,
                            const std::vector<std::string>& extra_env) {
  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) std::abort();
  const int out = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out, 1);
    dup2(out, 2);
    for (const auto& kv : extra_env) putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    setpgid(0, 0);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in[0]);
  close(out);
  return {pid, in[1]};
}

// The mocked run (mocked_run.h) with the provider's key in the environment and small retry
// delays, and `moat run` on it, headless, with the task "do the task".
class MockRun : public MockedRun {
 protected:
  void start(Api api, const std::string& extra_config = "") {
    MockedRun::start(api, std::string(kProviderTuning) + extra_config);
  }

  std::vector<std::string> env() const {
    std::vector<std::string> e = MockedRun::env();
    e.push_back(std::string(kKeyEnv) + "=" + kKey);
    return e;
  }

  std::vector<std::string> argv(const std::vector<std::string>& extra,
                                const std::string& model) const {
    std::vector<std::string> a = run_argv(extra, model);
    a.push_back("do the task");
    return a;
  }

  e2e::Run moat(const std::vector<std::string>& extra = {}, const std::string& model = "anything") {
    std::vector<std::string> a = argv(extra, model);
    a.insert(a.begin() + 2, "--headless");
    return run(a, env(), 120);
  }

  // The conversation the n-th request (from 0) carried.
  std::vector<std::string> request(std::size_t n) const {
    const auto all = server_->requests();
    if (n >= all.size()) return {};
    return conversation(api_, json::parse(all[n].body));
  }

  std::string session_text() const {
    std::string text;
    if (fs::exists(dir_.path() + "/sessions"))
      for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/sessions"))
        if (e.is_regular_file()) text += read_file(e.path());
    return text;
  }
};

// ---- Each API: a tool call that really runs, its result in the next request, the end. ----

class ProviderRunTest : public MockRun, public ::testing::WithParamInterface<Api> {
 protected:
  void SetUp() override { start(GetParam()); }
};

TEST_P(ProviderRunTest, AToolCallRunsItsResultGoesBackAndTheFinalAnswerExitsZero) {
  server_->push_turn(
      call_turn("call_e2e_1", "bash", {{"command", "echo made-by-the-tool; echo hi > f.txt"}}));
  server_->push_turn(text_turn("All finished."));
  auto r = moat();
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(read_file(ws_ + "/f.txt"), "hi\n") << "the call ran in the workspace";
  ASSERT_EQ(server_->request_count(), 2u) << r.out;
  const auto second = request(1);
  ASSERT_GE(second.size(), 3u) << joined(second);
  EXPECT_EQ(second[0], "user:do the task");
  EXPECT_EQ(second[1], "call:call_e2e_1:bash");
  EXPECT_EQ(second[2].rfind("result:call_e2e_1:", 0), 0u) << joined(second);
  EXPECT_NE(second[2].find("made-by-the-tool"), std::string::npos) << joined(second);
  EXPECT_NE(r.out.find("All finished."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("moat: done after 2 turns"), std::string::npos) << r.out;
  EXPECT_NE(session_text().find("All finished."), std::string::npos);
}

TEST_P(ProviderRunTest, AnAnswerCutAtTheOutputLimitRunsNoneOfItsCallsAndAsksToReissue) {
  ScriptedTurn cut = call_turn("call_cut", "write", {{"path", "cut.txt"}, {"content", "half"}});
  cut.hit_output_limit = true;
  server_->push_turn(cut);
  server_->push_turn(text_turn("I will split the work."));
  auto r = moat();
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_FALSE(fs::exists(ws_ + "/cut.txt")) << "a cut-off answer executes none of its calls";
  ASSERT_EQ(server_->request_count(), 2u);
  const auto second = request(1);
  ASSERT_GE(second.size(), 3u) << joined(second);
  EXPECT_EQ(second[1], "call:call_cut:write");
  EXPECT_EQ(second[2].rfind("result:call_cut:", 0), 0u) << joined(second);
  EXPECT_NE(second[2].find("cut off by the output token limit"), std::string::npos) << second[2];
  EXPECT_NE(second[2].find("Re-issue the call with complete arguments"), std::string::npos);
}

TEST_P(ProviderRunTest, AFollowUpContinuesTheRunWhenTheModelStops) {
  server_->push_turn(text_turn("First part done."));
  server_->push_turn(text_turn("Second part done."));
  auto r = moat({"--follow-up", "now the second part"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_EQ(server_->request_count(), 2u) << r.out;
  const auto second = request(1);
  ASSERT_EQ(second.size(), 3u) << joined(second);
  EXPECT_EQ(second[1], "assistant:First part done.");
  EXPECT_EQ(second[2], "user:now the second part");
  EXPECT_NE(r.out.find("follow-up delivered to the model"), std::string::npos) << r.out;
}

// Interactive: a line typed while a tool call runs reaches the model right after that
// batch's results. The call waits for a file the test creates once moat says it queued
// the line, so the order does not depend on timing.
TEST_P(ProviderRunTest, ALineTypedWhileAToolRunsFollowsItsResultInTheNextRequest) {
  server_->push_turn(call_turn(
      "call_wait", "bash", {{"command", "until test -e go; do sleep 0.05; done; echo waited"}}));
  server_->push_turn(text_turn("Done, and noted."));
  std::vector<std::string> a = argv({"--interactive"}, "anything");
  const std::string log = dir_.path() + "/run.log";
  Background bg = start_with_stdin(a, log, env());
  ASSERT_TRUE(eventually([&] { return server_->served_usage().size() >= 1; })) << read_file(log);
  const std::string line = "please also add a README\n";
  ASSERT_EQ(write(bg.stdin_fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  const bool queued =
      eventually([&] { return read_file(log).find("message queued") != std::string::npos; });
  std::ofstream(ws_ + "/go") << "";
  const int code = wait_exit(bg.pid, 60);
  close(bg.stdin_fd);
  ASSERT_TRUE(queued) << read_file(log);
  ASSERT_EQ(code, 0) << read_file(log);
  ASSERT_EQ(server_->request_count(), 2u) << read_file(log);
  const auto second = request(1);
  ASSERT_EQ(second.size(), 4u) << joined(second);
  EXPECT_EQ(second[2].rfind("result:call_wait:", 0), 0u) << joined(second);
  EXPECT_NE(second[2].find("waited"), std::string::npos) << joined(second);
  EXPECT_EQ(second[3], "user:please also add a README");
  EXPECT_NE(session_text().find("please also add a README"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(EachApi, ProviderRunTest,
                         ::testing::Values(Api::kOpenAiChat, Api::kAnthropic,
                                           Api::kOpenAiResponses),
                         api_label);

// ---- Each fault of the mock, for each API. ----

struct FaultCase {
  const char* name;
  Fault fault;
  bool retried;
  const char* says;  // in the retry note or the final error
};

void PrintTo(const FaultCase& f, std::ostream* os) { *os << f.name; }

// Retried faults: one failed attempt, then the scripted answer. The others fail at once.
const FaultCase kFaults[] = {
    {"RateLimit", Fault::kRateLimit, true, "HTTP 429"},
    {"ServerError", Fault::kServerError, true, "HTTP 500"},
    {"Overloaded", Fault::kOverloaded, true, "HTTP 529 overloaded_error"},
    {"OverloadedMidStream", Fault::kOverloadedMidStream, true, "overload"},
    {"DropMidStream", Fault::kDropMidStream, true, "retry 1"},
    {"MalformedChunk", Fault::kMalformedChunk, true, "malformed_chunk"},
    {"Stall", Fault::kStall, true, "idle_timeout"},
    {"MissingFinish", Fault::kMissingFinish, true, "incomplete_stream"},
    {"InsufficientQuota", Fault::kInsufficientQuota, false, "HTTP 429 insufficient_quota"},
    {"Unauthorized", Fault::kUnauthorized, false, "HTTP 401"},
    {"BadRequest", Fault::kBadRequest, false, "HTTP 400 invalid_request_error"},
};

class FaultRunTest : public MockRun,
                     public ::testing::WithParamInterface<std::tuple<Api, FaultCase>> {
 protected:
  void SetUp() override { start(std::get<0>(GetParam())); }
  const FaultCase& fault() const { return std::get<1>(GetParam()); }
};

TEST_P(FaultRunTest, RetriesWhatWaitingFixesAndFailsTheRestAtOnceWithoutTheKey) {
  server_->set_retry_after(300ms);
  server_->set_stall(4000ms);
  server_->inject(fault().fault);
  server_->push_turn(text_turn("Recovered answer."));
  auto r = moat();
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  if (fault().retried) {
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(server_->request_count(), 2u) << r.out;
    EXPECT_NE(r.out.find("retry 1 in"), std::string::npos) << r.out;
    EXPECT_NE(lower(r.out).find(lower(fault().says)), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Recovered answer."), std::string::npos) << r.out;
  } else {
    EXPECT_EQ(r.exit_code, 4) << "moat run --help: 4 = the model provider failed\n" << r.out;
    EXPECT_EQ(server_->request_count(), 1u) << "not retried\n" << r.out;
    EXPECT_NE(r.out.find("mock (anything): " + std::string(fault().says)), std::string::npos)
        << "the error names the provider, the model and the status\n"
        << r.out;
    EXPECT_EQ(r.out.find("retry"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("Unknown error"), std::string::npos) << "an HTTP status is no errno\n"
                                                              << r.out;
  }
  // The key reached the server (so it could leak) and appears nowhere the person or a
  // reviewer sees: output, session file, audit log.
  ASSERT_FALSE(server_->requests().empty());
  const auto h = server_->requests()[0].headers;
  const std::string sent = h.count("x-api-key")       ? h.at("x-api-key")
                           : h.count("authorization") ? h.at("authorization")
                                                      : "";
  EXPECT_NE(sent.find(kKey), std::string::npos);
  EXPECT_EQ(r.out.find(kKey), std::string::npos) << r.out;
  EXPECT_EQ(session_text().find(kKey), std::string::npos);
  std::string audit;
  if (fs::exists(dir_.path() + "/audit"))
    for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/audit"))
      if (e.is_regular_file()) audit += read_file(e.path());
  EXPECT_EQ(audit.find(kKey), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(
    EachFault, FaultRunTest,
    ::testing::Combine(::testing::Values(Api::kOpenAiChat, Api::kAnthropic, Api::kOpenAiResponses),
                       ::testing::ValuesIn(kFaults)),
    [](const ::testing::TestParamInfo<std::tuple<Api, FaultCase>>& info) {
      return api_label({std::get<0>(info.param), info.index}) + "_" + std::get<1>(info.param).name;
    });

// ---- Retry details and the stop rules (one API: the rules live in the loop). ----

class StopRuleTest : public MockRun {
 protected:
  void SetUp() override { start(Api::kAnthropic, kPricedModel); }
  // $1000 per million input tokens: the first prompt (the system prompt and tools, a few
  // thousand tokens) costs a few dollars.
  static constexpr const char* kPricedModel =
      "\n[[models]]\nprovider = \"mock\"\nid = \"priced\"\ncontext_window = 1000000\n"
      "price = { input = 1000, output = 1000, cache_read = 100, cache_write = 1250 }\n";
  // Every answer asks for another call; `unique` makes each one different.
  void endless_calls(const std::string& tool, const json& args, bool unique = true) {
    server_->set_responder([tool, args, unique](const json&, std::size_t n) {
      json a = args;
      if (unique && a.contains("command"))
        a["command"] = a["command"].get<std::string>() + " " + std::to_string(n);
      return call_turn("call_" + std::to_string(n), tool, a);
    });
  }
};

TEST_F(StopRuleTest, RateLimitsHonourRetryAfterAndFailAfterTheLastRetry) {
  server_->set_retry_after(120ms);
  server_->inject(Fault::kRateLimit, 4);  // max_retries = 3: four attempts, all refused
  auto r = moat();
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_EQ(server_->request_count(), 4u) << r.out;
  EXPECT_NE(r.out.find("retry 1 in 120 ms"), std::string::npos) << "retry-after-ms wins\n" << r.out;
  EXPECT_NE(r.out.find("retry 3 in 120 ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(after 4 attempts)"), std::string::npos) << r.out;
}

TEST_F(StopRuleTest, ARetryAfterOverTheCapFailsInsteadOfWaiting) {
  server_->set_retry_after(9000ms);  // retry_after_cap_ms = 5000
  server_->inject(Fault::kRateLimit);
  auto r = moat();
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_EQ(server_->request_count(), 1u);
  EXPECT_NE(r.out.find("over the cap"), std::string::npos) << r.out;
}

TEST_F(StopRuleTest, AStreamThatKeepsEndingBeforeItsTerminalEventFailsWithExitFour) {
  server_->inject(Fault::kMissingFinish, 4);
  server_->push_turn(text_turn("never whole"));
  auto r = moat();
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_EQ(server_->request_count(), 4u) << r.out;
  EXPECT_NE(r.out.find("stream ended before message_stop"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("provider error after 0 turns"), std::string::npos) << r.out;
}

TEST_F(StopRuleTest, MaxTurnsStopsWithExitOne) {
  endless_calls("bash", {{"command", "echo turn"}});
  auto r = moat({"--max-turns", "2"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(server_->request_count(), 2u);
  EXPECT_NE(r.out.find("max turns (2) reached"), std::string::npos) << r.out;
}

TEST_F(StopRuleTest, TheTokenBudgetStopsAfterTheBatchWithExitOne) {
  endless_calls("bash", {{"command", "echo turn"}});
  auto r = moat({"--max-tokens", "100"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(server_->request_count(), 1u) << "the first prompt alone passes 100 tokens";
  EXPECT_NE(r.out.find("token budget (100) reached"), std::string::npos) << r.out;
  EXPECT_NE(session_text().find("\"role\":\"toolResult\""), std::string::npos)
      << "the gate fires after the batch's results are persisted";
}

TEST_F(StopRuleTest, TheCostBudgetStopsWithExitOne) {
  endless_calls("bash", {{"command", "echo turn"}});
  auto r = moat({"--max-cost", "0.5"}, "priced");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(server_->request_count(), 1u) << r.out;
  EXPECT_NE(r.out.find("cost budget reached"), std::string::npos) << r.out;
  // The cost the gate used is in the session: input tokens at $1000 per million.
  const auto usage = server_->served_usage();
  ASSERT_EQ(usage.size(), 1u);
  EXPECT_GT(usage[0].prompt, 500) << "enough prompt to pass $0.50";
  EXPECT_NE(session_text().find("\"cost\":{"), std::string::npos);
}

TEST_F(StopRuleTest, TheWallTimeBudgetStopsWithExitOne) {
  // The call takes longer than the whole budget, so the gate holds when it is checked.
  endless_calls("bash", {{"command", "sleep 1.2"}}, false);
  auto r = moat({"--max-wall", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(server_->request_count(), 1u);
  EXPECT_NE(r.out.find("wall-time budget reached"), std::string::npos) << r.out;
}

// --max-wall is a hard limit, not a check between turns: the call running when the budget
// is spent is cancelled (its result says so), and the run ends with the gate's message long
// before the call's own timeout (120 s).
TEST_F(StopRuleTest, TheWallTimeBudgetCancelsTheRunningCall) {
  endless_calls("bash", {{"command", "sleep 300"}}, false);
  std::vector<std::string> a = argv({"--max-wall", "2"}, "anything");
  a.insert(a.begin() + 2, "--headless");
  auto r = run(a, env(), 60);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(server_->request_count(), 1u) << r.out;
  EXPECT_NE(r.out.find("wall-time budget reached"), std::string::npos) << r.out;
  EXPECT_NE(session_text().find("cancelled"), std::string::npos) << session_text();
}

TEST_F(StopRuleTest, TheSameFailingCallIsFlaggedThenTheRepetitionLimitStopsWithExitOne) {
  endless_calls("read", {{"path", "no-such-file.txt"}}, false);
  auto r = moat({"--repeat-limit", "4"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(server_->request_count(), 4u) << r.out;
  EXPECT_NE(r.out.find("the same call failed the same way 4 times"), std::string::npos) << r.out;
  // The third failure (in the fourth request) tells the model to change its approach.
  const auto fourth = request(3);
  ASSERT_FALSE(fourth.empty());
  EXPECT_NE(fourth.back().find("Do not repeat it: change your approach"), std::string::npos)
      << joined(fourth);
  EXPECT_EQ(request(2).back().find("Do not repeat it"), std::string::npos) << joined(request(2));
}

TEST_F(StopRuleTest, AnAnswerWithoutCallsEndsTheTurnWithExitZero) {
  server_->push_turn(text_turn("Nothing to do."));
  auto r = moat();
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(server_->request_count(), 1u);
  EXPECT_NE(r.out.find("moat: done after 1 turn"), std::string::npos) << r.out;
}

TEST_F(StopRuleTest, TheTaskAfterARepeatableOptionStaysTheTask) {
  server_->push_turn(text_turn("One."));
  server_->push_turn(text_turn("Two."));
  auto r = moat(
      {"--policy", source_root() + "/examples/policies/default.toml", "--follow-up", "and then"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_EQ(server_->request_count(), 2u);
  EXPECT_EQ(request(0), std::vector<std::string>{"user:do the task"});
  EXPECT_EQ(request(1).back(), "user:and then");
}

TEST_F(StopRuleTest, TheHelpDocumentsTheExitCodes) {
  auto r = run({moat_bin(), "run", "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (const char* s :
       {"0 done", "1 the task failed or a gate stopped it", "2 usage or configuration error",
        "3 the sandbox could not be set up", "4 the model provider failed", "--follow-up"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

// Anthropic extended thinking from config.toml: the request asks for it, and the signed
// thinking block of an answer goes back in the assistant turn of the next request.
class ThinkingRunTest : public MockRun {
 protected:
  void SetUp() override {
    start(Api::kAnthropic,
          "\n[[models]]\nprovider = \"mock\"\nid = \"thinker\"\nthinking_budget = 2048\n");
  }
};

TEST_F(ThinkingRunTest, TheBudgetIsRequestedAndSignedThinkingGoesBack) {
  ScriptedTurn first = call_turn("call_t", "bash", {{"command", "echo thought-through"}});
  first.reasoning = "First I list, then I answer.";
  server_->push_turn(first);
  server_->push_turn(text_turn("Answered."));
  auto r = moat({}, "thinker");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 2u);
  const json body = json::parse(requests[1].body);
  EXPECT_EQ(body["thinking"], json({{"type", "enabled"}, {"budget_tokens", 2048}}));
  EXPECT_GT(body["max_tokens"].get<int>(), 2048);
  const json& assistant = body["messages"][1];
  ASSERT_EQ(assistant["role"], "assistant");
  EXPECT_EQ(assistant["content"][0], json({{"type", "thinking"},
                                           {"thinking", "First I list, then I answer."},
                                           {"signature", "c2lnLW1vY2s="}}))
      << assistant.dump();
  EXPECT_EQ(assistant["content"][1]["type"], "tool_use");
}

// config.toml's max_output is what each request asks for (issue 16, item 7: a fixed 8192
// went out whatever the config said).
class MaxOutputRunTest : public MockRun {
 protected:
  void SetUp() override {
    start(Api::kAnthropic,
          "\n[[models]]\nprovider = \"mock\"\nid = \"short\"\nmax_output = 1234\n");
  }
};

TEST_F(MaxOutputRunTest, TheConfiguredOutputLimitIsRequested) {
  server_->push_turn(text_turn("Short."));
  auto r = moat({}, "short");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(json::parse(requests[0].body)["max_tokens"], 1234);
}

}  // namespace
}  // namespace moat::e2e

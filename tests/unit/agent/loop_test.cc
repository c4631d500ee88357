// tests/unit/agent/loop_test.cc: the loop's slots against the replay provider, a real session
// store in a temporary directory, and a tool function standing in for moatd.
#include "agent/loop.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <fstream>
#include <mutex>
#include <stop_token>
#include <thread>

#include "agent/replay_provider.h"

namespace moat::agent {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class LoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/moat-loop-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto s = sessions::SessionStore::create(dir_ + "/sessions", dir_);
    ASSERT_TRUE(s) << s.error().message();
    store_ = std::move(*s);
    ASSERT_TRUE(store_->append(
        {{"type", "message"},
         {"message", {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "go"}}}}}}}));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Provider> script(const std::vector<std::string>& lines) {
    const std::string path = dir_ + "/script.jsonl";
    std::ofstream out(path);
    for (const auto& l : lines) out << l << "\n";
    out.close();
    auto p = make_replay_provider(path);
    EXPECT_TRUE(p) << p.error().message();
    return p ? std::move(*p) : nullptr;
  }

  std::vector<json> messages() { return context_messages(*store_).to_vector(); }

  LoopOutcome run(Provider& p, const CallTool& tool, LoopConfig cfg = {}, Inbox* inbox = nullptr,
                  std::stop_token cancel = {}) {
    std::vector<tools::ToolSpec> specs = {{"bash", "run", json::object(), false, false},
                                          {"read", "read", json::object(), false, false},
                                          {"one_at_a_time", "x", json::object(), false, true}};
    return run_loop(p, tool, *store_, "system", specs, cfg, {}, std::move(cancel), inbox);
  }

  std::string dir_;
  std::unique_ptr<sessions::SessionStore> store_;
};

tools::ToolResult ok(const std::string& text) { return tools::ToolResult::text(text); }

TEST_F(LoopTest, AnAnswerWithoutCallsIsDone) {
  auto p = script({R"({"text":"nothing to do"})"});
  int calls = 0;
  auto out = run(*p, [&](auto&&...) {
    ++calls;
    return ok("");
  });
  EXPECT_EQ(out.stop, LoopStop::kDone);
  EXPECT_EQ(out.turns, 1);
  EXPECT_EQ(calls, 0);
  ASSERT_EQ(messages().size(), 2u);
  EXPECT_EQ(messages()[1]["role"], "assistant");
}

TEST_F(LoopTest, ResultsArePersistedInCallOrderWhateverOrderTheyFinishIn) {
  auto p = script({R"({"tool_calls":[{"id":"a","name":"bash","arguments":{"command":"slow"}},)"
                   R"({"id":"b","name":"bash","arguments":{"command":"fast"}}]})",
                   R"({"text":"done"})"});
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  auto out = run(*p, [&](const std::string& id, const std::string&, const json& args, auto) {
    int now = ++running;
    max_running = std::max(max_running.load(), now);
    std::this_thread::sleep_for(std::chrono::milliseconds(args["command"] == "slow" ? 200 : 10));
    --running;
    return ok("result of " + id);
  });
  EXPECT_EQ(out.stop, LoopStop::kDone);
  EXPECT_EQ(max_running.load(), 2) << "calls of one answer run concurrently";
  auto m = messages();
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[2]["toolCallId"], "a");
  EXPECT_EQ(m[3]["toolCallId"], "b");
  EXPECT_EQ(m[2]["content"][0]["text"], "result of a");
}

// A call's end is reported when it ends, not when its batch does: the slow call waits to
// hear that the fast one was reported (up to 10 s; the old loop reported both after both).
TEST_F(LoopTest, EachCallsEndIsReportedWhenItEndsWhileItsSiblingStillRuns) {
  auto p = script({R"({"tool_calls":[{"id":"a","name":"bash","arguments":{"command":"slow"}},)"
                   R"({"id":"b","name":"bash","arguments":{"command":"fast"}}]})",
                   R"({"text":"done"})"});
  std::mutex mu;
  std::vector<std::string> ended;
  std::atomic<bool> fast_reported{false};
  LoopEvents events;
  events.on_result = [&](const std::string& id, const std::string&, const tools::ToolResult&,
                         std::chrono::milliseconds) {
    std::lock_guard<std::mutex> lock(mu);
    ended.push_back(id);
    if (id == "b") fast_reported = true;
  };
  bool slow_saw_it = false;
  std::vector<tools::ToolSpec> specs = {{"bash", "run", json::object(), false, false}};
  auto out = run_loop(
      *p,
      [&](const std::string& id, const std::string&, const json&, auto) {
        if (id == "a") {
          const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (!fast_reported && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          slow_saw_it = fast_reported;
        }
        return ok("result of " + id);
      },
      *store_, "system", specs, {}, events, {}, nullptr);
  EXPECT_EQ(out.stop, LoopStop::kDone);
  EXPECT_TRUE(slow_saw_it) << "the fast call's end was reported while the slow one ran";
  EXPECT_EQ(ended, (std::vector<std::string>{"b", "a"}));
  auto m = messages();
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[2]["toolCallId"], "a") << "the session keeps call order";
}

TEST_F(LoopTest, ASequentialToolMakesItsBatchSequential) {
  auto p = script({R"({"tool_calls":[{"name":"one_at_a_time"},{"name":"bash","arguments":{}}]})",
                   R"({"text":"done"})"});
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  auto out = run(*p, [&](auto&&...) {
    int now = ++running;
    max_running = std::max(max_running.load(), now);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    --running;
    return ok("");
  });
  EXPECT_EQ(out.stop, LoopStop::kDone);
  EXPECT_EQ(max_running.load(), 1);
}

TEST_F(LoopTest, AnAnswerCutOffByTheOutputLimitExecutesNoneOfItsCalls) {
  auto p = script(
      {R"({"tool_calls":[{"name":"bash","arguments":{"command":"rm -rf"}}],"stop_reason":"length"})",
       R"({"text":"ok"})"});
  int calls = 0;
  auto out = run(*p, [&](auto&&...) {
    ++calls;
    return ok("");
  });
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(out.stop, LoopStop::kDone);
  auto m = messages();
  ASSERT_GE(m.size(), 3u);
  EXPECT_TRUE(m[2]["isError"].get<bool>());
  EXPECT_NE(m[2]["content"][0]["text"].get<std::string>().find("cut off by the output token limit"),
            std::string::npos);
}

TEST_F(LoopTest, MaxTurnsGateStopsAfterTheResultsArePersisted) {
  auto p = script({R"({"tool_calls":[{"name":"bash","arguments":{"command":"1"}}]})",
                   R"({"tool_calls":[{"name":"bash","arguments":{"command":"2"}}]})",
                   R"({"text":"never reached"})"});
  LoopConfig cfg;
  cfg.max_turns = 2;
  auto out = run(
      *p, [&](auto&&...) { return ok("fine"); }, cfg);
  EXPECT_EQ(out.stop, LoopStop::kGate);
  EXPECT_EQ(out.turns, 2);
  auto m = messages();
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m.back()["role"], "toolResult") << "the gate fires only after results are stored";
}

TEST_F(LoopTest, TheSameFailingCallIsFlaggedThenStopsTheRun) {
  std::vector<std::string> lines(
      8, R"({"tool_calls":[{"name":"bash","arguments":{"command":"make"}}]})");
  auto p = script(lines);
  LoopConfig cfg;
  cfg.repeat_warn = 3;
  cfg.repeat_limit = 5;
  auto out = run(
      *p, [&](auto&&...) { return tools::ToolResult::error("exit code 2"); }, cfg);
  EXPECT_EQ(out.stop, LoopStop::kRepetition);
  EXPECT_EQ(out.turns, 5);
  auto m = messages();
  const json& third = m[6];  // user, (assistant, result) x3
  ASSERT_EQ(third["role"], "toolResult");
  ASSERT_EQ(third["content"].size(), 2u);
  EXPECT_NE(third["content"][1]["text"].get<std::string>().find("change your approach"),
            std::string::npos);
  EXPECT_EQ(m[4]["content"].size(), 1u) << "the second failure is not flagged yet";
}

TEST_F(LoopTest, TerminateEndsTheRunOnlyWhenEveryResultAgrees) {
  auto p = script(
      {R"({"tool_calls":[{"name":"bash","arguments":{"command":"a"}},{"name":"bash","arguments":{"command":"b"}}]})",
       R"({"tool_calls":[{"name":"bash","arguments":{"command":"c"}},{"name":"bash","arguments":{"command":"d"}}]})",
       R"({"text":"unreached"})"});
  auto out = run(*p, [&](const std::string&, const std::string&, const json& args, auto) {
    tools::ToolResult r = ok("x");
    const std::string c = args["command"];
    // First batch: only one of two asks to stop, so the run goes on.
    r.details["terminate"] = (c == "a" || c == "c" || c == "d");
    return r;
  });
  EXPECT_EQ(out.stop, LoopStop::kTerminated);
  EXPECT_EQ(out.turns, 2);
}

TEST_F(LoopTest, AProviderFailureStopsWithItsMessage) {
  auto p = script({R"({"tool_calls":[{"name":"bash","arguments":{}}]})"});
  auto out = run(*p, [&](auto&&...) { return ok(""); });
  EXPECT_EQ(out.stop, LoopStop::kProviderError);
  EXPECT_NE(out.detail.find("has no turn 2"), std::string::npos) << out.detail;
}

// A store that cannot append (here: opened read-only, so append fails EBADF) is the disk's
// failure, not the model's: it must not be reported as a provider error (exit 4).
TEST_F(LoopTest, AStoreFailureStopsWithItsOwnReasonNotAsAProviderError) {
  auto p = script({R"({"text":"nothing to do"})"});
  auto read_only = sessions::SessionStore::open_read_only(store_->path());
  ASSERT_TRUE(read_only) << read_only.error().message();
  store_ = std::move(*read_only);
  auto out = run(*p, [&](auto&&...) { return ok(""); });
  EXPECT_EQ(out.stop, LoopStop::kStoreError);
  EXPECT_NE(out.detail.find("session store"), std::string::npos) << out.detail;
}

TEST_F(LoopTest, EveryTurnIsOnDiskWhenTheLoopReturns) {
  auto p =
      script({R"({"tool_calls":[{"name":"read","arguments":{"path":"x"}}]})", R"({"text":"bye"})"});
  auto out = run(*p, [&](auto&&...) { return ok("content"); });
  ASSERT_EQ(out.stop, LoopStop::kDone);
  auto reopened = sessions::SessionStore::open_read_only(store_->path());
  ASSERT_TRUE(reopened) << reopened.error().message();
  EXPECT_EQ(context_messages(**reopened).size(), 4u);
}

// The person's stop reaches a running call at once: the call's stop_callback runs on the
// thread that requested the stop, so no watcher thread polls a flag in between (it ran on
// base/stop_flags.h's FlagStop thread, at its 5 ms tick, before), and the run ends cancelled.
TEST_F(LoopTest, APersonsStopRunsARunningCallsCallbackOnTheStoppingThread) {
  auto p = script({R"({"tool_calls":[{"id":"a","name":"bash","arguments":{"command":"wait"}}]})",
                   R"({"text":"not reached"})"});
  std::stop_source person;
  std::promise<void> running;
  std::future<void> started = running.get_future();
  std::thread::id heard_on;
  auto wait_for_stop = [&](const std::string&, const std::string&, const json&,
                           std::stop_token cancel) {
    std::mutex mu;
    std::condition_variable_any cv;
    const std::stop_callback heard(cancel, [&] {
      heard_on = std::this_thread::get_id();
      std::lock_guard<std::mutex> lock(mu);
      cv.notify_all();
    });
    running.set_value();
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return cancel.stop_requested(); });
    return ok(cancel.stop_requested() ? "stopped" : "the stop never came");
  };
  std::thread::id stopper_id;
  std::thread stopper([&] {
    started.wait();
    stopper_id = std::this_thread::get_id();
    person.request_stop();
  });
  auto out = run(*p, wait_for_stop, {}, nullptr, person.get_token());
  stopper.join();
  EXPECT_EQ(out.stop, LoopStop::kCancelled) << out.detail;
  EXPECT_EQ(heard_on, stopper_id);
  EXPECT_EQ(messages().back()["content"][0]["text"], "stopped");
}

// A provider that records every request it gets and can act while it "streams" (the
// person typing while the model writes), in front of a scripted one.
class RecordingProvider final : public Provider {
 public:
  explicit RecordingProvider(std::unique_ptr<Provider> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return "recording"; }
  std::string model() const override { return "m"; }
  Result<Message> complete(const ModelRequest& r, const StreamCallbacks& cb,
                           std::stop_token cancel) override {
    requests.push_back(r.messages.to_vector());
    if (during_answer) during_answer(requests.size());
    return inner_->complete(r, cb, cancel);
  }
  std::vector<std::vector<Message>> requests;
  std::function<void(std::size_t n)> during_answer;

 private:
  std::unique_ptr<Provider> inner_;
};

std::string text_of(const Message& m) {
  return m["content"].is_array() && !m["content"].empty() ? m["content"][0].value("text", "") : "";
}

TEST_F(LoopTest, ASteeringMessageTypedDuringABatchFollowsItsResultsInTheNextRequest) {
  RecordingProvider p(
      script({R"({"tool_calls":[{"id":"a","name":"bash","arguments":{"command":"x"}},)"
              R"({"id":"b","name":"bash","arguments":{"command":"y"}}]})",
              R"({"text":"done"})"}));
  Inbox inbox;
  auto out = run(
      p,
      [&](const std::string& id, auto&&...) {
        if (id == "a") inbox.steer("use y instead");
        return ok("ran " + id);
      },
      {}, &inbox);
  EXPECT_EQ(out.stop, LoopStop::kDone);
  ASSERT_EQ(p.requests.size(), 2u);
  const auto& second = p.requests[1];
  ASSERT_EQ(second.size(), 5u);  // task, answer, result a, result b, the steering message
  EXPECT_EQ(second[2]["toolCallId"], "a");
  EXPECT_EQ(second[3]["toolCallId"], "b") << "the whole batch comes first";
  EXPECT_EQ(second[4]["role"], "user");
  EXPECT_EQ(text_of(second[4]), "use y instead");
  EXPECT_EQ(messages().size(), 6u) << "the steering message is stored in the session";
}

TEST_F(LoopTest, ASteeringMessageTypedDuringTheFinalAnswerKeepsTheRunGoing) {
  RecordingProvider p(script({R"({"text":"all done"})", R"({"text":"ok, also done"})"}));
  Inbox inbox;
  p.during_answer = [&](std::size_t n) {
    if (n == 1) inbox.steer("wait, one more thing");
  };
  auto out = run(
      p, [&](auto&&...) { return ok(""); }, {}, &inbox);
  EXPECT_EQ(out.stop, LoopStop::kDone);
  EXPECT_EQ(out.turns, 2);
  ASSERT_EQ(p.requests.size(), 2u);
  EXPECT_EQ(p.requests[1].back()["role"], "user");
  EXPECT_EQ(text_of(p.requests[1].back()), "wait, one more thing");
  EXPECT_EQ(p.requests[1][1]["role"], "assistant");
}

TEST_F(LoopTest, FollowUpsWaitForTheEndAndAreDeliveredOneAtATime) {
  RecordingProvider p(script({R"({"tool_calls":[{"name":"bash","arguments":{"command":"x"}}]})",
                              R"({"text":"first done"})", R"({"text":"second done"})",
                              R"({"text":"third done"})"}));
  Inbox inbox;
  inbox.follow_up("now the second");
  inbox.follow_up("now the third");
  auto out = run(
      p, [&](auto&&...) { return ok("fine"); }, {}, &inbox);
  EXPECT_EQ(out.stop, LoopStop::kDone);
  EXPECT_EQ(out.turns, 4);
  ASSERT_EQ(p.requests.size(), 4u);
  EXPECT_EQ(p.requests[1].back()["role"], "toolResult") << "not delivered after a batch";
  EXPECT_EQ(text_of(p.requests[2].back()), "now the second");
  EXPECT_EQ(text_of(p.requests[2][p.requests[2].size() - 2]), "first done");
  EXPECT_EQ(text_of(p.requests[3].back()), "now the third");
  EXPECT_EQ(p.requests[3].size(), p.requests[2].size() + 2);
}

TEST_F(LoopTest, ASteeringMessageOutranksATerminateSuggestion) {
  RecordingProvider p(script({R"({"tool_calls":[{"name":"bash","arguments":{"command":"x"}}]})",
                              R"({"text":"answered"})"}));
  Inbox inbox;
  auto out = run(
      p,
      [&](auto&&...) {
        inbox.steer("before you stop: why?");
        tools::ToolResult r = ok("x");
        r.details["terminate"] = true;
        return r;
      },
      {}, &inbox);
  EXPECT_EQ(out.stop, LoopStop::kDone) << out.detail;
  EXPECT_EQ(p.requests.size(), 2u);
}

TEST_F(LoopTest, AGateStillStopsAndTheSteeringMessageStaysInTheSession) {
  RecordingProvider p(script({R"({"tool_calls":[{"name":"bash","arguments":{"command":"x"}}]})",
                              R"({"text":"unreached"})"}));
  Inbox inbox;
  LoopConfig cfg;
  cfg.max_turns = 1;
  auto out = run(
      p,
      [&](auto&&...) {
        inbox.steer("keep going");
        return ok("x");
      },
      cfg, &inbox);
  EXPECT_EQ(out.stop, LoopStop::kGate);
  EXPECT_EQ(p.requests.size(), 1u);
  auto m = messages();
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(text_of(m.back()), "keep going") << "a resumed run answers it";
}

TEST_F(LoopTest, AFollowUpDoesNotGetPastAGate) {
  RecordingProvider p(script({R"({"text":"one"})", R"({"text":"unreached"})"}));
  Inbox inbox;
  inbox.follow_up("more");
  LoopConfig cfg;
  cfg.max_turns = 1;
  auto out = run(
      p, [&](auto&&...) { return ok(""); }, cfg, &inbox);
  EXPECT_EQ(out.stop, LoopStop::kGate);
  EXPECT_EQ(p.requests.size(), 1u);
}

// HTTP providers store usage as signed integers (the replay provider as unsigned ones); the
// token gate must count both.
class SignedUsageProvider final : public Provider {
 public:
  std::string name() const override { return "signed"; }
  std::string model() const override { return "m"; }
  Result<Message> complete(const ModelRequest&, const StreamCallbacks&,
                           std::stop_token) override {
    ++calls;
    return Message{{"role", "assistant"},
                   {"content", json::array({{{"type", "toolCall"},
                                             {"id", "c" + std::to_string(calls)},
                                             {"name", "bash"},
                                             {"arguments", {{"command", "x"}}}}})},
                   {"stopReason", "toolUse"},
                   {"usage",
                    {{"input", std::int64_t{300}},
                     {"output", std::int64_t{20}},
                     {"cacheRead", std::int64_t{0}},
                     {"cacheWrite", std::int64_t{0}}}}};
  }
  int calls = 0;
};

TEST_F(LoopTest, TheTokenGateCountsUsageStoredAsSignedIntegers) {
  SignedUsageProvider p;
  LoopConfig cfg;
  cfg.max_total_tokens = 500;
  auto out = run(
      p, [&](auto&&...) { return ok(""); }, cfg);
  EXPECT_EQ(out.stop, LoopStop::kGate);
  EXPECT_EQ(out.total_tokens, 640u);
  EXPECT_EQ(p.calls, 2);
}

TEST(Inbox, ConcurrentProducersLoseNoMessage) {
  Inbox inbox;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&inbox, t] {
      for (int i = 0; i < 250; ++i) inbox.steer(std::to_string(t) + ":" + std::to_string(i));
    });
  std::size_t taken = 0;
  while (taken < 1000) taken += inbox.take_steering().size();
  for (auto& th : threads) th.join();
  EXPECT_EQ(taken, 1000u);
  EXPECT_TRUE(inbox.take_steering().empty());
}

TEST(ReplayProvider, MalformedJsonNamesFileLineAndColumn) {
  char tmpl[] = "/tmp/moat-replay-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/bad.jsonl";
  std::ofstream(path) << "# comment\n{\"text\":\"ok\"}\n{\"text\": nope}\n";
  auto p = make_replay_provider(path);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find(path + ":3:11: malformed JSON"), std::string::npos)
      << p.error().message();
  fs::remove_all(tmpl);
}

TEST(ReplayProvider, UnknownKeysAndBadStopReasonsSayWhatIsAccepted) {
  char tmpl[] = "/tmp/moat-replay-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/bad.jsonl";
  std::ofstream(path) << "{\"txt\":\"typo\"}\n";
  auto p = make_replay_provider(path);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find(":1:1: unknown key 'txt' (accepted: text, reasoning, "
                                     "tool_calls, stop_reason, usage)"),
            std::string::npos)
      << p.error().message();
  std::ofstream(path) << "{\"stop_reason\":\"maybe\"}\n";
  p = make_replay_provider(path);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message().find("is not one of stop, length, toolUse"), std::string::npos);
  fs::remove_all(tmpl);
}

TEST(ReplayProvider, PlaysTurnsAsAssistantMessages) {
  char tmpl[] = "/tmp/moat-replay-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/ok.jsonl";
  std::ofstream(path)
      << R"({"text":"hi","tool_calls":[{"name":"bash","arguments":{"command":"ls"}}],"usage":{"input":10,"cacheRead":4}})"
      << "\n";
  auto p = make_replay_provider(path);
  ASSERT_TRUE(p) << p.error().message();
  std::string streamed;
  StreamCallbacks cb;
  cb.on_text = [&](std::string_view t) { streamed += t; };
  auto m = (*p)->complete({}, cb, {});
  ASSERT_TRUE(m);
  EXPECT_EQ(streamed, "hi");
  EXPECT_EQ((*m)["stopReason"], "toolUse");
  EXPECT_EQ((*m)["usage"]["cacheRead"], 4);
  EXPECT_EQ((*m)["content"][1]["type"], "toolCall");
  EXPECT_EQ((*m)["content"][1]["id"], "replay_1_0");
  fs::remove_all(tmpl);
}

}  // namespace
}  // namespace moat::agent

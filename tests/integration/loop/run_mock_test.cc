// tests/integration/loop/run_mock_test.cc: `moat run` (the real binary, its moatd and sandbox)
// against the mock model server over real HTTP, for the session issue's Done-when:
//  - the agent is killed with SIGKILL during a model stream and during a tool call, then
//    resumed: nothing acknowledged is lost, the interrupted call is answered with an error,
//    and the resumed request is a context the provider accepts;
//  - a scripted 200-turn session compacts through the mock: the cut never splits a call from
//    its result, the file lists are right, and every request fits under the window.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "support.h"
#include "tests/integration/e2e/e2e_support.h"
#include "tests/support/mock_model_server.h"

namespace moat::loop_test {
namespace {

namespace fs = std::filesystem;
using agent::providers::Api;
using moat::testing::Fault;
using moat::testing::MockModelServer;
using moat::testing::ScriptedCall;
using moat::testing::ScriptedTurn;
using nlohmann::json;

std::string api_label(const ::testing::TestParamInfo<Api>& info) {
  return moat::testing::api_test_name(info.param);
}

bool is_summary_request(const json& body) {
  return !body.contains("tools") || body["tools"].empty();
}

class RunAgainstMock : public ::testing::TestWithParam<Api> {
 protected:
  void SetUp() override {
    std::string why;
    if (!e2e::sandbox_available(&why)) GTEST_SKIP() << why;
    server_ = std::make_unique<MockModelServer>(GetParam());
    ws_ = dir_.path() + "/ws";
    fs::create_directories(ws_);
    fs::create_directories(dir_.path() + "/config/moat");
    std::ofstream(dir_.path() + "/config/moat/config.toml") << server_->provider_toml("mock");
  }

  std::vector<std::string> env() const {
    return {"XDG_STATE_HOME=" + dir_.path() + "/state",
            "XDG_CONFIG_HOME=" + dir_.path() + "/config", "MOATD_BIN=" + e2e::moatd_bin()};
  }
  std::vector<std::string> argv(std::vector<std::string> extra) const {
    std::vector<std::string> a = {e2e::moat_bin(),
                                  "run",
                                  "--headless",
                                  "--model",
                                  "mock/mock-model",
                                  "-C",
                                  ws_,
                                  "--sessions-dir",
                                  sessions(),
                                  "--audit-dir",
                                  dir_.path() + "/audit"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  std::string sessions() const { return dir_.path() + "/sessions"; }
  std::string log() const { return read_file(dir_.path() + "/first.log"); }

  // Waits until `pred` holds (polling), at most `seconds`.
  static bool eventually(const std::function<bool()>& pred, double seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pred();
  }

  json last_request_body() const {
    const auto reqs = server_->requests();
    return reqs.empty() ? json() : json::parse(reqs.back().body);
  }

  std::string session_text() const {
    std::string all;
    if (!fs::exists(sessions())) return all;
    for (const auto& e : fs::recursive_directory_iterator(sessions()))
      if (e.is_regular_file()) all += read_file(e.path());
    return all;
  }

  e2e::TempDir dir_;
  std::unique_ptr<MockModelServer> server_;
  std::string ws_;
};

// The first answer calls a slow tool; while it runs the test queues a stall for the second
// request, and kills the agent once that stream has started. The partial answer was never
// acknowledged, so it must not be in the session; everything before it must be.
TEST_P(RunAgainstMock, KilledDuringAModelStreamResumesWithNothingAcknowledgedLost) {
  std::atomic<int> served{0};
  server_->set_stall(std::chrono::milliseconds(30000));
  server_->set_responder([&](const json&, size_t) {
    const int n = served++;
    ScriptedTurn t;
    if (n == 0) {
      t.text = "Writing the marker first.";
      t.calls = {{"call_marker", "bash", {{"command", "sleep 1; echo acknowledged > marker.txt"}}}};
    } else if (n == 1) {
      t.text = "PARTIAL-ANSWER-NEVER-ACKNOWLEDGED and some more words to stream out slowly";
    } else {
      t.text = "Resumed: the marker is written.";
    }
    return t;
  });
  const pid_t pid = e2e::start(argv({"write the marker"}), dir_.path() + "/first.log", env());
  ASSERT_TRUE(eventually([&] { return server_->request_count() >= 1; }, 60)) << log();
  server_->inject(Fault::kStall);  // the tool call sleeps 1 s: the second request is next
  ASSERT_TRUE(eventually([&] { return server_->request_count() >= 2; }, 60)) << log();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the stream has begun
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  e2e::wait_exit(pid, 10);
  EXPECT_EQ(read_file(ws_ + "/marker.txt"), "acknowledged\n") << log();

  const std::string before = session_text();
  EXPECT_NE(before.find("call_marker"), std::string::npos) << before;
  EXPECT_EQ(before.find("PARTIAL-ANSWER"), std::string::npos)
      << "an answer whose stream was cut is not acknowledged:\n"
      << before;

  auto r = e2e::run(argv({"--continue"}), env(), 120);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json body = last_request_body();
  const auto items = wire_items(GetParam(), body);
  EXPECT_EQ(context_problem(items), "") << body.dump(1);
  bool task = false, result = false;
  for (const auto& it : items) {
    task |= it.kind == WireItem::kUser && it.text.find("write the marker") != std::string::npos;
    result |= it.kind == WireItem::kToolResult && it.id == "call_marker";
    EXPECT_EQ(it.text.find("PARTIAL-ANSWER"), std::string::npos) << body.dump(1);
  }
  EXPECT_TRUE(task) << "the acknowledged task is sent again:\n" << body.dump(1);
  EXPECT_TRUE(result) << "the acknowledged tool result is sent again:\n" << body.dump(1);
  const std::string after = session_text();
  EXPECT_EQ(after.compare(0, before.size(), before), 0) << "the session file only grew";
  EXPECT_NE(after.find("Resumed: the marker is written."), std::string::npos) << after;
}

TEST_P(RunAgainstMock, KilledDuringAToolCallResumesWithTheCallAnsweredAsAnError) {
  std::atomic<int> served{0};
  server_->set_responder([&](const json&, size_t) {
    ScriptedTurn t;
    if (served++ == 0) {
      t.calls = {{"call_slow", "bash", {{"command", "sleep 60"}}}};
    } else {
      t.text = "Picked up after the crash.";
    }
    return t;
  });
  const pid_t pid = e2e::start(argv({"run something slow"}), dir_.path() + "/first.log", env());
  ASSERT_TRUE(eventually([&] { return session_text().find("call_slow") != std::string::npos; }, 60))
      << log();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the call is running
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  e2e::wait_exit(pid, 10);
  ASSERT_EQ(server_->request_count(), 1u);

  auto r = e2e::run(argv({"--continue"}), env(), 120);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_EQ(server_->request_count(), 2u) << r.out;
  const json body = last_request_body();
  const auto items = wire_items(GetParam(), body);
  EXPECT_EQ(context_problem(items), "") << body.dump(1);
  const WireItem* answered = nullptr;
  for (const auto& it : items)
    if (it.kind == WireItem::kToolResult && it.id == "call_slow") answered = &it;
  ASSERT_NE(answered, nullptr) << body.dump(1);
  EXPECT_NE(answered->text.find("interrupted"), std::string::npos) << answered->text;
  if (GetParam() == Api::kAnthropic) {
    EXPECT_TRUE(answered->is_error) << body.dump(1);
  }
  EXPECT_NE(session_text().find("Picked up after the crash."), std::string::npos);
}

// ---- compaction over 200 scripted turns ----

constexpr int kTurns = 200;
constexpr int kWindow = 14000;
constexpr int kReserve = 3000;
constexpr int kKeepRecent = 3000;

// Turn i of the script: what the model calls, in a fixed rotation over write, read, edit, bash.
struct ScriptStep {
  std::string tool;
  std::string path;  // "" for bash
  json args;
};

// The model names files relative to the workspace; the compaction's lists hold them absolute
// (one entry with moatd's canonical mutation record of the same file).
ScriptStep step(const std::string& ws, int i) {
  const std::string rel_note = "notes/n" + std::to_string(i - i % 4) + ".txt";
  const std::string note = ws + "/" + rel_note;
  switch (i % 4) {
    case 0: {
      std::string content;
      for (int l = 0; l < 30; ++l)
        content += "line " + std::to_string(l) + " of note " + std::to_string(i) + "\n";
      return {"write", note, {{"path", rel_note}, {"content", content}}};
    }
    case 1: {
      const std::string doc = "docs/d" + std::to_string(i % 40) + ".txt";
      return {"read", ws + "/" + doc, {{"path", doc}}};
    }
    case 2:
      return {
          "edit",
          note,
          {{"path", rel_note},
           {"edits", json::array({{{"oldText", "line 0 of"}, {"newText", "edited line 0 of"}}})}}};
    default: return {"bash", "", {{"command", "wc -l notes/n" + std::to_string(i - 3) + ".txt"}}};
  }
}

std::string summary_text(int n) {
  return "## Goal\nMaintain the notes.\n## Constraints\nNone.\n## Progress\n### Done\nSummary " +
         std::to_string(n) +
         ".\n### In progress\nNotes.\n### Blocked\nNothing.\n## Decisions\n"
         "None.\n## Next steps\nContinue.\n## Critical context\nNone.";
}

int turn_of(const std::string& call_id) { return std::stoi(call_id.substr(call_id.find('_') + 1)); }

TEST_P(RunAgainstMock, TwoHundredTurnsCompactWithoutSplittingCallsAndWithTheRightFileLists) {
  fs::create_directories(ws_ + "/docs");
  fs::create_directories(ws_ + "/notes");
  for (int d = 0; d < 40; ++d) {
    std::ofstream doc(ws_ + "/docs/d" + std::to_string(d) + ".txt");
    for (int l = 0; l < 40; ++l) doc << "documentation line " << l << " of doc " << d << "\n";
  }
  std::atomic<int> turn{0}, summaries{0};
  server_->set_responder([&](const json& body, size_t) {
    ScriptedTurn t;
    if (is_summary_request(body)) {
      t.text = summary_text(summaries++);
      return t;
    }
    const int i = turn++;
    if (i >= kTurns) {
      t.text = "All notes maintained.";
      return t;
    }
    const ScriptStep s = step(ws_, i);
    t.text = "Turn " + std::to_string(i) + ".";
    t.calls = {{"call_" + std::to_string(i), s.tool, s.args}};
    return t;
  });
  auto r = e2e::run(argv({"--max-turns", "250", "--context-window", std::to_string(kWindow),
                          "--compaction-reserve", std::to_string(kReserve), "--keep-recent",
                          std::to_string(kKeepRecent), "maintain the notes"}),
                    env(), 600);
  ASSERT_EQ(r.exit_code, 0) << r.out.substr(r.out.size() > 4000 ? r.out.size() - 4000 : 0);
  EXPECT_EQ(turn.load(), kTurns + 1);
  // The tools really ran: the last note was written and edited.
  EXPECT_EQ(read_file(ws_ + "/notes/n196.txt").rfind("edited line 0 of note 196\n", 0), 0u);

  // Every request the mock served fits the window (the mock counts bytes / 4).
  int64_t largest = 0;
  for (const auto& u : server_->served_usage()) largest = std::max(largest, u.prompt);
  EXPECT_LE(largest, kWindow);

  const auto files = session_files(sessions());
  ASSERT_EQ(files.size(), 1u);
  std::vector<json> compactions;
  for (const auto& e : files[0])
    if (e.value("type", "") == "compaction") compactions.push_back(e);
  EXPECT_GE(compactions.size(), 5u) << "200 turns of ~250 tokens over a 14k window";
  EXPECT_EQ(static_cast<int>(compactions.size()), summaries.load()) << "one summary request each";

  for (size_t c = 0; c < compactions.size(); ++c) {
    const json& entry = compactions[c];
    SCOPED_TRACE("compaction " + std::to_string(c));
    const json& retained = entry["retained"];
    ASSERT_FALSE(retained.empty());
    EXPECT_NE(retained[0].value("role", ""), "toolResult") << "the cut lands on a result";
    // Calls and results are kept together: every call in the tail has its result there
    // (or the call is the tail's last answer, whose results follow in later entries).
    std::set<std::string> calls, results;
    int first_turn = kTurns;
    for (const auto& m : retained) {
      if (m.value("role", "") == "toolResult") results.insert(m.value("toolCallId", ""));
      if (m.value("role", "") != "assistant") continue;
      for (const auto& b : m["content"])
        if (b.value("type", "") == "toolCall") {
          calls.insert(b.value("id", ""));
          first_turn = std::min(first_turn, turn_of(b.value("id", "")));
        }
    }
    for (const auto& id : results)
      EXPECT_TRUE(calls.count(id)) << "result " << id << " lost its call";
    for (const auto& id : calls)
      EXPECT_TRUE(results.count(id)) << "call " << id << " lost its result";
    ASSERT_LT(first_turn, kTurns);

    // Everything before the first retained turn was summarised: its files are listed.
    std::set<std::string> read, modified;
    for (int i = 0; i < first_turn; ++i) {
      const ScriptStep s = step(ws_, i);
      if (s.tool == "read") read.insert(s.path);
      if (s.tool == "write" || s.tool == "edit") modified.insert(s.path);
    }
    for (const auto& m : modified) read.erase(m);
    EXPECT_EQ(entry["modifiedFiles"].get<std::set<std::string>>(), modified);
    EXPECT_EQ(entry["readFiles"].get<std::set<std::string>>(), read);
    EXPECT_NE(entry.value("summary", "").find("## Goal"), std::string::npos);
    // One task, hundreds of calls: each compaction updates the summary; it does not grow.
    EXPECT_LT(entry.value("summary", "").size(), 2 * summary_text(0).size() + 64)
        << entry["summary"];
  }

  // The request after each compaction carries the summary and no message older than the
  // retained tail; every request is a context the provider accepts.
  for (const auto& req : server_->requests()) {
    const json body = json::parse(req.body);
    if (is_summary_request(body)) continue;
    EXPECT_EQ(context_problem(wire_items(GetParam(), body)), "");
  }
  const json last = last_request_body();
  const std::string dumped = last.dump();
  EXPECT_NE(dumped.find("Summary " + std::to_string(summaries.load() - 1)), std::string::npos);
  EXPECT_EQ(dumped.find("\"call_0\""), std::string::npos) << "the first turn was compacted away";
}

INSTANTIATE_TEST_SUITE_P(EachApi, RunAgainstMock,
                         ::testing::Values(Api::kOpenAiChat, Api::kAnthropic,
                                           Api::kOpenAiResponses),
                         api_label);

}  // namespace
}  // namespace moat::loop_test

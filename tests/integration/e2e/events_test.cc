// tests/integration/e2e/events_test.cc: what `moat run` promises on each stream. `--json`
// against the schema docs/events.md documents (every event of runs against the mock model
// server, for each wire format), and `-p`: the final answer alone on stdout, a task from a pipe.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "events_schema.h"
#include "mocked_run.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using agent::providers::Api;
using nlohmann::json;
using testing::Fault;
using testing::MockModelServer;
using testing::ScriptedTurn;

// ---- Runs against the mock. ----

class EventsTest : public MockedRun, public ::testing::WithParamInterface<Api> {
 protected:
  void SetUp() override { start(GetParam()); }

  // Every line of stdout is an event; each one is checked against the schema.
  std::vector<json> events_of(const SplitRun& r) {
    std::vector<json> out;
    std::stringstream ss(r.out);
    for (std::string line; std::getline(ss, line);) {
      EXPECT_EQ(line.find_first_of("\x1b\x7f\x80\x9b"), std::string::npos)
          << "a --json line is plain ASCII: " << line;
      json e = json::parse(line, nullptr, false);
      EXPECT_FALSE(e.is_discarded()) << "not JSON: " << line << "\nstderr:\n" << r.err;
      if (e.is_discarded()) continue;
      EXPECT_EQ(schema_problem(schema_, e), "") << line;
      seen_.insert(e.value("type", ""));
      out.push_back(std::move(e));
    }
    if (!out.empty()) {
      EXPECT_EQ(out.front().value("schema", -1), schema_.version) << "the first event: " << r.out;
      EXPECT_EQ(out.back().value("type", ""), "result") << r.out;
    }
    return out;
  }

  // The test server (tests/support/mcp_test_server.cc) in exit-on-call mode as the user
  // layer's server "t", its tools allowed; false when it is not built.
  bool declare_exiting_mcp_server() {
    const fs::path built =
        fs::path(moatd_bin()).parent_path().parent_path() / "tests/unit/tools/mcp_test_server";
    if (!fs::exists(built)) return false;
    const std::string srv = dir_.path() + "/srv";
    fs::create_directories(srv);
    fs::copy_file(built, srv + "/mcp_test_server", fs::copy_options::overwrite_existing);
    fs::permissions(dir_.path(), fs::perms::all, fs::perm_options::add);
    fs::permissions(srv, fs::perms::all, fs::perm_options::add);
    fs::create_directories(dir_.path() + "/config/moat/policy.d");
    std::ofstream(dir_.path() + "/config/moat/policy.d/mcp.toml")
        << "schema = 1\n\n[[mcp.server]]\nname = \"t\"\ncommand = [\"" << srv
        << "/mcp_test_server\", \"exit-on-call\"]\nread = [\"" << srv
        << "\"]\nstart = \"session\"\n\n[[tool]]\nid = \"t-tools\"\ndecision = \"allow\"\n"
        << "tool = [\"mcp:t:*\"]\n";
    return true;
  }
  static ScriptedTurn mcp_call_turn(const std::string& id, const std::string& tool) {
    ScriptedTurn t;
    t.text = "Calling " + tool + ".";
    t.calls.push_back({id, tool, {{"text", "x"}}});
    return t;
  }

  Schema schema_ = read_schema("event stream");
  std::set<std::string> seen_;
};

// A call that runs and streams output, a retried request, a follow-up; then a gate, a
// provider error, a failure before the session, and a compaction whose next request misses
// the cache: between them every event type the document lists.
TEST_P(EventsTest, EveryEventOfEveryKindOfRunIsAsDocsEventsMdSays) {
  ASSERT_GE(schema_.version, 1) << "docs/events.md states no schema version";
  ASSERT_GE(schema_.events.size(), 10u) << "docs/events.md: event tables not found";
  server_->inject(Fault::kServerError);
  server_->push_turn(call_turn("call_1", "printf 'line one\\n'; echo hi > f.txt"));
  server_->push_turn(text_turn("All done."));
  server_->push_turn(text_turn("The rest is done too."));
  auto run = moat({"--json", "--follow-up", "and the rest"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto events = events_of(run);
  const json& header = events.front();
  EXPECT_EQ(header.value("type", ""), "session");
  EXPECT_EQ(header.value("workspace", ""), fs::canonical(ws_).string());
  EXPECT_FALSE(header["policy_layers"].empty()) << header.dump();
  EXPECT_FALSE(header["sandbox"].empty()) << header.dump();
  bool ended = false;
  for (const auto& e : events)
    if (e.value("type", "") == "tool_call_end") {
      ended = true;
      EXPECT_EQ(e.value("decision", ""), "allow") << e.dump();
      EXPECT_EQ(e.value("exit_code", -1), 0) << e.dump();
      EXPECT_NE(e.dump().find("f.txt"), std::string::npos) << "files changed: " << e.dump();
    }
  EXPECT_TRUE(ended) << run.out;
  EXPECT_EQ(events.back().value("answer", ""), "The rest is done too.");

  server_->push_turn(call_turn("call_2", "true"));
  events_of(moat({"--json", "--max-turns", "1"}));  // gate
  server_->inject(Fault::kUnauthorized);
  auto failed = moat({"--json"});  // error during the run
  EXPECT_EQ(failed.exit_code, 4) << failed.out << failed.err;
  events_of(failed);
  std::vector<std::string> bad = {"--json", "-C", dir_.path() + "/no-such-dir"};
  auto refused =
      run_split({moat_bin(), "run", "--model", "mock/any", bad[0], bad[1], bad[2], "x"}, env(), 60);
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  events_of(refused);  // error before the session

  // A compaction after the first turn: the next request's prompt no longer starts with the
  // previous one's, and the cache misses.
  server_->set_responder([](const json& body, size_t) {
    return text_turn(body.dump().find("You summarise") != std::string::npos ? "Summary."
                                                                            : "Done after all.");
  });
  server_->push_turn(call_turn("call_3", "echo compact me"));
  events_of(moat({"--json", "--context-window", "1500", "--compaction-reserve", "100",
                  "--keep-recent", "10"}));

  // An MCP server (the test server, in the user layer) that exits at its first call: its end
  // reaches the stream as an mcp_status event.
  if (declare_exiting_mcp_server()) {
    server_->set_responder(nullptr);
    server_->push_turn(mcp_call_turn("call_4", "mcp__t__echo"));
    server_->push_turn(text_turn("It ended."));
    events_of(moat({"--json"}));
  }

  for (const auto& [type, fields] : schema_.events)
    EXPECT_TRUE(seen_.count(type)) << "no run produced a " << type << " event";
}

INSTANTIATE_TEST_SUITE_P(EachApi, EventsTest,
                         ::testing::Values(Api::kOpenAiChat, Api::kAnthropic,
                                           Api::kOpenAiResponses),
                         [](const auto& info) { return testing::api_test_name(info.param); });

// ---- -p: the final answer alone on stdout. ----

class PrintModeTest : public MockedRun {
 protected:
  void SetUp() override { start(Api::kOpenAiChat); }
};

TEST_F(PrintModeTest, StdoutHoldsExactlyTheFinalAnswerAndEverythingElseGoesToStderr) {
  server_->push_turn(call_turn("call_p", "echo from-the-tool"));
  server_->push_turn(text_turn("The final answer."));
  auto r = moat({"-p"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "The final answer.\n") << "stderr:\n" << r.err;
  EXPECT_NE(r.err.find("Running it."), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  > bash: echo from-the-tool"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("from-the-tool"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("moat: done after 2 turns"), std::string::npos) << r.err;
}

TEST_F(PrintModeTest, AProviderFailureLeavesStdoutEmpty) {
  server_->inject(Fault::kUnauthorized);
  auto r = moat({"-p"});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_EQ(r.out, "") << "the error goes to stderr";
  EXPECT_NE(r.err.find("HTTP 401"), std::string::npos) << r.err;
}

TEST_F(PrintModeTest, ATaskFromAPipeOrTaskFileDashIsTheTask) {
  server_->push_turn(text_turn("Piped."));
  auto piped = moat({"-p"}, "", "the task from a pipe\n");
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out, "Piped.\n");
  server_->push_turn(text_turn("Dashed."));
  auto dashed = moat({"-p", "--task-file", "-"}, "", "the task from --task-file -\n");
  ASSERT_EQ(dashed.exit_code, 0) << dashed.err;
  EXPECT_EQ(dashed.out, "Dashed.\n");
  const auto requests = server_->requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_NE(requests[0].body.find("the task from a pipe"), std::string::npos);
  EXPECT_NE(requests[1].body.find("the task from --task-file -"), std::string::npos);
}

TEST_F(PrintModeTest, AnOpenPipeIsNotWaitedOnWhenTheTaskIsGivenAsWords) {
  server_->push_turn(text_turn("Not waiting."));
  auto r = moat({"-p"}, "the task as words", "", /*hold_stdin=*/true);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Not waiting.\n");
}

TEST_F(PrintModeTest, EphemeralWritesNoSessionFileAndSaysTheAuditLogIsKept) {
  server_->push_turn(text_turn("Gone."));
  auto r = moat({"-p", "--ephemeral"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "Gone.\n");
  EXPECT_FALSE(fs::exists(dir_.path() + "/sessions") && !fs::is_empty(dir_.path() + "/sessions"))
      << "no session file";
  EXPECT_NE(r.err.find("audit log still records"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("session file:"), std::string::npos) << r.err;
  bool audited = false;
  if (fs::exists(dir_.path() + "/audit"))
    for (const auto& e : fs::recursive_directory_iterator(dir_.path() + "/audit"))
      audited = audited || e.path().extension() == ".jsonl";
  EXPECT_TRUE(audited) << "the audit log is written";
}

}  // namespace
}  // namespace moat::e2e

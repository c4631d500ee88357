// tests/integration/e2e/rpc_test.cc: `moat run --rpc` driven as a program drives it, against
// the mock model server for each wire format: a whole session of prompts, an ask answered, a
// turn steered, followed up and aborted, a model switched, bad lines refused by line; every
// event and every command checked against docs/events.md; and what moat holds for a client
// that stops reading.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "agent/rpc.h"
#include "agent/rpc_event_schema.h"
#include "events_schema.h"
#include "mocked_run.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using agent::providers::Api;
using nlohmann::json;
using testing::ScriptedTurn;

// `moat run --rpc` with its stdin and stdout on pipes of the test's.
class RpcClient {
 public:
  RpcClient(const std::vector<std::string>& argv, const std::vector<std::string>& env,
            const std::string& err_path) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) std::abort();
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    pid_ = start_with_stdio(argv, env, in[0], out[1], err);
    close(in[0]);
    close(out[1]);
    close(err);
    in_ = in[1];
    out_ = out[0];
    ::signal(SIGPIPE, SIG_IGN);
  }
  ~RpcClient() {
    if (in_ >= 0) close(in_);
    close(out_);
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // Sends bytes as they are; counts the LFs (the lines moat numbers).
  void send_raw(const std::string& bytes) {
    for (std::size_t at = 0; at < bytes.size();) {
      const ssize_t n = write(in_, bytes.data() + at, bytes.size() - at);
      if (n <= 0) break;
      at += static_cast<std::size_t>(n);
    }
    for (char c : bytes) lines_sent_ += c == '\n';
  }
  // Sends a command; returns its line number.
  std::uint64_t send(const json& command) {
    send_raw(command.dump() + "\n");
    return lines_sent_;
  }
  void close_input() {
    close(in_);
    in_ = -1;
  }

  // The next event (every one is kept in events()), or null when none came in time.
  json next(int timeout_ms = 90000) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
        lines_.push_back(buf_.substr(0, nl));
        buf_.erase(0, nl + 1);
        events_.push_back(json::parse(lines_.back(), nullptr, false));
        return events_.back();
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      pollfd p{out_, POLLIN, 0};
      if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) return nullptr;
      char b[65536];
      const ssize_t n = read(out_, b, sizeof b);
      if (n <= 0) return nullptr;
      buf_.append(b, static_cast<std::size_t>(n));
    }
  }
  // Events until one of `type` for which `also` holds; null when none came.
  json until(const std::string& type, const std::function<bool(const json&)>& also = nullptr) {
    for (json e = next(); !e.is_null(); e = next())
      if (e.is_object() && e.value("type", "") == type && (!also || also(e))) return e;
    return nullptr;
  }
  // The response to the command sent on `line`.
  json response(std::uint64_t line) {
    return until("response", [line](const json& e) { return e.value("line", 0ull) == line; });
  }
  int wait(int timeout_s) {
    const int code = wait_exit(pid_, timeout_s);
    pid_ = -1;
    return code;
  }

  pid_t pid() const { return pid_; }
  int out_fd() const { return out_; }
  const std::vector<json>& events() const { return events_; }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  std::string buf_;
  std::uint64_t lines_sent_ = 0;
  std::vector<std::string> lines_;
  std::vector<json> events_;
};

class RpcTest : public MockedRun, public ::testing::WithParamInterface<Api> {
 protected:
  void SetUp() override {
    start(GetParam());
    if (::testing::Test::IsSkipped()) return;
    fs::create_directories(ws_ + "/build/sub");  // for `rm -rf build`, which the policy asks
    for (const char* section : {"event stream", "RPC events"})
      for (auto& [type, table] : read_schema(section).events) events_.events[type] = table;
    events_.version = read_schema("event stream").version;
  }

  std::unique_ptr<RpcClient> start_rpc(const std::vector<std::string>& flags = {}) {
    std::vector<std::string> argv = run_argv({"--rpc"});
    argv.insert(argv.end(), flags.begin(), flags.end());
    return std::make_unique<RpcClient>(argv, env(), dir_.path() + "/stderr");
  }

  // A command the test means to be taken: documented, field by field.
  std::uint64_t command(RpcClient& c, const json& cmd) {
    const std::string type = cmd.value("type", "");
    auto it = commands_.events.find(type);
    EXPECT_NE(it, commands_.events.end()) << "undocumented command " << type;
    if (it != commands_.events.end()) {
      json fields = cmd;
      fields.erase("id");
      EXPECT_EQ(table_problem(type, it->second, fields), "") << cmd.dump();
    }
    sent_.insert(type);
    return c.send(cmd);
  }

  // Every event moat wrote, against docs/events.md.
  void check_events(const RpcClient& c) {
    for (const auto& line : c.lines()) {
      EXPECT_EQ(line.find_first_of("\x1b\x7f\x80\x9b"), std::string::npos) << line;
      json e = json::parse(line, nullptr, false);
      ASSERT_FALSE(e.is_discarded()) << "not JSON: " << line;
      EXPECT_EQ(schema_problem(events_, e), "") << line;
      if (e.contains("state")) {
        EXPECT_EQ(table_problem("state", state_.events["state"], e["state"]), "") << line;
      }
      seen_.insert(e.value("type", ""));
      if (e.value("type", "") == "response" && e.value("success", false))
        succeeded_.insert(e.value("command", ""));
    }
  }

  std::string err() const { return read_file(dir_.path() + "/stderr"); }

  Schema events_;
  Schema commands_ = read_schema("RPC commands");
  Schema state_ = read_schema("RPC state");
  std::set<std::string> sent_, seen_, succeeded_;
};

bool is_ok(const json& r) { return r.is_object() && r.value("success", false); }

TEST_P(RpcTest, AWholeSessionThroughRpcAsDocsEventsMdSays) {
  ASSERT_GE(commands_.events.size(), 7u) << "docs/events.md: command tables not found";
  ASSERT_TRUE(events_.events.count("response") && events_.events.count("ask"));
  auto c = start_rpc({"--keep-recent", "1"});  // so a compaction has something to summarise
  const json header = c->next();
  ASSERT_EQ(header.value("type", ""), "session") << header.dump() << err();
  EXPECT_EQ(header.value("schema", -1), events_.version);
  const json state = c->response(command(*c, {{"type", "get_state"}, {"id", "s1"}}));
  ASSERT_TRUE(is_ok(state)) << state.dump();
  EXPECT_EQ(state["state"].value("running", true), false);
  EXPECT_EQ(state["state"].value("model", ""), "mock/any");
  EXPECT_EQ(state.value("id", ""), "s1") << "the response carries the command's id";

  // An ask, answered by the client; an answer to no open question is refused.
  server_->push_turn(call_turn("c1", "rm -rf build"));
  server_->push_turn(text_turn("Removed."));
  ASSERT_TRUE(is_ok(c->response(command(*c, {{"type", "prompt"}, {"id", 1}, {"message", "go"}}))));
  const json ask = c->until("ask");
  ASSERT_TRUE(ask.is_object()) << err();
  EXPECT_NE(ask.value("question", "").find("rm -rf build"), std::string::npos) << ask.dump();
  const json wrong = c->response(
      command(*c, {{"type", "answer"}, {"id", 2}, {"ask", "no-such"}, {"decision", "deny"}}));
  EXPECT_FALSE(is_ok(wrong));
  EXPECT_NE(wrong.value("error", "").find(ask.value("ask", "")), std::string::npos)
      << "names the open question: " << wrong.dump();
  EXPECT_TRUE(is_ok(c->response(command(
      *c, {{"type", "answer"}, {"id", 3}, {"ask", ask["ask"]}, {"decision", "allow_once"}}))));
  json result = c->until("result");
  EXPECT_EQ(result.value("stop", ""), "done") << result.dump();
  EXPECT_EQ(result.value("answer", ""), "Removed.");
  EXPECT_FALSE(fs::exists(ws_ + "/build")) << "the allowed call ran";

  // Steered and followed up while a call runs; a second prompt meanwhile is refused.
  server_->push_turn(call_turn("c2", "sleep 3"));
  server_->push_turn(text_turn("Steered."));
  server_->push_turn(text_turn("Followed."));
  ASSERT_TRUE(
      is_ok(c->response(command(*c, {{"type", "prompt"}, {"id", 4}, {"message", "wait"}}))));
  ASSERT_TRUE(c->until("tool_call_start").is_object());
  const auto steer = command(*c, {{"type", "steer"}, {"id", 5}, {"message", "also the README"}});
  const auto follow = command(*c, {{"type", "follow_up"}, {"id", 6}, {"message", "then bye"}});
  const auto again = command(*c, {{"type", "prompt"}, {"id", 7}, {"message", "x"}});
  EXPECT_TRUE(is_ok(c->response(steer)));
  EXPECT_TRUE(is_ok(c->response(follow)));
  const json refused = c->response(again);
  EXPECT_FALSE(is_ok(refused)) << refused.dump();
  EXPECT_EQ(refused.value("id", 0), 7);
  result = c->until("result");
  EXPECT_EQ(result.value("answer", ""), "Followed.") << result.dump();
  const auto requests = server_->requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_NE(requests[requests.size() - 2].body.find("also the README"), std::string::npos);
  EXPECT_NE(requests.back().body.find("then bye"), std::string::npos);

  // An abort cuts a long call short; the session goes on.
  server_->push_turn(call_turn("c3", "sleep 60"));
  ASSERT_TRUE(
      is_ok(c->response(command(*c, {{"type", "prompt"}, {"id", 8}, {"message", "long"}}))));
  ASSERT_TRUE(c->until("tool_call_start").is_object());
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(is_ok(c->response(command(*c, {{"type", "abort"}, {"id", 9}}))));
  result = c->until("result");
  EXPECT_EQ(result.value("stop", ""), "cancelled") << result.dump();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_FALSE(is_ok(c->response(c->send({{"type", "abort"}, {"id", 10}})))) << "nothing runs";
  EXPECT_FALSE(is_ok(c->response(c->send({{"type", "steer"}, {"id", 11}, {"message", "m"}}))));

  // Another model from the next prompt on.
  const json bad_model =
      c->response(c->send({{"type", "set_model"}, {"id", 12}, {"model", "nosuch/model"}}));
  EXPECT_FALSE(is_ok(bad_model));
  EXPECT_NE(bad_model.value("error", "").find("nosuch"), std::string::npos) << bad_model.dump();
  EXPECT_TRUE(is_ok(
      c->response(command(*c, {{"type", "set_model"}, {"id", 13}, {"model", "mock/other"}}))));
  server_->push_turn(text_turn("Other model."));
  ASSERT_TRUE(is_ok(c->response(command(*c, {{"type", "prompt"}, {"id", 14}, {"message", "hi"}}))));
  result = c->until("result");
  EXPECT_EQ(result.value("answer", ""), "Other model.") << result.dump();
  EXPECT_EQ(json::parse(server_->requests().back().body).value("model", ""), "other");
  const json later = c->response(command(*c, {{"type", "get_state"}, {"id", 15}}));
  EXPECT_EQ(later["state"].value("model", ""), "mock/other");
  EXPECT_GE(later["state"]["totals"].value("answers", 0), 5) << later.dump();

  // The tree; a branch from before the last prompt; a compaction now.
  const json tree = c->response(command(*c, {{"type", "get_tree"}, {"id", 16}}));
  EXPECT_NE(tree.value("tree", "").find("user: hi"), std::string::npos) << tree.dump();
  EXPECT_NE(tree.value("tree", "").find("<- leaf"), std::string::npos) << tree.dump();
  const json forked = c->response(command(*c, {{"type", "fork"}, {"id", 17}}));
  ASSERT_TRUE(is_ok(forked)) << forked.dump();
  EXPECT_FALSE(is_ok(c->response(command(*c, {{"type", "fork"}, {"id", 18}, {"entry", "zz"}}))));
  // A long answer, then a short turn: the compaction summarises the long one away.
  server_->push_turn(text_turn("Long: " + std::string(8000, 'x')));
  server_->push_turn(text_turn("Short."));
  for (const char* p : {"write a lot", "say little"}) {
    ASSERT_TRUE(is_ok(c->response(c->send({{"type", "prompt"}, {"message", p}}))));
    ASSERT_EQ(c->until("result").value("stop", ""), "done");
  }
  const std::size_t before = server_->requests().size();
  server_->push_turn(text_turn("Summary of it all."));
  server_->push_turn(text_turn("Summary of the turn."));
  const json compacted = c->response(
      command(*c, {{"type", "compact"}, {"id", 19}, {"instructions", "keep the model"}}));
  ASSERT_TRUE(is_ok(compacted)) << compacted.dump() << err();
  EXPECT_GT(compacted.value("tokens_before", 0), compacted.value("tokens_after", 0))
      << compacted.dump();
  const auto requests_now = server_->requests();
  ASSERT_GT(requests_now.size(), before);
  EXPECT_NE(requests_now[before].body.find("keep the model"), std::string::npos);

  c->close_input();
  EXPECT_EQ(c->wait(60), 0) << err();
  check_events(*c);
  for (const auto& [type, table] : commands_.events) {
    EXPECT_TRUE(sent_.count(type)) << "the test sends every documented command: " << type;
    EXPECT_TRUE(succeeded_.count(type)) << type << " was never taken";
  }
  for (const char* type : {"response", "ask"}) EXPECT_TRUE(seen_.count(type)) << type;
}

// Bad lines: each refused, naming its line and what is accepted; none runs, and the lines
// after them are read as usual. The commands an unknown one is told are accepted are exactly
// the documented ones.
TEST_P(RpcTest, EveryBadLineIsRefusedNamingItsLineAndWhatWouldBeAccepted) {
  auto c = start_rpc();
  ASSERT_EQ(c->next().value("type", ""), "session") << err();
  struct Bad {
    std::string line, says;
  };
  const std::string huge =
      R"({"type":"prompt","id":30,"message":")" + std::string(agent::kMaxRpcLine, 'a') + "\"}";
  const std::vector<Bad> bad = {
      {"not json", "not JSON"},
      {R"({"type":"promt","id":31})", "unknown command \"promt\" (accepted: "},
      {R"({"type":"prompt","id":32})", "prompt needs \"message\""},
      {R"({"type":"prompt","id":33,"message":"x","extra":1})", "unknown field \"extra\""},
      {R"({"type":"prompt","id":34,"message":""})", "a non-empty string is accepted"},
      {R"({"type":"answer","id":35,"ask":"a","decision":"maybe"})",
       "(accepted: allow_once, allow_session, deny)"},
      {R"({"type":"get_state","id":[1]})", "a string or an integer is accepted"},
      {R"([1,2])", "not a JSON object"},
      {R"({"id":36})", "no \"type\" string"},
      {huge, "longer than 1048576 bytes"},
  };
  std::uint64_t line = 0;
  for (const auto& b : bad) {
    c->send_raw(b.line + "\n");
    ++line;
    const json r = c->response(line);
    ASSERT_TRUE(r.is_object()) << b.line.substr(0, 80) << err();
    EXPECT_FALSE(is_ok(r)) << r.dump();
    const std::string error = r.value("error", "");
    EXPECT_EQ(error.rfind("line " + std::to_string(line) + ": ", 0), 0u) << error;
    EXPECT_NE(error.find(b.says), std::string::npos) << error;
    // An overlong line is not parsed: its id is not known.
    const json sent =
        b.line.size() > agent::kMaxRpcLine ? json() : json::parse(b.line, nullptr, false);
    const json id =
        sent.is_object() && sent.contains("id") && !sent["id"].is_array() ? sent["id"] : json();
    EXPECT_EQ(r["id"], id) << "a refusal carries the line's id when it has a usable one";
    if (b.says.find("unknown command") == 0) {
      std::set<std::string> accepted, documented;
      std::stringstream list(between(error, '(', ')').substr(10));
      for (std::string name; std::getline(list, name, ',');)
        accepted.insert(name.substr(name.find_first_not_of(' ')));
      for (const auto& [type, table] : commands_.events) documented.insert(type);
      EXPECT_EQ(accepted, documented) << "moat takes exactly the commands docs/events.md lists";
    }
  }
  // The line after an overlong one is read as usual.
  EXPECT_TRUE(is_ok(c->response(c->send({{"type", "get_state"}, {"id", 37}}))));
  EXPECT_EQ(server_->request_count(), 0u) << "no bad line ran a prompt";
  // A last line without its LF is refused too.
  c->send_raw(R"({"type":"get_state","id":38})");
  c->close_input();
  const json last = c->response(line + 2);
  EXPECT_NE(last.value("error", "").find("without an LF"), std::string::npos) << last.dump();
  EXPECT_EQ(c->wait(60), 0) << err();
  check_events(*c);
}

INSTANTIATE_TEST_SUITE_P(EachApi, RpcTest,
                         ::testing::Values(Api::kOpenAiChat, Api::kAnthropic,
                                           Api::kOpenAiResponses),
                         [](const auto& info) { return testing::api_test_name(info.param); });

// The kilobytes of resident memory of `pid` and every process below it whose name is moat
// (the console and the loop; moatd bounds its own queue, docs/protocol.md).
long moat_rss_kb(pid_t pid) {
  long total = 0;
  std::vector<pid_t> todo = {pid};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    const std::string status = read_file("/proc/" + std::to_string(p) + "/status");
    if (status.find("Name:\tmoat\n") != std::string::npos)
      if (auto at = status.find("VmRSS:"); at != std::string::npos)
        total += std::atol(status.c_str() + at + 6);
    std::istringstream kids(
        read_file("/proc/" + std::to_string(p) + "/task/" + std::to_string(p) + "/children"));
    for (pid_t k; kids >> k;) todo.push_back(k);
  }
  return total;
}

class RpcBoundsTest : public MockedRun {
 protected:
  // The test holds the stream still for seconds: the provider must not time out meanwhile.
  void SetUp() override { start(Api::kOpenAiChat, "max_retries = 0\nidle_timeout_ms = 60000\n"); }
};

// A client that stops reading while the model streams a long answer (250,000 text_delta
// events, about 9 MB of lines) holds moat still: its memory stays where it was, and once the
// client reads again every event arrives, the whole answer in order.
TEST_F(RpcBoundsTest, AClientThatStopsReadingHoldsMoatStillAtABoundedSize) {
  const std::string text(1000000, 'x');
  server_->push_turn(text_turn(text));
  RpcClient c({moat_bin(), "run", "--rpc", "--model", "mock/any", "-C", ws_, "--sessions-dir",
               dir_.path() + "/sessions", "--audit-dir", dir_.path() + "/audit"},
              env(), dir_.path() + "/stderr");
  ASSERT_EQ(c.next().value("type", ""), "session") << read_file(dir_.path() + "/stderr");
  c.send({{"type", "prompt"}, {"id", 1}, {"message", "write a lot"}});
  ASSERT_TRUE(c.until("text_delta").is_object());
  // Not reading: moat fills the pipes, then waits.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const long before = moat_rss_kb(c.pid());
  long most = before;
  for (int i = 0; i < 15; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    most = std::max(most, moat_rss_kb(c.pid()));
  }
  std::printf(
      "moat's resident memory while the client did not read: %ld kB, then at most %ld kB "
      "(+%ld kB)\n",
      before, most, most - before);
  EXPECT_LT(most - before, 4096) << "moat grew while nobody read its events";
  const json result = c.until("result");
  ASSERT_TRUE(result.is_object()) << read_file(dir_.path() + "/stderr");
  EXPECT_EQ(result.value("answer", "").size(), text.size());
  std::size_t deltas = 0, streamed = 0;
  for (const auto& e : c.events())
    if (e.value("type", "") == "text_delta") {
      ++deltas;
      streamed += e.value("text", "").size();
    }
  EXPECT_EQ(streamed, text.size()) << deltas << " text_delta events";
  std::printf("%zu text_delta events, %zu bytes of text\n", deltas, streamed);
}

}  // namespace
}  // namespace moat::e2e

namespace moat::e2e {
namespace {

// The console checks the loop's events against a table of its own (agent/rpc_event_schema.h,
// issue 26 item 2): that table is docs/events.md's, row for row, so a field documented (or
// added) in one is in the other.
TEST(RpcEventSchema, TheConsolesTableIsTheDocumentsTables) {
  Schema docs;
  for (const char* section : {"event stream", "RPC events"})
    for (auto& [type, table] : read_schema(section).events) docs.events[type] = table;
  Schema code;
  const std::pair<unsigned, const char*> names[] = {
      {agent::kFieldString, "string"},   {agent::kFieldInteger, "integer"},
      {agent::kFieldNumber, "number"},   {agent::kFieldBoolean, "boolean"},
      {agent::kFieldObject, "object"},   {agent::kFieldArray, "array"},
      {agent::kFieldNull, "null"}};
  for (const agent::EventField& f : agent::documented_event_fields()) {
    Field& field = code.events[std::string(f.event)][std::string(f.field)];
    field.always = f.always;
    for (const auto& [bit, name] : names)
      if (f.types & bit) field.types.insert(name);
  }
  ASSERT_FALSE(docs.events.empty());
  for (const auto& [type, table] : docs.events) {
    SCOPED_TRACE(type);
    ASSERT_TRUE(code.events.count(type)) << "docs/events.md documents it; the table has not";
    for (const auto& [name, f] : table) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(code.events[type].count(name));
      EXPECT_EQ(code.events[type][name].types, f.types);
      EXPECT_EQ(code.events[type][name].always, f.always);
    }
    EXPECT_EQ(code.events[type].size(), table.size());
  }
  EXPECT_EQ(code.events.size(), docs.events.size());
}

}  // namespace
}  // namespace moat::e2e

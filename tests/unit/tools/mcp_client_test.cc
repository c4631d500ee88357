// tests/unit/tools/mcp_client_test.cc: the MCP client against tests/support/mcp_test_server,
// a real stdio server run as a child process (no sandbox), honest and hostile.
#include "tools/mcp_client.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "base/base64.h"
#include "base/sys.h"
#include "base/utf8.h"
#include "tools/truncate.h"

extern char** environ;

namespace moat::tools::mcp {
namespace {

using json = nlohmann::json;

std::string server_binary() {
  const char* build = std::getenv("MOAT_BUILD_ROOT");
  return std::string(build ? build : ".") + "/tests/unit/tools/mcp_test_server";
}

// The test server as a child with its stdin and stdout on pipes; killed and reaped at the end.
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> args) {
    auto in = sys::make_pipe();
    auto out = sys::make_pipe();
    EXPECT_TRUE(in && out);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in->first.get(), 0);
    posix_spawn_file_actions_adddup2(&fa, out->second.get(), 1);
    args.insert(args.begin(), server_binary());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    EXPECT_EQ(rc, 0) << argv[0];
    to_server = std::move(in->second);
    from_server = std::move(out->first);
  }
  ~ServerProcess() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  UniqueFd to_server, from_server;

 private:
  pid_t pid_ = -1;
};

class McpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(server_binary().c_str(), X_OK) != 0)
      GTEST_SKIP() << "no test server at " << server_binary() << " (set MOAT_BUILD_ROOT)";
  }
  // Starts the server with `args` and a client on it.
  Result<std::unique_ptr<Client>> connect(std::vector<std::string> args,
                                          ServerLimits limits = fast_limits()) {
    server_ = std::make_unique<ServerProcess>(std::move(args));
    return Client::start("testsrv", std::move(server_->to_server),
                         std::move(server_->from_server), limits, {});
  }
  std::unique_ptr<Client> connected(std::vector<std::string> args = {},
                                    ServerLimits limits = fast_limits()) {
    auto c = connect(std::move(args), limits);
    EXPECT_TRUE(c) << c.error().message();
    return c ? std::move(*c) : nullptr;
  }
  static ServerLimits fast_limits() {
    ServerLimits l;
    l.request_timeout = std::chrono::milliseconds(3000);
    return l;
  }
  static std::string text_of(const CallOutcome& o) {
    return o.content.empty() ? std::string() : o.content[0].text;
  }
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(McpClientTest, StartNegotiatesTheNewestVersionAndReadsTheServer) {
  auto c = connected();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->info().protocol_version, "2025-11-25");
  EXPECT_EQ(c->info().name, "mcp-test-server");
  EXPECT_EQ(c->info().version, "1.0.0");
  EXPECT_TRUE(c->info().tools_list_changed);
  EXPECT_FALSE(c->ended());
}

TEST_F(McpClientTest, AnOlderVersionWeSpeakIsAccepted) {
  auto c = connected({"normal", "--version=2024-11-05"});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->info().protocol_version, "2024-11-05");
}

TEST_F(McpClientTest, AnUnknownVersionIsRefusedNamingBoth) {
  auto c = connect({"normal", "--version=1999-01-01"});
  ASSERT_FALSE(c);
  const std::string m = c.error().message();
  EXPECT_NE(m.find("mcp server testsrv"), std::string::npos) << m;
  EXPECT_NE(m.find("'1999-01-01'"), std::string::npos) << m;
  EXPECT_NE(m.find("2025-11-25"), std::string::npos) << m;
}

TEST_F(McpClientTest, AServerRefusingInitializeIsToldTheRevisionsWeSpeak) {
  auto c = connect({"no-initialize"});
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message(),
            "mcp server testsrv: initialize failed: error -32601: 'Method not found'; moat speaks "
            "2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 (a server speaking only the stateless "
            "2026-07-28 has no initialize)");
}

TEST_F(McpClientTest, ListsEveryToolAcrossPages) {
  auto c = connected();
  ASSERT_TRUE(c);
  auto tools = c->list_tools({});
  ASSERT_TRUE(tools) << tools.error().message();
  ASSERT_EQ(tools->size(), 13u);  // 5 pages of 3
  EXPECT_EQ((*tools)[0].name, "echo");
  EXPECT_EQ((*tools)[12].name, "client_replies");
  const ToolInfo& add = (*tools)[1];
  EXPECT_EQ(add.input_schema["properties"]["a"]["type"], "number");
  EXPECT_EQ(add.output_schema["properties"]["sum"]["type"], "number");
  EXPECT_EQ(add.annotations.read_only, std::optional<bool>(true));
  EXPECT_EQ(add.annotations.destructive, std::nullopt);
  EXPECT_EQ((*tools)[10].annotations.destructive, std::optional<bool>(true));
}

TEST_F(McpClientTest, ListChangedIsSeenAndTheNextListHasTheNewTool) {
  auto c = connected();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->list_tools({}));
  EXPECT_FALSE(c->tools_changed());
  ASSERT_TRUE(c->call_tool("touch", json::object(), {}));
  EXPECT_TRUE(c->tools_changed());  // the notification precedes the answer on the stream
  auto tools = c->list_tools({});
  ASSERT_TRUE(tools);
  EXPECT_FALSE(c->tools_changed());
  EXPECT_EQ(tools->back().name, "late");
}

TEST_F(McpClientTest, CallReturnsText) {
  auto c = connected();
  ASSERT_TRUE(c);
  auto r = c->call_tool("echo", {{"text", "hello"}}, {});
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_FALSE(r->is_error);
  EXPECT_EQ(text_of(*r), "hello");
  EXPECT_GT(r->bytes, 0u);
}

TEST_F(McpClientTest, CallReturnsAnImage) {
  auto c = connected();
  ASSERT_TRUE(c);
  auto r = c->call_tool("image", json::object(), {});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->content.size(), 1u);
  EXPECT_EQ(r->content[0].kind, Content::Kind::kImage);
  EXPECT_EQ(r->content[0].mime_type, "image/png");
  EXPECT_EQ(r->content[0].data.rfind("iVBORw0KGgo", 0), 0u);
  const ToolResult tr = to_tool_result(*r);
  EXPECT_EQ(tr.content[0]["type"], "image");
  EXPECT_EQ(tr.content[0]["mimeType"], "image/png");
}

// A server's image reaches the model only as a provider takes it: canonical base64, PNG, JPEG,
// GIF or WebP bytes (typed by their signature, not by the server's mimeType), at most
// kMaxImageBytes; anything else becomes a text line naming it.
TEST(McpToToolResult, AnImageIsTypedByItsBytesAndABadOrHugeOneBecomesALine) {
  const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + std::string(24, '\0');
  auto image = [](std::string mime, std::string data) {
    return Content{Content::Kind::kImage, "", std::move(mime), std::move(data)};
  };
  CallOutcome out;
  out.content = {image("image/jpeg", base64_encode(png)),                  // lies about its type
                 image("image/png", base64_encode(png).substr(0, 42)),     // not canonical
                 image("image/png", base64_encode("<svg/>")),              // not a format we pass
                 image("image/png", base64_encode(png + std::string(kMaxImageBytes, 'x'))),
                 image("image/\x1b[2J", "!!")};
  const ToolResult r = to_tool_result(out);
  ASSERT_EQ(r.content.size(), 5u);
  EXPECT_EQ(r.content[0], json({{"type", "image"}, {"mimeType", "image/png"},
                                {"data", base64_encode(png)}}));
  EXPECT_EQ(r.content[1]["text"], "[image image/png, 31 bytes, not shown: not valid base64]");
  EXPECT_EQ(r.content[2]["text"],
            "[image image/png, 6 bytes, not shown: not PNG, JPEG, GIF or WebP]");
  EXPECT_EQ(r.content[3]["text"],
            "[image image/png, " + std::to_string(png.size() + kMaxImageBytes) +
                " bytes, not shown: over the " + format_size(kMaxImageBytes) +
                " limit of one image]");
  EXPECT_EQ(r.content[4]["text"], "[image image/\\x1b[2J, 0 bytes, not shown: not valid base64]");
}

TEST_F(McpClientTest, CallReturnsStructuredContent) {
  auto c = connected();
  ASSERT_TRUE(c);
  auto r = c->call_tool("add", {{"a", 2}, {"b", 3.5}}, {});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->structured["sum"], 5.5);
  const ToolResult tr = to_tool_result(*r);
  EXPECT_EQ(tr.details["structuredContent"]["sum"], 5.5);
  EXPECT_EQ(tr.content[0]["text"], "5.5");
}

TEST_F(McpClientTest, AToolErrorIsAnOutcomeNotAProtocolError) {
  auto c = connected();
  ASSERT_TRUE(c);
  auto r = c->call_tool("fail", json::object(), {});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->is_error);
  EXPECT_TRUE(to_tool_result(*r).is_error);
  auto unknown = c->call_tool("nope", json::object(), {});
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message().find("tools/call failed: error -32602"), std::string::npos)
      << unknown.error().message();
}

TEST_F(McpClientTest, ProgressReachesTheCallback) {
  auto c = connected();
  ASSERT_TRUE(c);
  std::vector<Progress> seen;
  auto r = c->call_tool("slow", {{"steps", 3}}, {}, [&](const Progress& p) { seen.push_back(p); });
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(text_of(*r), "done");
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[2].progress, 3);
  EXPECT_EQ(seen[2].total, std::optional<double>(3));
  EXPECT_EQ(seen[2].message, "step 3");
}

TEST_F(McpClientTest, AStopCancelsTheCallAndTheServerSeesNotificationsCancelled) {
  auto c = connected();
  ASSERT_TRUE(c);
  std::stop_source stop;
  std::atomic<int> progress{0};
  std::thread canceller([&] {
    while (progress.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stop.request_stop();
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto r = c->call_tool("slow", {{"steps", 1000}}, stop.get_token(),
                        [&](const Progress&) { ++progress; });
  canceller.join();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("mcp server testsrv: tools/call: cancelled"), std::string::npos)
      << r.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  auto seen = c->call_tool("cancelled", json::object(), {});
  ASSERT_TRUE(seen);
  const json ids = json::parse(text_of(*seen));
  ASSERT_EQ(ids.size(), 1u) << text_of(*seen);  // the slow call's id; the server stopped it
  EXPECT_TRUE(c->ping({}));
}

TEST_F(McpClientTest, PingIsAnswered) {
  auto c = connected();
  ASSERT_TRUE(c);
  auto p = c->ping({});
  EXPECT_TRUE(p) << p.error().message();
}

TEST_F(McpClientTest, ASilentServerTimesOutNamingItself) {
  ServerLimits l;
  l.request_timeout = std::chrono::milliseconds(150);
  auto c = connect({"silent"}, l);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message(), "mcp server testsrv: initialize: no answer within 150 ms");
}

TEST_F(McpClientTest, AFrameOverTheBoundEndsTheConnection) {
  ServerLimits l = fast_limits();
  l.max_frame_bytes = 1 << 20;
  auto c = connected({}, l);
  ASSERT_TRUE(c);
  auto r = c->call_tool("big", json::object(), {});  // 100 MB on one line
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("mcp server testsrv: sent a message over 1048576 bytes (max_frame_bytes)"),
            std::string::npos)
      << r.error().message();
  ASSERT_TRUE(c->ended());
  EXPECT_FALSE(c->ping({}));  // the connection stays ended
}

TEST_F(McpClientTest, JsonNestedPastTheBoundIsRefusedBeforeParsing) {
  auto c = connected();
  ASSERT_TRUE(c);
  auto r = c->call_tool("deep", json::object(), {});  // 65536 levels
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("nested deeper than 64 levels (max_depth)"), std::string::npos)
      << r.error().message();
}

TEST_F(McpClientTest, JsonNestedWithinTheBoundIsAccepted) {
  auto c = connected();
  ASSERT_TRUE(c);
  auto r = c->call_tool("deep", {{"depth", 60}}, {});  // + 3 levels of envelope: 63
  EXPECT_TRUE(r) << r.error().message();
}

TEST_F(McpClientTest, AResultOverTheBoundIsRefusedNamingItsSize) {
  ServerLimits l = fast_limits();
  l.max_result_bytes = 100000;
  auto c = connected({}, l);
  ASSERT_TRUE(c);
  auto r = c->call_tool("big", {{"bytes", 200000}}, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("mcp server testsrv: tools/call 'big': result of 2000"),
            std::string::npos)
      << r.error().message();
  EXPECT_NE(r.error().message().find("over 100000 (max_result_bytes)"), std::string::npos);
  EXPECT_FALSE(c->ended());  // only that call failed
  EXPECT_TRUE(c->call_tool("big", {{"bytes", 1000}}, {}));
}

TEST_F(McpClientTest, MoreToolsThanTheBoundAreRefused) {
  auto c = connected({"many-tools"});
  ASSERT_TRUE(c);
  auto tools = c->list_tools({});
  ASSERT_FALSE(tools);
  EXPECT_EQ(tools.error().message(), "mcp server testsrv: offers more than 256 tools (max_tools)");
}

TEST_F(McpClientTest, EndlessPagesAreRefused) {
  auto c = connected({"endless-pages"});
  ASSERT_TRUE(c);
  auto tools = c->list_tools({});
  ASSERT_FALSE(tools);
  EXPECT_EQ(tools.error().message(), "mcp server testsrv: tools/list: more than 256 pages");
}

TEST_F(McpClientTest, DescriptionsAreCutAtTheBoundWithEscapesMadeVisible) {
  auto c = connected({"escapes"});
  ASSERT_TRUE(c);
  auto tools = c->list_tools({});
  ASSERT_TRUE(tools) << tools.error().message();
  const std::string& d = (*tools)[0].description;
  EXPECT_LE(d.size(), 4096u);
  EXPECT_GT(d.size(), 4000u);
  for (const char ch : d) {
    const auto b = static_cast<unsigned char>(ch);
    EXPECT_FALSE(b < 0x20 || b == 0x7f) << "control byte " << int(b);
  }
  EXPECT_EQ(d.find("\xc2\x9b"), std::string::npos);  // C1 CSI
  EXPECT_NE(d.find("\\x1b[2J"), std::string::npos);
  EXPECT_NE(d.find("\xe2\x9c\x93"), std::string::npos);  // ordinary UTF-8 kept
  EXPECT_TRUE(moat::is_utf8(d));
  EXPECT_LE((*tools)[0].title.size(), 4096u);
}

TEST_F(McpClientTest, ALineThatIsNotJsonEndsTheConnectionNamingTheServer) {
  auto c = connected({"garbage"});
  ASSERT_TRUE(c);
  auto p = c->ping({});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().message(),
            "mcp server testsrv: sent a line that is not a JSON-RPC message: "
            "'this is not json \\x1b[31m{'");
}

TEST_F(McpClientTest, AFloodOfMessagesEndsTheConnection) {
  auto c = connected({"flood"});
  ASSERT_TRUE(c);
  auto p = c->ping({});
  for (int i = 0; i < 200 && !c->ended(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(c->ended());
  EXPECT_EQ(c->ended()->message(),
            "mcp server testsrv: sent more than 2000 messages in a second (max_messages_per_second)");
}

TEST_F(McpClientTest, TheServersRequestsForUndeclaredFeaturesGetAnError) {
  auto c = connected({"normal", "--ask-client"});
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->ping({}));  // our answers were written before the ping's
  auto r = c->call_tool("client_replies", json::object(), {});
  ASSERT_TRUE(r);
  const json replies = json::parse(text_of(*r));
  ASSERT_EQ(replies.size(), 4u) << replies.dump();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(replies[i]["error"]["code"], -32601) << replies[i].dump();
  EXPECT_EQ(replies[3]["id"], 1003);
  EXPECT_TRUE(replies[3]["result"].is_object());  // ping
}

TEST_F(McpClientTest, TheReaderEndsOnEofAndTheWaitingCallFails) {
  auto c = connected({"exit-on-call"});
  ASSERT_TRUE(c);
  auto r = c->call_tool("echo", {{"text", "x"}}, {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "mcp server testsrv: closed its stdout (the server ended)");
  ASSERT_TRUE(c->ended());
  c->close();  // joins the reader, which has already returned
}

TEST_F(McpClientTest, CloseWhileACallWaitsFailsItAndJoins) {
  auto c = connected();
  ASSERT_TRUE(c);
  std::thread closer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    c->close();
  });
  auto r = c->call_tool("slow", {{"steps", 1000}}, {});
  closer.join();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("mcp server testsrv:"), std::string::npos);
}

}  // namespace
}  // namespace moat::tools::mcp

// tests/unit/tools/mcp_http_test.cc: the MCP client over its Streamable HTTP transport
// (tools/mcp_http.h) against a small real HTTP server in this process (cpp-httplib on
// 127.0.0.1): a JSON answer, an event-stream answer, the session id sent back, an oversize
// message refused, a lost session's 404, and the session's DELETE at close.
#include "tools/mcp_http.h"

#include <gtest/gtest.h>

#if __has_include(<httplib.h>)
#include <httplib.h>
#define MOAT_HAVE_HTTPLIB 1
#endif

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace moat::tools::mcp {
namespace {

using json = nlohmann::json;

#ifdef MOAT_HAVE_HTTPLIB

// A Streamable HTTP MCP server with one tool, `echo`, answering in JSON or as an event stream,
// recording the session and protocol headers each request carried.
class HttpServer {
 public:
  bool sse = false;              // answer requests with an event stream
  std::size_t pad = 0;           // bytes of padding in echo's answer
  std::atomic<bool> forget{false};  // the session is gone: 404 to requests carrying its id
  std::mutex mu;
  std::vector<std::string> session_ids;  // Mcp-Session-Id of each POST after initialize
  std::vector<std::string> versions;     // MCP-Protocol-Version of the same
  std::vector<std::string> deleted;      // the ids DELETEd

  HttpServer() {
    server_.Post("/mcp", [this](const httplib::Request& req, httplib::Response& res) {
      on_post(req, res);
    });
    server_.Get("/mcp", [](const httplib::Request&, httplib::Response& res) { res.status = 405; });
    server_.Delete("/mcp", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu);
      deleted.push_back(req.get_header_value("Mcp-Session-Id"));
      res.status = 200;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~HttpServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }

 private:
  void on_post(const httplib::Request& req, httplib::Response& res) {
    const json m = json::parse(req.body, nullptr, false);
    const std::string method = m.value("method", "");
    if (method != "initialize") {
      std::lock_guard<std::mutex> lock(mu);
      session_ids.push_back(req.get_header_value("Mcp-Session-Id"));
      versions.push_back(req.get_header_value("MCP-Protocol-Version"));
    }
    if (forget && req.has_header("Mcp-Session-Id")) {
      res.status = 404;
      return;
    }
    if (!m.contains("id")) {  // a notification
      res.status = 202;
      return;
    }
    json result = json::object();
    if (method == "initialize") {
      result = {{"protocolVersion", "2025-11-25"},
                {"capabilities", {{"tools", json::object()}}},
                {"serverInfo", {{"name", "http-test"}, {"version", "1"}}}};
      res.set_header("Mcp-Session-Id", "session-7");
    } else if (method == "tools/list") {
      result = {{"tools", {{{"name", "echo"}, {"inputSchema", {{"type", "object"}}}}}}};
    } else if (method == "tools/call") {
      const std::string text = m["params"]["arguments"].value("text", "") + std::string(pad, '.');
      result = {{"content", {{{"type", "text"}, {"text", text}}}}};
    }
    const json answer = {{"jsonrpc", "2.0"}, {"id", m["id"]}, {"result", result}};
    if (!sse) {
      res.set_content(answer.dump(), "application/json");
      return;
    }
    // A progress notification first, as a server streaming a long call sends it.
    json progress = {{"jsonrpc", "2.0"},
                     {"method", "notifications/progress"},
                     {"params", {{"progressToken", m["id"]}, {"progress", 1}, {"total", 2}}}};
    res.set_content("event: message\ndata: " + progress.dump() + "\n\nevent: message\ndata: " +
                        answer.dump() + "\n\n",
                    "text/event-stream");
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

Result<std::unique_ptr<Client>> connect(const HttpServer& server, ServerLimits limits = {}) {
  HttpOptions o;
  o.url = server.url();
  o.kind = HttpKind::kStreamable;
  limits.request_timeout = std::chrono::milliseconds(5000);
  MOAT_ASSIGN_OR_RETURN(auto transport, http_transport("web", std::move(o), limits));
  return Client::start("web", std::move(transport), limits, {});
}

TEST(McpHttpTest, AJsonAnswerCarriesTheToolsAndTheResult) {
  HttpServer server;
  auto client = connect(server);
  ASSERT_TRUE(client) << client.error().message();
  EXPECT_EQ((*client)->info().name, "http-test");
  auto tools = (*client)->list_tools({});
  ASSERT_TRUE(tools) << tools.error().message();
  ASSERT_EQ(tools->size(), 1u);
  EXPECT_EQ((*tools)[0].name, "echo");
  auto r = (*client)->call_tool("echo", {{"text", "over http"}}, {});
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->content.size(), 1u);
  EXPECT_EQ(r->content[0].text, "over http");
}

TEST(McpHttpTest, AnEventStreamAnswerDeliversProgressThenTheResult) {
  HttpServer server;
  server.sse = true;
  auto client = connect(server);
  ASSERT_TRUE(client) << client.error().message();
  std::vector<double> progress;
  auto r = (*client)->call_tool("echo", {{"text", "streamed"}}, {},
                                [&](const Progress& p) { progress.push_back(p.progress); });
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->content.size(), 1u);
  EXPECT_EQ(r->content[0].text, "streamed");
  EXPECT_EQ(progress, std::vector<double>{1});
}

TEST(McpHttpTest, TheSessionIdAndVersionGoBackOnEveryRequestAndCloseDeletesIt) {
  HttpServer server;
  {
    auto client = connect(server);
    ASSERT_TRUE(client) << client.error().message();
    ASSERT_TRUE((*client)->call_tool("echo", {{"text", "x"}}, {}));
  }
  std::lock_guard<std::mutex> lock(server.mu);
  ASSERT_GE(server.session_ids.size(), 2u);  // notifications/initialized, tools/call
  for (std::size_t i = 0; i < server.session_ids.size(); ++i) {
    EXPECT_EQ(server.session_ids[i], "session-7") << i;
    EXPECT_EQ(server.versions[i], "2025-11-25") << i;
  }
  EXPECT_EQ(server.deleted, std::vector<std::string>{"session-7"});
}

TEST(McpHttpTest, AMessageOverTheFrameBoundEndsTheConnection) {
  for (bool sse : {false, true}) {
    HttpServer server;
    server.sse = sse;
    ServerLimits limits;
    limits.max_frame_bytes = 4096;
    auto client = connect(server, limits);
    ASSERT_TRUE(client) << client.error().message();
    server.pad = 8192;
    auto r = (*client)->call_tool("echo", {{"text", "big"}}, {});
    ASSERT_FALSE(r) << "sse " << sse;
    EXPECT_NE(r.error().message().find("mcp server web: sent a message over 4096 bytes"),
              std::string::npos)
        << r.error().message();
    EXPECT_TRUE((*client)->ended());
  }
}

TEST(McpHttpTest, A404ToTheSessionEndsTheConnectionNamingIt) {
  HttpServer server;
  auto client = connect(server);
  ASSERT_TRUE(client) << client.error().message();
  server.forget = true;
  auto r = (*client)->call_tool("echo", {{"text", "x"}}, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("mcp server web: answered HTTP 404 to a request in its "
                                     "session (Mcp-Session-Id): the session ended"),
            std::string::npos)
      << r.error().message();
  // The reader ends the connection as the error reaches the caller: wait for it (bounded).
  for (int i = 0; i < 1000 && !(*client)->ended(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE((*client)->ended());
}

TEST(McpHttpTest, AUrlThatIsNotHttpIsRefused) {
  HttpOptions o;
  o.url = "file:///etc/passwd";
  auto t = http_transport("web", o, {});
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message(),
            "mcp server web: url file:///etc/passwd is not an http:// or https:// URL");
}

#else

TEST(McpHttpTest, NeedsCppHttplib) { GTEST_SKIP() << "cpp-httplib is not installed"; }

#endif

}  // namespace
}  // namespace moat::tools::mcp

// tests/unit/sandbox/protocol_test.cc: each message's encoder and decoder (a round trip per
// message, a refusal per validation rule), the frame decoders' dispatch, and the shared
// frame reader. The framing itself is tested in tests/unit/supervisor/protocol_test.cc.
#include "sandbox/protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "base/unique_fd.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

// The message `m` decodes to, as what the receiving side gets; a test failure otherwise.
template <typename Msg, typename Frame>
Msg decoded(const Result<Frame>& frame) {
  EXPECT_TRUE(frame.has_value()) << frame.error().message();
  if (!frame) return Msg{};
  EXPECT_TRUE(std::holds_alternative<Msg>(*frame));
  return std::holds_alternative<Msg>(*frame) ? std::get<Msg>(*frame) : Msg{};
}

// What read_server_frame read, expected to be a frame of type Msg.
template <typename Msg>
Msg read_as(FrameReader& reader) {
  auto frame = read_server_frame(reader);
  EXPECT_TRUE(frame.has_value()) << frame.error().message();
  EXPECT_TRUE(frame && frame->has_value()) << "the connection closed";
  if (!frame || !frame->has_value()) return Msg{};
  return decoded<Msg>(Result<ServerFrame>(**frame));
}

template <typename Msg>
Msg client_round_trip(const Msg& m) {
  return decoded<Msg>(decode_client_frame(m.to_json()));
}

template <typename Msg>
Msg server_round_trip(const Msg& m) {
  return decoded<Msg>(decode_server_frame(m.to_json()));
}

// The error decoding `m` gives; "" (and a test failure) when it decodes.
std::string client_refusal(const json& m, std::size_t payload_bytes = 0) {
  auto r = decode_client_frame(m, payload_bytes);
  EXPECT_FALSE(r.has_value()) << m.dump();
  return r ? "" : r.error().message();
}

std::string server_refusal(const json& m) {
  auto r = decode_server_frame(m);
  EXPECT_FALSE(r.has_value()) << m.dump();
  return r ? "" : r.error().message();
}

json call_frame(json arguments, std::string id = "c1", std::string tool = "bash") {
  return {{"type", "call"}, {"id", id}, {"tool", tool}, {"arguments", std::move(arguments)}};
}

// --- Client -> moatd -------------------------------------------------------------------

TEST(HelloMsg, RoundTripsEveryField) {
  const HelloMsg h = client_round_trip(
      HelloMsg{1, "/w/é", false, "moat/1.0", NetworkRequest::kAsPolicyGrants, {}});
  EXPECT_EQ(h.version, 1);
  EXPECT_EQ(h.workspace, "/w/é");
  EXPECT_FALSE(h.headless);
  EXPECT_EQ(h.client, "moat/1.0");
}

TEST(HelloMsg, OptionalFieldsTakeTheirDefaults) {
  const HelloMsg h = decoded<HelloMsg>(
      decode_client_frame({{"type", "hello"}, {"version", 7}, {"workspace", "/"}}));
  EXPECT_EQ(h.version, 7);
  EXPECT_TRUE(h.headless);
  EXPECT_EQ(h.client, "");
  // A headless that is not a boolean counts as absent, as moatd always treated it.
  const HelloMsg odd = decoded<HelloMsg>(decode_client_frame(
      {{"type", "hello"}, {"version", 1}, {"workspace", "/"}, {"headless", "no"}}));
  EXPECT_TRUE(odd.headless);
}

TEST(HelloMsg, NetworkAndBindsRoundTripAndDefaultToThePolicysAndNone) {
  HelloMsg m{1,
             "/w",
             true,
             "moat/1.0",
             NetworkRequest::kOff,
             {{"/data/in", "/in", false}, {"/tmp/cache", "/tmp/cache", true}}};
  const HelloMsg h = client_round_trip(m);
  EXPECT_EQ(h.network, NetworkRequest::kOff);
  EXPECT_EQ(h.binds, m.binds);
  m.network = NetworkRequest::kOn;
  EXPECT_EQ(client_round_trip(m).network, NetworkRequest::kOn);
  const HelloMsg plain = decoded<HelloMsg>(
      decode_client_frame({{"type", "hello"}, {"version", 1}, {"workspace", "/w"}}));
  EXPECT_EQ(plain.network, NetworkRequest::kAsPolicyGrants);
  EXPECT_TRUE(plain.binds.empty());
}

// Every path of hello.binds is text moatd walks: absolute, normalised, bounded; and the list is
// bounded.
TEST(HelloMsg, RefusesBindsThatAreNotNormalisedAbsolutePathsOrTooMany) {
  auto hello_with = [](json binds) {
    return json{{"type", "hello"}, {"version", 1}, {"workspace", "/w"}, {"binds", binds}};
  };
  auto bind = [](std::string s, std::string t) { return json{{"source", s}, {"target", t}}; };
  for (const std::string bad : {"rel/a", "/a/../b", "/a/./b", "/a//b", "/a/", "/", ""}) {
    EXPECT_NE(client_refusal(hello_with({bind(bad, "/t")})).find("'source' must be an absolute"),
              std::string::npos)
        << bad;
    EXPECT_NE(client_refusal(hello_with({bind("/s", bad)})).find("'target' must be an absolute"),
              std::string::npos)
        << bad;
  }
  EXPECT_NE(client_refusal(hello_with({bind(std::string("/a\0b", 4), "/t")})).find("NUL"),
            std::string::npos);
  EXPECT_NE(client_refusal(hello_with({bind("/" + std::string(kMaxPathBytes, 'a'), "/t")}))
                .find("4097 bytes long; the limit is 4096"),
            std::string::npos);
  EXPECT_NE(client_refusal(hello_with(std::vector<json>(kMaxBinds + 1, bind("/s", "/t"))))
                .find("the limit is 32"),
            std::string::npos);
  EXPECT_NE(client_refusal(hello_with({json{{"source", "/s"}}})).find("'target'"),
            std::string::npos);
  EXPECT_NE(client_refusal(hello_with({json{{"source", "/s"}, {"target", "/t"}, {"writable", 1}}}))
                .find("'writable' must be a boolean"),
            std::string::npos);
  EXPECT_NE(client_refusal(hello_with({"/s"})).find("must hold objects"), std::string::npos);
  EXPECT_EQ(
      client_refusal({{"type", "hello"}, {"version", 1}, {"workspace", "/w"}, {"network", "yes"}}),
      "'hello' frame field 'network' must be a boolean");
}

// hello.env (the person's variables for the MCP servers): round-trips, and each broken entry
// is refused naming the field and the variable.
TEST(HelloMsg, EnvRoundTripsAndIsRefusedNamingTheBrokenVariable) {
  HelloMsg m{1, "/w", true, "moat/1.0", NetworkRequest::kAsPolicyGrants, {}};
  m.env = {{"GITHUB_TOKEN", "ghp_x"}, {"EMPTY", ""}};
  EXPECT_EQ(client_round_trip(m).env, m.env);
  EXPECT_FALSE(HelloMsg{}.to_json().contains("env"));  // absent when empty
  auto hello_with = [](json env) {
    return json{{"type", "hello"}, {"version", 1}, {"workspace", "/w"}, {"env", env}};
  };
  EXPECT_EQ(client_refusal(hello_with(json::array())),
            "'hello' frame field 'env' must be an object of at most 64 variables");
  json many = json::object();
  for (std::size_t i = 0; i <= kMaxExecEnv; ++i) many["V" + std::to_string(i)] = "x";
  EXPECT_EQ(client_refusal(hello_with(many)),
            "'hello' frame field 'env' must be an object of at most 64 variables");
  EXPECT_EQ(client_refusal(hello_with({{"1BAD", "x"}})),
            "'hello' frame field 'env': \"1BAD\" is not a variable name ([A-Za-z_][A-Za-z0-9_]*, "
            "at most 128 bytes)");
  EXPECT_NE(client_refusal(hello_with({{"A=B", "x"}})).find("\"A=B\" is not a variable name"),
            std::string::npos);
  EXPECT_EQ(client_refusal(hello_with({{"TOKEN", 3}})),
            "'hello' frame field 'env': the value of TOKEN must be a string");
  EXPECT_EQ(client_refusal(hello_with({{"TOKEN", std::string("a\0b", 3)}})),
            "'hello' frame field 'env': the value of TOKEN holds a NUL byte");
  EXPECT_EQ(client_refusal(hello_with({{"BIG", std::string(kMaxHelloEnvBytes, 'x')}})),
            "'hello' frame field 'env': names and values come to more than 32768 bytes");
  // The largest env the bounds allow fits in the hello frame bound, escaped.
  EXPECT_GE(kMaxHelloFrameBytes, kMaxHelloEnvBytes * 6);
}

TEST(HelloMsg, RefusesEachBrokenField) {
  EXPECT_EQ(client_refusal({{"type", "hello"}, {"workspace", "/"}}),
            "'hello' frame is missing the field 'version' (an integer)");
  EXPECT_EQ(client_refusal({{"type", "hello"}, {"version", 1.5}, {"workspace", "/"}}),
            "'hello' frame field 'version' must be an integer");
  EXPECT_EQ(client_refusal({{"type", "hello"}, {"version", 1}}),
            "'hello' frame is missing the field 'workspace' (a string)");
  EXPECT_EQ(client_refusal({{"type", "hello"}, {"version", 1}, {"workspace", 3}}),
            "'hello' frame field 'workspace' must be a string");
  EXPECT_EQ(client_refusal({{"type", "hello"},
                            {"version", 1},
                            {"workspace", "/" + std::string(kMaxPathBytes, 'a')}}),
            "'hello' frame field 'workspace' is 4097 bytes long; the limit is 4096");
  EXPECT_EQ(client_refusal({{"type", "hello"},
                            {"version", 1},
                            {"workspace", "/"},
                            {"client", std::string(kMaxToolNameBytes + 1, 'c')}}),
            "'hello' frame field 'client' is 129 bytes long; the limit is 128");
  EXPECT_EQ(
      client_refusal({{"type", "hello"}, {"version", 1}, {"workspace", std::string("/w\0x", 4)}}),
      "'hello' frame field 'workspace' holds a NUL byte");
}

TEST(HelloMsg, TypedExecRoundTripsDefaultsToFalseAndMustBeABoolean) {
  HelloMsg m;
  m.workspace = "/w";
  EXPECT_FALSE(client_round_trip(m).typed_exec);
  EXPECT_FALSE(m.to_json().contains("typed_exec"));  // only sent when asked
  m.typed_exec = true;
  EXPECT_TRUE(client_round_trip(m).typed_exec);
  EXPECT_EQ(client_refusal(
                {{"type", "hello"}, {"version", 1}, {"workspace", "/"}, {"typed_exec", 1}}),
            "'hello' frame field 'typed_exec' must be a boolean");
}

TEST(CallMsg, RoundTripsEveryField) {
  const CallMsg c = client_round_trip(CallMsg{"c9", "read", {{"path", "a.txt"}, {"limit", 3}}});
  EXPECT_EQ(c.id, "c9");
  EXPECT_EQ(c.tool, "read");
  EXPECT_EQ(c.arguments, json({{"path", "a.txt"}, {"limit", 3}}));
}

TEST(CallMsg, RefusesEachBrokenField) {
  EXPECT_EQ(client_refusal({{"type", "call"}, {"tool", "bash"}, {"arguments", json::object()}}),
            "'call' frame is missing the field 'id' (a string)");
  EXPECT_EQ(client_refusal({{"type", "call"}, {"id", "a"}, {"arguments", json::object()}}),
            "'call' frame is missing the field 'tool' (a string)");
  EXPECT_EQ(client_refusal({{"type", "call"}, {"id", "a"}, {"tool", "t"}, {"arguments", "x"}}),
            "'call' frame field 'arguments' must be an object");
  EXPECT_EQ(client_refusal(call_frame(json::object(), "")),
            "'call' frame field 'id' must be 1 to 128 characters");
  EXPECT_EQ(client_refusal(call_frame(json::object(), std::string(kMaxCallIdBytes + 1, 'i'))),
            "'call' frame field 'id' must be 1 to 128 characters");
  EXPECT_EQ(
      client_refusal(call_frame(json::object(), "a", std::string(kMaxToolNameBytes + 1, 't'))),
      "'call' frame field 'tool' is 129 bytes long; the limit is 128");
  EXPECT_EQ(client_refusal(call_frame({{"path", std::string(kMaxPathBytes + 1, 'p')}})),
            "'call' frame's arguments field 'path' is 4097 bytes long; the limit is 4096");
  EXPECT_EQ(client_refusal(call_frame({{"command", std::string(kMaxCommandBytes + 1, 'x')}})),
            "'call' frame's arguments field 'command' is 131073 bytes long; the limit is 131072");
}

TEST(CallMsg, AcceptsEveryFieldAtItsBound) {
  const CallMsg c = decoded<CallMsg>(decode_client_frame(call_frame(
      {{"command", std::string(kMaxCommandBytes, 'x')}, {"path", std::string(kMaxPathBytes, 'p')}},
      std::string(kMaxCallIdBytes, 'i'), std::string(kMaxToolNameBytes, 't'))));
  EXPECT_EQ(c.arguments["command"].get<std::string>().size(), kMaxCommandBytes);
}

TEST(CancelMsg, RoundTripsAndRefusesABrokenId) {
  EXPECT_EQ(client_round_trip(CancelMsg{"c3"}).id, "c3");
  EXPECT_EQ(client_refusal({{"type", "cancel"}}),
            "'cancel' frame is missing the field 'id' (a string)");
  EXPECT_EQ(client_refusal({{"type", "cancel"}, {"id", 4}}),
            "'cancel' frame field 'id' must be a string");
  EXPECT_EQ(client_refusal({{"type", "cancel"}, {"id", std::string(kMaxCallIdBytes + 1, 'i')}}),
            "'cancel' frame field 'id' is 129 bytes long; the limit is 128");
}

TEST(AnswerMsg, RoundTripsEachDecisionAndScope) {
  for (bool allow : {false, true}) {
    for (bool session : {false, true}) {
      const AnswerMsg a = client_round_trip(AnswerMsg{"k1", allow, session});
      EXPECT_EQ(a.ask, "k1");
      EXPECT_EQ(a.allow, allow);
      EXPECT_EQ(a.for_session, session);
    }
  }
  const AnswerMsg once = decoded<AnswerMsg>(
      decode_client_frame({{"type", "answer"}, {"ask", "k"}, {"decision", "allow"}}));
  EXPECT_TRUE(once.allow);
  EXPECT_FALSE(once.for_session) << "a missing scope is once";
}

TEST(AnswerMsg, RefusesEachBrokenField) {
  const json ok = {{"type", "answer"}, {"ask", "k"}, {"decision", "deny"}};
  EXPECT_EQ(client_refusal(ok, kMaxAnswerBytes + 1),
            "'answer' frame of 4097 bytes exceeds the 4096-byte limit");
  EXPECT_EQ(client_refusal({{"type", "answer"}, {"decision", "deny"}}),
            "'answer' frame is missing the field 'ask' (a string)");
  EXPECT_EQ(client_refusal({{"type", "answer"}, {"ask", "k"}}),
            "'answer' frame is missing the field 'decision' (a string)");
  EXPECT_EQ(client_refusal({{"type", "answer"},
                            {"ask", std::string(kMaxAskIdBytes + 1, 'k')},
                            {"decision", "allow"}}),
            "'answer' frame field 'ask' is 65 bytes long; the limit is 64");
  EXPECT_EQ(client_refusal({{"type", "answer"}, {"ask", "k"}, {"decision", "maybe"}}),
            "'answer' frame field 'decision' must be \"allow\" or \"deny\"");
  EXPECT_EQ(client_refusal(
                {{"type", "answer"}, {"ask", "k"}, {"decision", "allow"}, {"scope", "forever"}}),
            "'answer' frame field 'scope' must be \"once\" or \"session\"");
  EXPECT_EQ(client_refusal({{"type", "answer"}, {"ask", "k"}, {"decision", "allow"}, {"scope", 1}}),
            "'answer' frame field 'scope' must be \"once\" or \"session\"");
}

TEST(ByeMsg, RoundTripsBothWays) {
  (void)client_round_trip(ByeMsg{});
  (void)server_round_trip(ByeMsg{});
  EXPECT_EQ(ByeMsg{}.to_json(), json({{"type", "bye"}}));
}

TEST(ConsoleMsg, RoundTripsAndRefusesEachBrokenField) {
  const ConsoleMsg c = client_round_trip(ConsoleMsg{"s1", "t1"});
  EXPECT_EQ(c.session, "s1");
  EXPECT_EQ(c.token, "t1");
  EXPECT_EQ(client_refusal({{"type", "console"}, {"token", "t"}}),
            "'console' frame is missing the field 'session' (a string)");
  EXPECT_EQ(client_refusal({{"type", "console"}, {"session", "s"}, {"token", 7}}),
            "'console' frame field 'token' must be a string");
  EXPECT_EQ(
      client_refusal({{"type", "console"}, {"session", std::string(129, 's')}, {"token", "t"}}),
      "'console' frame field 'session' is 129 bytes long; the limit is 128");
  EXPECT_EQ(
      client_refusal({{"type", "console"}, {"session", "s"}, {"token", std::string(129, 't')}}),
      "'console' frame field 'token' is 129 bytes long; the limit is 128");
}

TEST(DecodeClientFrame, RefusesWhatAServerSendsAndNamesWhatAClientMay) {
  EXPECT_EQ(client_refusal({{"type", "welcome"}}),
            "unknown frame type 'welcome' (a client may send hello, call, cancel, answer, bye, "
            "console, exec)");
  EXPECT_EQ(client_refusal({{"type", 3}}), "frame has no string field 'type'");
}

TEST(DecodeClientFrame, ItsIndexIsTheMessageEnum) {
  EXPECT_EQ(*validate_client_message(CallMsg{"a", "read", json::object()}.to_json()),
            ClientMessage::kCall);
  EXPECT_EQ(*validate_client_message(ConsoleMsg{"s", "t"}.to_json()), ClientMessage::kConsole);
  EXPECT_EQ(*validate_server_message((ErrorMsg{"m", "protocol", ""}.to_json())),
            ServerMessage::kError);
  EXPECT_EQ(*validate_server_message(AttachedMsg{"s"}.to_json()), ServerMessage::kAttached);
}

// --- moatd -> client -------------------------------------------------------------------

TEST(WelcomeMsg, RoundTripsEveryField) {
  WelcomeMsg w;
  w.session = "s1";
  w.tools = {{"bash", "runs", {{"type", "object"}}, false, true},
             {"edit", "edits", json::object(), true, false}};
  w.workspace = "/w";
  w.audit = "/a/s1.jsonl";
  w.sandbox = {{"userns", true}};
  w.console_token = std::string(64, 'f');
  const WelcomeMsg got = server_round_trip(w);
  EXPECT_EQ(got.version, kProtocolVersion);
  EXPECT_EQ(got.session, "s1");
  ASSERT_EQ(got.tools.size(), 2u);
  EXPECT_EQ(got.tools[0].name, "bash");
  EXPECT_EQ(got.tools[0].description, "runs");
  EXPECT_EQ(got.tools[0].parameters, json({{"type", "object"}}));
  EXPECT_TRUE(got.tools[0].sequential);
  EXPECT_TRUE(got.tools[1].mutates);
  EXPECT_EQ(got.workspace, "/w");
  EXPECT_EQ(got.audit, "/a/s1.jsonl");
  EXPECT_EQ(got.sandbox, w.sandbox);
  EXPECT_EQ(got.console_token, w.console_token);
  EXPECT_FALSE(WelcomeMsg{}.to_json().contains("console_token")) << "headless: no token";
}

// welcome.mcp_servers (the terminal's /mcp): round-trips, and a broken entry is refused naming
// where it is and what is accepted; an error longer than kMaxErrorMessageBytes is cut.
TEST(WelcomeMsg, McpServersRoundTripAndABrokenEntryIsRefusedNamingIt) {
  WelcomeMsg w;
  w.session = "s1";
  w.mcp_servers = {{"t", "started", "", "/a/s1.mcp-t.log",
                    {{"mcp__t__echo", "allow"}, {"mcp__t__fail", "deny"}}},
                   {"bad", "failed", std::string(kMaxErrorMessageBytes + 10, 'e'), "/a/b.log", {}}};
  const WelcomeMsg got = server_round_trip(w);
  ASSERT_EQ(got.mcp_servers.size(), 2u);
  EXPECT_EQ(got.mcp_servers[0], w.mcp_servers[0]);
  EXPECT_EQ(got.mcp_servers[1].error.size(), kMaxErrorMessageBytes);
  EXPECT_FALSE(WelcomeMsg{}.to_json().contains("mcp_servers")) << "no servers: no field";
  json m = w.to_json();
  m["mcp_servers"][0]["tools"][1].erase("decision");
  EXPECT_NE(server_refusal(m).find(
                "'welcome.mcp_servers[0].tools[1]' frame is missing the field 'decision'"),
            std::string::npos)
      << server_refusal(m);
  m = w.to_json();
  m["mcp_servers"][1]["state"] = 3;
  EXPECT_NE(server_refusal(m).find("'welcome.mcp_servers[1]' frame field 'state' must be a string"),
            std::string::npos)
      << server_refusal(m);
  m = w.to_json();
  m["mcp_servers"] = json::array();
  for (int i = 0; i < 33; ++i) m["mcp_servers"].push_back(w.mcp_servers[0].to_json());
  EXPECT_NE(server_refusal(m).find("'mcp_servers' holds 33 entries; the limit is 32"),
            std::string::npos)
      << server_refusal(m);
}

// A server's state change after the welcome (/mcp's live state): it round-trips whole, and a
// frame with a state outside kMcpStates, a restart count out of bounds or no server is
// refused naming the field.
TEST(McpStatusMsg, RoundTripsAndABrokenOneIsRefusedNamingTheField) {
  McpStatusMsg m{{"t", "restarting", "", "/a/s1.mcp-t.log", {{"mcp__t__echo", "allow"}}, 2, 3,
                  true}};
  ASSERT_EQ(*validate_server_message(m.to_json()), ServerMessage::kMcpStatus);
  const McpStatusMsg got = server_round_trip(m);
  EXPECT_EQ(got.server, m.server);
  const auto refused = [](json f, const char* field, json value) {
    f["server"][field] = value;
    return server_refusal(f);
  };
  EXPECT_NE(refused(m.to_json(), "state", "crashed")
                .find("'mcp_status.server' frame field 'state' must be one of \"started\""),
            std::string::npos)
      << refused(m.to_json(), "state", "crashed");
  EXPECT_NE(refused(m.to_json(), "restarts", 65)
                .find("'mcp_status.server' frame field 'restarts' must be 0 to 64"),
            std::string::npos);
  EXPECT_NE(refused(m.to_json(), "restarts", 4)
                .find("'mcp_status.server' frame field 'restarts' must be at most its "
                      "'max_restarts'"),
            std::string::npos);
  EXPECT_NE(refused(m.to_json(), "max_restarts", "3")
                .find("'mcp_status.server' frame field 'max_restarts' must be an integer"),
            std::string::npos)
      << refused(m.to_json(), "max_restarts", "3");
  EXPECT_NE(refused(m.to_json(), "tools_changed", 1)
                .find("'mcp_status.server' frame field 'tools_changed' must be a boolean"),
            std::string::npos)
      << refused(m.to_json(), "tools_changed", 1);
  json f = m.to_json();
  f.erase("server");
  EXPECT_NE(server_refusal(f).find("'mcp_status' frame is missing the field 'server'"),
            std::string::npos)
      << server_refusal(f);
}

TEST(WelcomeMsg, SkipsToolsWithoutANameAndKeepsDefaultsForOddFields) {
  const WelcomeMsg w = decoded<WelcomeMsg>(decode_server_frame(
      {{"type", "welcome"},
       {"version", 1},
       {"session", "s"},
       {"tools", {7, {{"description", "nameless"}}, {{"name", "ls"}, {"mutates", "yes"}}}}}));
  ASSERT_EQ(w.tools.size(), 1u);
  EXPECT_EQ(w.tools[0].name, "ls");
  EXPECT_FALSE(w.tools[0].mutates);
  EXPECT_EQ(w.tools[0].parameters, json::object());
}

TEST(WelcomeMsg, RefusesEachBrokenField) {
  const json ok = {{"type", "welcome"}, {"version", 1}, {"session", "s"}, {"tools", json::array()}};
  for (const char* f : {"version", "session", "tools"}) {
    json m = ok;
    m.erase(f);
    EXPECT_NE(server_refusal(m).find(std::string("is missing the field '") + f + "'"),
              std::string::npos);
  }
  for (const char* f : {"workspace", "audit", "console_token"}) {
    json m = ok;
    m[f] = 5;
    EXPECT_EQ(server_refusal(m), std::string("'welcome' frame field '") + f + "' must be a string");
  }
}

TEST(ResultMsg, RoundTripsEveryField) {
  tools::ToolResult r = tools::ToolResult::error("no");
  r.details = {{"exitCode", 2}};
  const ResultMsg got = server_round_trip(ResultMsg{"c1", r});
  EXPECT_EQ(got.id, "c1");
  EXPECT_TRUE(got.result.is_error);
  EXPECT_EQ(got.result.content, r.content);
  EXPECT_EQ(got.result.details, r.details);
}

TEST(ResultMsg, RefusesEachBrokenField) {
  EXPECT_EQ(server_refusal({{"type", "result"}, {"isError", false}, {"content", json::array()}}),
            "'result' frame is missing the field 'id' (a string)");
  EXPECT_EQ(
      server_refusal({{"type", "result"}, {"id", "a"}, {"isError", 0}, {"content", json::array()}}),
      "'result' frame field 'isError' must be a boolean");
  EXPECT_EQ(server_refusal({{"type", "result"}, {"id", "a"}, {"isError", false}}),
            "'result' frame is missing the field 'content' (an array)");
}

TEST(ProgressMsg, RoundTripsAndRefusesEachBrokenField) {
  const ProgressMsg p = server_round_trip(ProgressMsg{"c1", "out\n"});
  EXPECT_EQ(p.id, "c1");
  EXPECT_EQ(p.chunk, "out\n");
  EXPECT_EQ(server_refusal({{"type", "progress"}, {"chunk", "x"}}),
            "'progress' frame is missing the field 'id' (a string)");
  EXPECT_EQ(server_refusal({{"type", "progress"}, {"id", "a"}, {"chunk", 1}}),
            "'progress' frame field 'chunk' must be a string");
  EXPECT_TRUE(p.decided.is_null());
  // The decision before the call runs.
  const json decided = {{"decision", "allow"}, {"rule", {{"id", "default.make"}}}};
  EXPECT_EQ(server_round_trip(ProgressMsg{"c1", "", decided}).decided, decided);
  EXPECT_NE(server_refusal({{"type", "progress"}, {"id", "a"}, {"chunk", ""}, {"decided", "allow"}})
                .find("progress.decided: an object is accepted"),
            std::string::npos);
}

TEST(AskMsg, RoundTripsAndRefusesEachBrokenField) {
  const AskMsg a = server_round_trip(AskMsg{"c1", "k1", "may I?", {{"id", "r1"}}});
  EXPECT_EQ(a.id, "c1");
  EXPECT_EQ(a.ask, "k1");
  EXPECT_EQ(a.question, "may I?");
  EXPECT_EQ(a.rule, json({{"id", "r1"}}));
  EXPECT_EQ(server_refusal({{"type", "ask"}, {"id", "c"}, {"ask", "k"}}),
            "'ask' frame is missing the field 'question' (a string)");
  EXPECT_EQ(server_refusal({{"type", "ask"}, {"id", "c"}, {"ask", 1}, {"question", "q"}}),
            "'ask' frame field 'ask' must be a string");
}

TEST(ErrorMsg, RoundTripsEveryFieldAndDefaultsItsCode) {
  const ErrorMsg e = server_round_trip(ErrorMsg{"broken", "sandbox", "c1"});
  EXPECT_EQ(e.message, "broken");
  EXPECT_EQ(e.code, "sandbox");
  EXPECT_EQ(e.id, "c1");
  EXPECT_FALSE((ErrorMsg{"m", "protocol", ""}.to_json().contains("id")));
  EXPECT_EQ(decoded<ErrorMsg>(decode_server_frame({{"type", "error"}, {"message", "m"}})).code,
            "protocol");
  EXPECT_EQ(server_refusal({{"type", "error"}}),
            "'error' frame is missing the field 'message' (a string)");
  EXPECT_EQ(server_refusal({{"type", "error"}, {"message", "m"}, {"code", 2}}),
            "'error' frame field 'code' must be a string");
}

TEST(ErrorMsg, CutsWhatItQuotesSoTheFrameAlwaysFits) {
  const json e = ErrorMsg{std::string(kMaxFrameBytes, 'w'), "workspace",
                          std::string(kMaxCallIdBytes + 10, 'i')}
                     .to_json();
  EXPECT_EQ(e["message"].get<std::string>().size(), kMaxErrorMessageBytes + 3);
  EXPECT_EQ(e["id"].get<std::string>().size(), kMaxCallIdBytes + 3);
  EXPECT_EQ(error_frame("m", "policy", "c"), (ErrorMsg{"m", "policy", "c"}.to_json()));
}

TEST(AttachedMsg, RoundTripsAndRefusesAMissingSession) {
  EXPECT_EQ(server_round_trip(AttachedMsg{"s1"}).session, "s1");
  EXPECT_EQ(server_refusal({{"type", "attached"}}),
            "'attached' frame is missing the field 'session' (a string)");
}

TEST(DecodeServerFrame, RefusesWhatAClientSendsAndNamesWhatAServerMay) {
  EXPECT_EQ(server_refusal({{"type", "hello"}}),
            "unknown frame type 'hello' (a server may send welcome, result, progress, ask, "
            "error, bye, attached, mcp_status)");
}

// --- The shared reader -----------------------------------------------------------------

struct SocketPair {
  UniqueFd a, b;
  SocketPair() {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    a = UniqueFd(sv[0]);
    b = UniqueFd(sv[1]);
  }
};

TEST(FrameReader, ReadsWhatSendMessageWroteThenSeesTheHangUp) {
  SocketPair s;
  ASSERT_TRUE(send_message(s.a.get(), ProgressMsg{"c1", "x"}));
  ASSERT_TRUE(send_message(s.a.get(), ResultMsg{"c1", tools::ToolResult::text("ok")}));
  s.a.reset();
  FrameReader reader(s.b.get());
  EXPECT_EQ(read_as<ProgressMsg>(reader).chunk, "x");
  EXPECT_EQ(read_as<ResultMsg>(reader).id, "c1");
  auto closed = read_server_frame(reader);
  ASSERT_TRUE(closed.has_value()) << closed.error().message();
  EXPECT_FALSE(closed->has_value()) << "the hang-up is not an error";
}

TEST(FrameReader, ServesFramesItsDecoderAlreadyHeldFirst) {
  SocketPair s;
  FrameDecoder held;
  held.feed(encode_frame(AttachedMsg{"s1"}.to_json()));
  ASSERT_TRUE(send_message(s.a.get(), ByeMsg{}));
  FrameReader reader(s.b.get(), std::move(held));
  EXPECT_EQ(read_as<AttachedMsg>(reader).session, "s1");
  (void)read_as<ByeMsg>(reader);
}

TEST(FrameReader, ABrokenStreamIsAnErrorNotAHangUp) {
  SocketPair s;
  const std::string junk = std::string("\0\0\0\3[1]", 7);
  ASSERT_EQ(::write(s.a.get(), junk.data(), junk.size()), 7);
  FrameReader reader(s.b.get());
  auto r = reader.read();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "frame is not a JSON object");
}

TEST(FrameReader, AFrameOfTheWrongSideIsAnErrorNamingIt) {
  SocketPair s;
  ASSERT_TRUE(send_message(s.a.get(), CancelMsg{"c1"}));
  FrameReader reader(s.b.get());
  auto r = read_server_frame(reader);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("unknown frame type 'cancel'"), std::string::npos);
}

TEST(ExecMsg, RoundTripsArgvCwdEnvAndTimeout) {
  const ExecMsg m{"x", {"printf", "%s", "a b"}, "/w/sub", {{"CI", "1"}}, 2.5};
  auto back = ExecMsg::from_json(m.to_json());
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->argv, m.argv);
  EXPECT_EQ(back->cwd, "/w/sub");
  EXPECT_EQ(back->env, m.env);
  EXPECT_EQ(back->timeout_s, 2.5);
}

TEST(ExecMsg, RefusesWhatBreaksItsBoundsNamingTheField) {
  auto refused = [](json m, const std::string& says) {
    m["type"] = "exec";
    if (!m.contains("id")) m["id"] = "x";
    auto r = ExecMsg::from_json(m);
    ASSERT_FALSE(r) << m.dump().substr(0, 200);
    EXPECT_NE(r.error().message().find(says), std::string::npos) << r.error().message();
  };
  refused({{"argv", json::array()}}, "'argv' must hold 1 to 4096 words");
  refused({{"argv", std::vector<std::string>(kMaxExecArgs + 1, "a")}}, "1 to 4096 words");
  refused({{"argv", {"a", 1}}}, "must hold strings");
  refused({{"argv", {std::string("a\0b", 3)}}}, "NUL");
  refused({{"argv", {std::string(kMaxCommandBytes + 1, 'a')}}}, "the limit is 131072");
  refused({{"argv", {"a"}}, {"env", {{"1X", "v"}}}}, "variable names");
  refused({{"argv", {"a"}}, {"env", {{"X", 1}}}}, "variable names");
  refused({{"argv", {"a"}}, {"env", {{"X", std::string(kMaxCommandBytes, 'v')}}}}, "the limit");
  refused({{"argv", {"a"}}, {"timeout", -1}}, "'timeout'");
  refused({{"argv", {"a"}}, {"cwd", 7}}, "'cwd'");
  refused({{"id", ""}, {"argv", {"a"}}}, "'id'");
  json many = json::object();
  for (std::size_t i = 0; i <= kMaxExecEnv; ++i) many["V" + std::to_string(i)] = "v";
  refused({{"argv", {"a"}}, {"env", many}}, "at most 64");
}

// Issue 26 item 11: before hello a frame is at most a hello's size, refused as soon as its
// length arrives, and nothing is reserved for it.
TEST(FrameDecoder, RefusesAFrameOverItsLimitAsSoonAsItsLengthArrives) {
  FrameDecoder d(kMaxHelloFrameBytes);
  const std::uint32_t n = kMaxHelloFrameBytes + 1;
  const char head[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                        static_cast<char>(n >> 8), static_cast<char>(n)};
  d.feed(std::string_view(head, 4));
  auto r = d.next();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message(), "frame of " + std::to_string(n) + " bytes exceeds the " +
                                     std::to_string(kMaxHelloFrameBytes) +
                                     "-byte limit of a frame before 'hello'");
  EXPECT_LT(d.held_bytes(), 4096u);
  // Raised after the hello, the same length is a frame like any other.
  FrameDecoder after(kMaxHelloFrameBytes);
  after.set_max_frame_bytes(kMaxFrameBytes);
  after.feed(std::string_view(head, 4));
  auto waiting = after.next();
  ASSERT_TRUE(waiting.has_value()) << waiting.error().message();
  EXPECT_FALSE(waiting->has_value());
}

// A large frame's buffer is its exact size while it arrives (growing by doubling held up to
// twice the frame), and is given back once the frame is taken.
TEST(FrameDecoder, HoldsALargeFramesExactSizeAndGivesItBackOnceTaken) {
  FrameDecoder d;
  const std::string frame = encode_frame({{"type", "bye"}, {"pad", std::string(3u << 20, 'x')}});
  for (std::size_t at = 0; at < frame.size(); at += 65536) {
    d.feed(std::string_view(frame).substr(at, 65536));
    EXPECT_LE(d.held_bytes(), frame.size() + 65536) << "at byte " << at;
  }
  auto taken = d.next();
  ASSERT_TRUE(taken.has_value() && taken->has_value());
  auto more = d.next();
  ASSERT_TRUE(more.has_value() && !more->has_value());
  EXPECT_LE(d.held_bytes(), 256u << 10) << "an idle connection keeps the large frame's buffer";
  EXPECT_GE(d.peak_held_bytes(), frame.size());
}

// A version-1 moatd's answers to a pipelined version-2 hello, as it worded them (git history:
// 328fedc^ and 24d6d8a), are what makes moat say its hello again as version 1; nothing else is.
TEST(Versions, OnlyAVersionOneMoatdsRefusalsOfPipeliningAreTakenForOne) {
  for (const char* old :
       {"protocol version 2 is not supported (this moatd speaks 1)",
        "file descriptors before 'hello' (only an exec frame carries them: its stdin, stdout and "
        "stderr)",
        "file descriptors before a whole 'hello' (only an exec frame carries them: its stdin, "
        "stdout and stderr)"})
    EXPECT_TRUE(is_pipelining_refused(ErrorMsg{old, "protocol", ""})) << old;
  EXPECT_FALSE(is_pipelining_refused(
      ErrorMsg{"protocol version 2 is not supported (this moatd speaks 1)", "policy", ""}));
  for (const char* other : {"policy: the network was asked for", "'hello' was already received",
                            "protocol version 3 is not supported (this moatd speaks 1 to 2)"})
    EXPECT_FALSE(is_pipelining_refused(ErrorMsg{other, "protocol", ""})) << other;
  EXPECT_EQ(version_refusal(3), "protocol version 3 is not supported (this moatd speaks 1 to 2)");
}

}  // namespace
}  // namespace moat::sandbox

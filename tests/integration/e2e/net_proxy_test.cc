// tests/integration/e2e/net_proxy_test.cc: network by name (issue 18). A real moatd whose
// proxy resolves *.test names to loopback addresses (--test-resolve), real HTTP servers on the
// host's 127.0.0.1 and 127.0.0.2, and programs in the sandbox that reach them through the
// proxy variables only: what the policy allows works, everything else fails, and every
// connection is a `net` record.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "net_proxy_fixture.h"

namespace moat::e2e {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(NetProxyTest, AnAllowedNameWorksThroughCurlAndPythonWithOnlyTheProxyVariables) {
  const std::string u = url("allowed.test", local_.port());
  auto out = run_session({"curl -sS --max-time 20 " + u,
                          "python3 -c 'import urllib.request,sys; "
                          "sys.stdout.write(urllib.request.urlopen(\"" +
                              u + "\").read().decode())'",
                          "env | grep -i _proxy= | sort"});
  EXPECT_NE(out[0].find("hello from the allowed server"), std::string::npos)
      << out[0] << moatd_log();
  EXPECT_NE(out[1].find("hello from the allowed server"), std::string::npos) << out[1];
  EXPECT_NE(out[2].find("HTTPS_PROXY=http://127.0.0.1:3128"), std::string::npos) << out[2];
  EXPECT_NE(out[2].find("ALL_PROXY=socks5h://127.0.0.1:3128"), std::string::npos) << out[2];
  // 127.0.0.1 is named by test.local: the proxy's to judge, so not in no_proxy (issue 27 item 3).
  EXPECT_NE(out[2].find("no_proxy=localhost\n"), std::string::npos) << out[2];
  EXPECT_EQ(local_.accepted(), 2);
  json r = record_for("allowed.test");
  ASSERT_FALSE(r.is_null()) << "no net record";
  EXPECT_EQ(r.value("decision", ""), "allow") << r.dump();
  EXPECT_EQ(r.value("rule", ""), "test.local") << r.dump();
  EXPECT_EQ(r.value("address", ""), "127.0.0.1") << r.dump();
  EXPECT_EQ(r.value("port", 0), local_.port());
  EXPECT_GT(r.value("bytes_down", 0), 0) << r.dump();
  EXPECT_GT(r.value("bytes_up", 0), 0) << r.dump();
  EXPECT_TRUE(r.contains("duration_ms")) << r.dump();
}

// Issue 27 item 3: NO_PROXY=localhost,127.0.0.1 sent curl and urllib around the proxy for
// 127.0.0.1, which test.local allows (a local mirror), into the empty namespace ("Connection
// refused"). A loopback name a rule may allow is left out of NO_PROXY; one no rule names
// (localhost here) stays on the sandbox's own loopback, where the session's own servers are.
TEST_F(NetProxyTest, AnAddressARuleAllowsGoesThroughTheProxyNotAroundIt) {
  const std::string u = url("127.0.0.1", local_.port());
  auto out = run_session(
      {"curl -sS --max-time 20 " + u,
       "python3 -c 'import urllib.request,sys; sys.stdout.write(urllib.request.urlopen(\"" + u +
           "\", timeout=20).read().decode())'",
       "echo own > own.txt; python3 -m http.server 18123 --bind 127.0.0.1 >/dev/null 2>&1 & "
       "for i in $(seq 100); do curl -s --max-time 5 http://localhost:18123/own.txt && break; "
       "sleep 0.1; done; kill $!"});
  EXPECT_THAT(out[0], HasSubstr("hello from the allowed server")) << moatd_log();
  EXPECT_THAT(out[1], HasSubstr("hello from the allowed server"));
  EXPECT_THAT(out[2], HasSubstr("own")) << "localhost no longer reaches the sandbox's loopback";
  EXPECT_EQ(local_.accepted(), 2);
  json r = record_for("127.0.0.1");
  ASSERT_FALSE(r.is_null()) << "no net record: the program went around the proxy";
  EXPECT_EQ(r.value("decision", ""), "allow") << r.dump();
  EXPECT_EQ(r.value("rule", ""), "test.local") << r.dump();
  EXPECT_TRUE(record_for("localhost").is_null()) << "localhost went through the proxy";
}

TEST_F(NetProxyTest, EachConnectionsRecordNamesTheProgramThatOpenedIt) {
  const std::string u = url("allowed.test", local_.port());
  const std::string fetch = "urllib.request.urlopen(\"" + u + "\").read()";
  // c0: curl under bash; c1: python3 itself; c2: a child python3 forks without an exec,
  // which runs python3's program (its nearest ancestor with one).
  auto out = run_session(
      {"true && curl -sS --max-time 20 " + u, "python3 -c 'import urllib.request; " + fetch + "'",
       "python3 -c 'import os, urllib.request\npid = os.fork()\nif pid == 0:\n  " + fetch +
           "\n  os._exit(0)\nos.waitpid(pid, 0)'"});
  ASSERT_EQ(local_.accepted(), 3) << out[0] << out[1] << out[2] << moatd_log();
  const std::pair<const char*, const char*> calls[] = {
      {"c0", "curl"}, {"c1", "python3"}, {"c2", "python3"}};
  for (const auto& [call, program] : calls) {
    json exec = exec_record(all_records_, call, program);
    ASSERT_FALSE(exec.is_null()) << "no exec record of " << program << " in " << call;
    json net;
    for (const json& r : records_)
      if (r.value("call_id", "") == call) net = r;
    ASSERT_FALSE(net.is_null()) << "no net record names call " << call << ": "
                                << json(records_).dump();
    EXPECT_EQ(net["exec_id"], exec["exec_id"]) << net.dump() << "\n" << exec.dump();
    EXPECT_GT(net["seq"].get<long>(), exec["seq"].get<long>()) << "the program came first";
    if (std::string(call) != "c2") EXPECT_EQ(net["pid"], exec["pid"]) << net.dump();
    else EXPECT_NE(net["pid"], exec["pid"]) << "the forked child opened it: " << net.dump();
  }
}

TEST_F(NetProxyTest, ACurlConnectTunnelCarriesTheBytesUntouched) {
  // -p: curl asks for a CONNECT tunnel even for http://, as it does for every https:// URL.
  auto out = run_session({"curl -sS -p --max-time 20 " + url("allowed.test", local_.port())});
  EXPECT_NE(out[0].find("hello from the allowed server"), std::string::npos) << out[0];
  json r = record_for("allowed.test");
  ASSERT_FALSE(r.is_null());
  EXPECT_EQ(r.value("method", ""), "CONNECT") << r.dump();
  EXPECT_EQ(r.value("decision", ""), "allow") << r.dump();
}

TEST_F(NetProxyTest, ADeniedNameAnAskAnIpLiteralAndARebindingNameAllFailAndAreRecorded) {
  auto out = run_session(
      {"curl -sS --max-time 20 " + url("denied.test", local_.port()),
       "curl -sS --max-time 20 " + url("paste.test", local_.port()),
       "curl -sS --max-time 20 " + url("127.0.0.2", other_.port()),
       "curl -sS --max-time 20 " + url("rebind.test", other_.port()),
       "curl -sS -p --max-time 20 " + url("rebind.test", other_.port()) + "; echo curl-exit=$?"});
  EXPECT_NE(out[0].find("refused by rule defaults.network"), std::string::npos) << out[0];
  EXPECT_NE(out[1].find("refused by rule test.paste (Exfiltration."), std::string::npos) << out[1];
  EXPECT_NE(out[2].find("refused by rule builtin.network-ip-literal"), std::string::npos) << out[2];
  EXPECT_NE(out[3].find("builtin.network-internal-address"), std::string::npos) << out[3];
  EXPECT_EQ(out[4].find("the rebinding target answered"), std::string::npos) << out[4];
  EXPECT_EQ(out[4].find("curl-exit=0"), std::string::npos) << out[4];
  expect_no_server_reached();
  const std::pair<const char*, const char*> expected[] = {
      {"denied.test", "defaults.network"},
      {"paste.test", "test.paste"},
      {"127.0.0.2", "builtin.network-ip-literal"},
      {"rebind.test", "builtin.network-internal-address"}};
  for (const auto& [host, rule] : expected) {
    json r = record_for(host);
    ASSERT_FALSE(r.is_null()) << "no net record for " << host;
    EXPECT_EQ(r.value("decision", ""), "deny") << r.dump();
    EXPECT_EQ(r.value("rule", ""), rule) << r.dump();
  }
}

TEST_F(NetProxyTest, AProgramThatIgnoresTheProxyReachesNothing) {
  // The host's server listens on 127.0.0.1: from the sandbox's own loopback it is not there,
  // and no other interface exists. Without a proxy, a name does not even resolve.
  auto out = run_session({"curl -sS --noproxy '*' --max-time 10 " +
                              url("127.0.0.1", local_.port()) + "; echo curl-exit=$?",
                          "python3 -c 'import socket; socket.create_connection((\"127.0.0.2\", " +
                              std::to_string(other_.port()) + "), 5)'; echo py-exit=$?",
                          "curl -sS --noproxy '*' --max-time 10 " +
                              url("allowed.test", local_.port()) + "; echo curl-exit=$?"});
  for (const auto& [i, success] :
       {std::pair<int, const char*>{0, "curl-exit=0"}, {1, "py-exit=0"}, {2, "curl-exit=0"}})
    EXPECT_THAT(out[i], Not(HasSubstr(success)));
  EXPECT_THAT(out[0], Not(HasSubstr("hello")));
  expect_no_server_reached();
  EXPECT_TRUE(records_.empty()) << "nothing reached the proxy";
}

TEST_F(NetProxyTest, Socks5NamesAreResolvedByMoatdUnderTheSameRulesAndRecords) {
  const std::string port = std::to_string(local_.port());
  const std::string socks = "curl -sS --max-time 20 --socks5-hostname 127.0.0.1:3128 ";
  auto out = run_session(
      {socks + url("allowed.test", local_.port()),
       // Only ALL_PROXY left: curl takes socks5h:// from it.
       "env -u http_proxy -u HTTP_PROXY sh -c 'echo $ALL_PROXY; curl -sS --max-time 20 " +
           url("allowed.test", local_.port()) + "'",
       socks + url("denied.test", local_.port()) + "; echo curl-exit=$?",
       "curl -sS --max-time 20 --socks5 127.0.0.1:3128 " + url("127.0.0.2", other_.port()) +
           "; echo curl-exit=$?",
       socks + url("rebind.test", other_.port()) + "; echo curl-exit=$?"});
  EXPECT_THAT(out[0], HasSubstr("hello from the allowed server")) << moatd_log();
  EXPECT_THAT(out[1], HasSubstr("socks5h://127.0.0.1:3128"));
  EXPECT_THAT(out[1], HasSubstr("hello from the allowed server"));
  for (int i : {2, 3, 4}) EXPECT_THAT(out[i], Not(HasSubstr("curl-exit=0"))) << out[i];
  EXPECT_EQ(local_.accepted(), 2);
  EXPECT_EQ(other_.accepted(), 0) << "the rebinding target was reached";
  const std::pair<const char*, const char*> expected[] = {
      {"c0", "test.local"},
      {"c1", "test.local"},
      {"c2", "defaults.network"},
      {"c3", "builtin.network-ip-literal"},
      {"c4", "builtin.network-internal-address"}};
  for (const auto& [call, rule] : expected) {
    json r = net_record_of(records_, call);
    ASSERT_FALSE(r.is_null()) << call << ": " << json(records_).dump();
    EXPECT_EQ(r.value("method", ""), "SOCKS5") << r.dump();
    EXPECT_EQ(r.value("rule", ""), rule) << r.dump();
    EXPECT_EQ(r.value("decision", ""), std::string(call) < "c2" ? "allow" : "deny") << r.dump();
    EXPECT_EQ(r["exec_id"], exec_record(all_records_, call, "curl")["exec_id"]) << r.dump();
  }
  EXPECT_EQ(net_record_of(records_, "c0").value("host", ""), "allowed.test")
      << "the name, as the program sent it, was judged and resolved by moatd";
}

// An interactive session: a connection whose rule says ask is put to the person's console,
// naming the host, the port and the rule; their answer decides, and the record says who.
TEST_F(NetProxyTest, AnAskForAConnectionReachesThePersonAndTheirAnswerDecides) {
  RawClient agent(socket_);
  agent.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", false}});
  const json welcome = agent.read_frame();
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  RawClient console(socket_);
  console.send_json({{"type", "console"},
                     {"session", welcome["session"]},
                     {"token", welcome.value("console_token", "")}});
  ASSERT_EQ(console.read_frame().value("type", ""), "attached") << moatd_log();
  const std::string target = "paste.test:" + std::to_string(local_.port());
  std::vector<std::string> outputs;
  for (const char* decision : {"allow", "deny"}) {
    const std::string id = std::string("c-") + decision;
    agent.send_json(
        {{"type", "call"},
         {"id", id},
         {"tool", "bash"},
         {"arguments", {{"command", "curl -sS --max-time 60 http://" + target + "/"}}}});
    const json ask = console.read_frame(60000);
    ASSERT_EQ(ask.value("type", ""), "ask") << ask.dump() << moatd_log();
    EXPECT_THAT(ask.value("question", ""), HasSubstr("a connection to " + target));
    EXPECT_THAT(ask.value("question", ""), HasSubstr("test.paste"));
    EXPECT_EQ(ask.value("id", ""), id) << "the ask names the call whose program connected";
    console.send_json({{"type", "answer"}, {"ask", ask["ask"]}, {"decision", decision}});
    json r = agent.read_result(60000);
    std::string text;
    for (const json& b : r.value("content", json::array())) text += b.value("text", "");
    outputs.push_back(text);
  }
  agent.send_json({{"type", "bye"}});
  agent.read_frame();
  EXPECT_THAT(outputs[0], HasSubstr("hello from the allowed server"));
  EXPECT_THAT(outputs[1], HasSubstr("declined by the person (rule test.paste"));
  EXPECT_EQ(local_.accepted(), 1);
  std::ifstream in(welcome.value("audit", ""));
  std::vector<json> net;
  for (std::string line; std::getline(in, line);) {
    json rec = json::parse(line, nullptr, false);
    if (rec.value("type", "") == "net") net.push_back(rec);
  }
  ASSERT_EQ(net.size(), 2u) << json(net).dump();
  EXPECT_EQ(net[0].value("decision", ""), "allow") << net[0].dump();
  EXPECT_EQ(net[0]["user"].value("answer", ""), "allow") << net[0].dump();
  EXPECT_EQ(net[1].value("decision", ""), "deny") << net[1].dump();
  EXPECT_EQ(net[1]["user"].value("answer", ""), "deny") << net[1].dump();
  for (const json& rec : net) EXPECT_EQ(rec.value("rule", ""), "test.paste") << rec.dump();
}

// Issue 27 item 2: an ask for an IP literal answered "allow for this session" lets the
// connection reach that address (the internal-address check honours the answer given under the
// rule naming it), the record holds the decision carried out, and the session's second
// connection to it is not asked again.
TEST_F(NetProxyTest, AnAddressAllowedForTheSessionByAnAnswerIsReachedAndNotAskedAgain) {
  TinyServer mirror("127.0.0.3", "hello from the local mirror");
  ASSERT_GT(mirror.port(), 0) << "127.0.0.3 cannot be bound here";
  RawClient agent(socket_);
  agent.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", false}});
  const json welcome = agent.read_frame();
  ASSERT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
  RawClient console(socket_);
  console.send_json({{"type", "console"},
                     {"session", welcome["session"]},
                     {"token", welcome.value("console_token", "")}});
  ASSERT_EQ(console.read_frame().value("type", ""), "attached") << moatd_log();
  const std::string target = "127.0.0.3:" + std::to_string(mirror.port());
  auto call = [&](const std::string& id) {
    agent.send_json({{"type", "call"},
                     {"id", id},
                     {"tool", "bash"},
                     {"arguments", {{"command", "curl -sS --max-time 20 http://" + target + "/"}}}});
  };
  auto text_of = [](const json& r) {
    std::string text;
    for (const json& b : r.value("content", json::array())) text += b.value("text", "");
    return text;
  };
  call("c-first");
  const json ask = console.read_frame(60000);
  ASSERT_EQ(ask.value("type", ""), "ask") << ask.dump() << moatd_log();
  EXPECT_THAT(ask.value("question", ""), HasSubstr("test.ask-address"));
  console.send_json(
      {{"type", "answer"}, {"ask", ask["ask"]}, {"decision", "allow"}, {"scope", "session"}});
  const std::string first = text_of(agent.read_result(60000));
  // Not asked again: nobody answers now, so an ask would hold the call until curl gives up.
  call("c-second");
  const std::string second = text_of(agent.read_result(60000));
  agent.send_json({{"type", "bye"}});
  agent.read_frame();
  EXPECT_THAT(first, HasSubstr("hello from the local mirror")) << moatd_log();
  EXPECT_THAT(second, HasSubstr("hello from the local mirror"));
  EXPECT_EQ(mirror.accepted(), 2);
  std::ifstream in(welcome.value("audit", ""));
  std::vector<json> net;
  for (std::string line; std::getline(in, line);) {
    json rec = json::parse(line, nullptr, false);
    if (rec.value("type", "") == "net") net.push_back(rec);
  }
  ASSERT_EQ(net.size(), 2u) << json(net).dump();
  for (const json& rec : net) {
    EXPECT_EQ(rec.value("decision", ""), "allow") << rec.dump();
    EXPECT_EQ(rec.value("rule", ""), "test.ask-address") << rec.dump();
    EXPECT_EQ(rec["user"].value("answer", ""), "allow") << rec.dump();
    EXPECT_EQ(rec.value("address", ""), "127.0.0.3") << rec.dump();
  }
  EXPECT_EQ(net[1]["user"].value("remembered", false), true) << net[1].dump();
}

// moat sandbox exec --network (issue 15, item 4): the proxy for this command under the policy's
// [[network]] rules; without the flag no network at all, even where the policy grants some; and
// a policy that grants none refuses --network (125) rather than run a command that cannot work.
TEST_F(NetProxyTest, SandboxExecReachesAnAllowedNameOnlyWithNetwork) {
  const std::string u = url("allowed.test", local_.port());
  auto exec = [&](std::vector<std::string> opts, std::vector<std::string> argv) {
    std::vector<std::string> line = {moat_bin(), "sandbox", "exec", "--connect",
                                     socket_,    "-C",      ws_};
    line.insert(line.end(), opts.begin(), opts.end());
    line.push_back("--");
    line.insert(line.end(), argv.begin(), argv.end());
    return run_split(line, {"XDG_STATE_HOME=" + dir_.path() + "/state"}, 120);
  };
  { RawClient wait_until_listening(socket_); }
  SplitRun r = exec({"--network"}, {"curl", "-sS", "--max-time", "20", u});
  EXPECT_EQ(r.exit_code, 0) << r.err << moatd_log();
  EXPECT_EQ(r.out, "hello from the allowed server");
  EXPECT_EQ(local_.accepted(), 1);
  r = exec({"--network"}, {"sh", "-c", "echo \"$HTTPS_PROXY|$no_proxy\""});
  EXPECT_EQ(r.out, "http://127.0.0.1:3128|localhost\n") << r.err;

  r = exec({}, {"curl", "-sS", "--max-time", "20", u});
  EXPECT_NE(r.exit_code, 0) << "without --network the command reached the server: " << r.out;
  EXPECT_EQ(local_.accepted(), 1);
  r = exec({}, {"sh", "-c", "echo \"${HTTPS_PROXY:-none}\""});
  EXPECT_EQ(r.out, "none\n") << r.err;
  r = exec({}, {"python3", "-c",
                "import socket; s = socket.socket(); s.connect(('127.0.0.1', " +
                    std::to_string(local_.port()) + "))"});
  EXPECT_NE(r.exit_code, 0) << "a direct connection worked without --network";

  // A private moatd whose policy (the sandbox exec tests' system layer) allows no connection.
  const SplitRun refused =
      run_split({moat_bin(), "sandbox", "exec", "--system-policy-dir",
                 source_root() + "/tests/integration/e2e/sandbox_exec_policy", "--audit-dir",
                 dir_.path() + "/audit", "-C", ws_, "--network", "--", "true"},
                {"XDG_STATE_HOME=" + dir_.path() + "/state",
                 "XDG_CONFIG_HOME=" + dir_.path() + "/config", "MOATD_BIN=" + moatd_bin()},
                120);
  EXPECT_EQ(refused.exit_code, 125) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(refused.err.find("the policy allows no connection"), std::string::npos) << refused.err;
}

// Issue 26 item 9: *.example.test is allowed, and host.example.test resolves (as an attacker's
// DNS record can make it) to the host's own interface address, where a host service listens on
// 0.0.0.0. The proxy refuses it by builtin.network-host-address and the service sees nothing;
// once a rule names that literal address, the same name reaches it.
TEST_F(NetProxyTest, ANameResolvingToTheHostsOwnAddressReachesNoHostService) {
  if (own_address_.empty()) GTEST_SKIP() << "the host has no non-loopback IPv4 address";
  TinyServer host_service("0.0.0.0", "the host's own service answered");
  ASSERT_GT(host_service.port(), 0);
  const std::string u = url("host.example.test", host_service.port());
  // Plain HTTP: curl prints the proxy's 403 body and exits 0; the tunnels fail outright.
  auto out = run_session(
      {"curl -sS --max-time 20 " + u, "curl -sS -p --max-time 20 " + u + "; echo curl-exit=$?",
       "curl -sS --max-time 20 --socks5-hostname 127.0.0.1:3128 " + u + "; echo curl-exit=$?"});
  EXPECT_THAT(out[0], HasSubstr("refused by rule builtin.network-host-address")) << moatd_log();
  for (const std::string& o : out)
    EXPECT_THAT(o, Not(HasSubstr("the host's own service answered")));
  for (int i : {1, 2}) EXPECT_THAT(out[i], Not(HasSubstr("curl-exit=0"))) << out[i];
  EXPECT_EQ(host_service.accepted(), 0) << "a host service on 0.0.0.0 was reached";
  ASSERT_EQ(records_.size(), 3u) << json(records_).dump();
  for (const json& r : records_) {
    EXPECT_EQ(r.value("decision", ""), "deny") << r.dump();
    EXPECT_EQ(r.value("rule", ""), "builtin.network-host-address") << r.dump();
    EXPECT_EQ(r.value("address", ""), own_address_) << r.dump();
  }

  // The person's layer names the address: now the name may lead there.
  std::ofstream(dir_.path() + "/no-policy/host.toml")
      << "schema = 1\n[[network]]\nid = \"user.host-service\"\ndecision = \"allow\"\n"
         "domains = [\""
      << own_address_ << "\"]\n";
  out = run_session({"curl -sS --max-time 20 " + u});
  EXPECT_EQ(out[0], "the host's own service answered") << out[0] << moatd_log();
  EXPECT_EQ(host_service.accepted(), 1);
  ASSERT_EQ(records_.size(), 1u) << json(records_).dump();
  EXPECT_EQ(records_[0].value("decision", ""), "allow") << records_[0].dump();
  EXPECT_EQ(records_[0].value("rule", ""), "test.wildcard") << records_[0].dump();
}

// Issue 26 item 10: 27,225 connect/close pairs in 10 s wrote 13.5 MB of audit log, a record
// each. A program in the sandbox opens and closes 3000 connections to the proxy after one
// denied request: the log stays small and verifies, the counts of its net records add up to
// every connection, and the denial is there with its rule.
TEST_F(NetProxyTest, AFloodOfConnectClosePairsWritesABoundedAuditLogThatCountsEveryOne) {
  const auto began = std::chrono::steady_clock::now();
  auto out = run_session(
      {"curl -sS --max-time 20 " + url("denied.test", local_.port()),
       "python3 -c 'import socket\nfor i in range(3000):\n  socket.create_connection((\"127.0.0.1\""
       ", 3128)).close()\nprint(\"flooded\")'"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  EXPECT_THAT(out[0], HasSubstr("refused by rule defaults.network")) << out[0];
  EXPECT_THAT(out[1], HasSubstr("flooded")) << out[1] << moatd_log();
  // A connection closed at once is not attributed (no process holds its socket any more), and
  // those the proxy had not taken when the session ended are recorded then: all count.
  std::int64_t denied_request = 0, flood = 0;
  for (const json& r : records_)
    (r.value("call_id", "") == "c0" ? denied_request : flood) += r.value("count", std::int64_t{1});
  EXPECT_EQ(denied_request, 1) << json(records_).dump();
  EXPECT_EQ(flood, 3000) << json(records_).dump();
  json denied = net_record_of(records_, "c0");
  EXPECT_EQ(denied.value("decision", ""), "deny") << denied.dump();
  EXPECT_EQ(denied.value("rule", ""), "defaults.network") << denied.dump();
  const auto bytes = fs::file_size(audit_path_);
  std::printf(
      "[ measure  ] 3000 connect/close pairs in %.1f s: %zu net records, audit log %ju bytes\n",
      seconds, records_.size(), static_cast<std::uintmax_t>(bytes));
  EXPECT_LT(bytes, 256u * 1024) << "the log grew with every connection";
  const moat::e2e::Run verify = run({moat_bin(), "audit", "verify", audit_path_});
  EXPECT_EQ(verify.exit_code, 0) << verify.out;
}

}  // namespace
}  // namespace moat::e2e

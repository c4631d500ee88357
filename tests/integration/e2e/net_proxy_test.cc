// tests/integration/e2e/net_proxy_test.cc: network by name (issue 18). A real moatd whose
// proxy resolves *.test names to loopback addresses (--test-resolve), real HTTP servers on the
// host's 127.0.0.1 and 127.0.0.2, and programs in the sandbox that reach them through the
// proxy variables only: what the policy allows works, everything else fails, and every
// connection is a `net` record.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "e2e_support.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

// A one-answer-per-connection HTTP server on the host: answers every request with `body`
// and counts the connections it accepted (a refused connection must never reach it).
class TinyServer {
 public:
  TinyServer(const char* address, std::string body) : body_(std::move(body)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, address, &a.sin_addr);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd_, 16) != 0) return;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~TinyServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++accepted_;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        head.append(buf, static_cast<std::size_t>(n));
      }
      const std::string reply =
          "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body_.size()) +
          "\r\nConnection: close\r\n\r\n" + body_;
      (void)!::write(c, reply.data(), reply.size());
      ::close(c);
    }
  }
  std::string body_;
  int fd_ = -1, port_ = 0;
  std::atomic<int> accepted_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class NetProxyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    ASSERT_GT(local_.port(), 0);
    ASSERT_GT(other_.port(), 0) << "127.0.0.2 cannot be bound here";
    socket_ = dir_.path() + "/moatd.sock";
    ws_ = dir_.path() + "/ws";
    fs::create_directories(ws_);
    fs::create_directories(dir_.path() + "/no-policy");
    pid_ =
        start({moatd_bin(), "--socket", socket_, "--audit-dir", dir_.path() + "/audit",
               "--system-policy-dir", source_root() + "/tests/integration/e2e/net_proxy_policy",
               "--user-policy-dir", dir_.path() + "/no-policy", "--test-resolve",
               "allowed.test=127.0.0.1", "--test-resolve", "denied.test=127.0.0.1",
               "--test-resolve", "rebind.test=127.0.0.2", "--test-resolve", "paste.test=127.0.0.1"},
              dir_.path() + "/moatd.log");
  }
  void TearDown() override { end_moatd(); }
  void end_moatd() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    wait_exit(pid_, 10);
    pid_ = -1;
  }
  std::string moatd_log() const { return read_file(dir_.path() + "/moatd.log"); }

  // Runs each command as a bash call of one session, in order; returns their outputs and
  // fills records_ with the session's `net` records.
  std::vector<std::string> run_session(const std::vector<std::string>& commands) {
    RawClient c(socket_);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
    json welcome = c.read_frame();
    EXPECT_EQ(welcome.value("type", ""), "welcome") << welcome.dump() << moatd_log();
    std::vector<std::string> outputs;
    for (std::size_t i = 0; i < commands.size(); ++i) {
      c.send_json({{"type", "call"},
                   {"id", "c" + std::to_string(i)},
                   {"tool", "bash"},
                   {"arguments", {{"command", commands[i]}}}});
      json r = c.read_frame(120000);
      while (r.value("type", "") == "progress") r = c.read_frame(120000);
      std::string text;
      if (r.contains("content"))
        for (const json& b : r["content"]) text += b.value("text", "");
      outputs.push_back(text);
    }
    c.send_json({{"type", "bye"}});
    c.read_frame();
    std::ifstream in(welcome.value("audit", ""));
    records_.clear();
    all_records_.clear();
    for (std::string line; std::getline(in, line);) {
      json r = json::parse(line, nullptr, false);
      if (r.value("type", "") == "net") records_.push_back(r);
      all_records_.push_back(r);
    }
    return outputs;
  }
  // The net record for `host`, or null.
  json record_for(const std::string& host) const {
    for (const json& r : records_)
      if (r.value("host", "") == host) return r;
    return nullptr;
  }
  void expect_no_server_reached() const {
    EXPECT_EQ(local_.accepted(), 0) << "the allowed server was reached";
    EXPECT_EQ(other_.accepted(), 0) << "the rebinding target was reached";
  }
  std::string url(const std::string& host, int port) const {
    return "http://" + host + ":" + std::to_string(port) + "/";
  }

  TinyServer local_{"127.0.0.1", "hello from the allowed server"};
  TinyServer other_{"127.0.0.2", "the rebinding target answered"};
  TempDir dir_;
  std::string socket_, ws_;
  pid_t pid_ = -1;
  std::vector<json> records_;
  std::vector<json> all_records_;
};

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
  EXPECT_NE(out[2].find("no_proxy=localhost,127.0.0.1"), std::string::npos) << out[2];
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

// The exec record of the call `call_id`'s program named `name` (argv[0]), or null.
json exec_record(const std::vector<json>& records, const std::string& call_id,
                 const std::string& name) {
  for (const json& r : records)
    if (r.value("type", "") == "exec" && r.value("call_id", "") == call_id &&
        r["argv"].is_array() && !r["argv"].empty() && r["argv"][0] == name)
      return r;
  return nullptr;
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

}  // namespace
}  // namespace moat::e2e

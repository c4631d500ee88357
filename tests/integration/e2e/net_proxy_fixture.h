// tests/integration/e2e/net_proxy_fixture.h: a real moatd whose proxy resolves *.test names to
// loopback addresses (--test-resolve), real servers on the host's 127.0.0.1 and 127.0.0.2,
// and sessions whose bash calls reach them through the proxy variables only (issue 18).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e_support.h"

namespace moat::e2e {

using nlohmann::json;
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

// The first IPv4 address of the host's interfaces outside 127.0.0.0/8 (eth0's), or "": what an
// attacker's DNS record can point an allowed name at (issue 26 item 9).
inline std::string own_non_loopback_address() {
  ifaddrs* all = nullptr;
  if (getifaddrs(&all) != 0) return "";
  std::string found;
  for (const ifaddrs* i = all; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, text,
              sizeof text);
    if (std::string(text).rfind("127.", 0) != 0) found = text;
  }
  freeifaddrs(all);
  return found;
}

// The exec record of the call `call_id`'s program named `name` (argv[0]), or null.
inline json exec_record(const std::vector<json>& records, const std::string& call_id,
                        const std::string& name) {
  for (const json& r : records)
    if (r.value("type", "") == "exec" && r.value("call_id", "") == call_id &&
        r["argv"].is_array() && !r["argv"].empty() && r["argv"][0] == name)
      return r;
  return nullptr;
}

// A server script run with python3 on the host (a TLS server, an index): it prints the port
// it listens on as its first line. Killed when destroyed.
class ScriptServer {
 public:
  ScriptServer(const std::string& dir, const std::string& name, const std::string& script,
               const std::vector<std::string>& args) {
    const std::string path = dir + "/" + name + ".py";
    std::ofstream(path) << script;
    log_ = dir + "/" + name + ".log";
    std::vector<std::string> argv = {"python3", path};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = start(argv, log_);
    eventually([&] { return read_file(log_).find('\n') != std::string::npos; });
    port_ = std::atoi(read_file(log_).c_str());
  }
  ~ScriptServer() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    wait_exit(pid_, 10);
  }
  int port() const { return port_; }
  std::string log() const { return read_file(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// The net record of call `call_id`, or null.
inline json net_record_of(const std::vector<json>& records, const std::string& call_id) {
  for (const json& r : records)
    if (r.value("type", "") == "net" && r.value("call_id", "") == call_id) return r;
  return nullptr;
}

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
    std::vector<std::string> argv = {moatd_bin(),
                                     "--socket",
                                     socket_,
                                     "--audit-dir",
                                     dir_.path() + "/audit",
                                     "--system-policy-dir",
                                     source_root() + "/tests/integration/e2e/" + policy_dir(),
                                     "--user-policy-dir",
                                     dir_.path() + "/no-policy",
                                     "--test-resolve",
                                     "allowed.test=127.0.0.1",
                                     "--test-resolve",
                                     "denied.test=127.0.0.1",
                                     "--test-resolve",
                                     "rebind.test=127.0.0.2",
                                     "--test-resolve",
                                     "paste.test=127.0.0.1",
                                     "--test-resolve",
                                     "secure.test=127.0.0.1",
                                     "--test-resolve",
                                     "index.test=127.0.0.1"};
    if (!own_address_.empty())
      argv.insert(argv.end(), {"--test-resolve", "host.example.test=" + own_address_});
    pid_ = start(argv, dir_.path() + "/moatd.log");
  }
  void TearDown() override { end_moatd(); }
  // The system layer's directory below tests/integration/e2e.
  virtual std::string policy_dir() const { return "net_proxy_policy"; }
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
      json r = c.read_result(120000);
      std::string text;
      if (r.contains("content"))
        for (const json& b : r["content"]) text += b.value("text", "");
      outputs.push_back(text);
    }
    c.send_json({{"type", "bye"}});
    c.read_frame();
    audit_path_ = welcome.value("audit", "");
    std::ifstream in(audit_path_);
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

  const std::string own_address_ = own_non_loopback_address();
  TinyServer local_{"127.0.0.1", "hello from the allowed server"};
  TinyServer other_{"127.0.0.2", "the rebinding target answered"};
  TempDir dir_;
  std::string socket_, ws_;
  pid_t pid_ = -1;
  std::vector<json> records_;
  std::vector<json> all_records_;
  std::string audit_path_;  // the last session's audit log
};

}  // namespace moat::e2e

// tests/unit/sandbox/net_proxy_test.cc: the proxy's limits, on the host's loopback (no
// namespaces needed): a real listener, a real server, a real policy.
#include "sandbox/net_proxy.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "tests/support/loopback.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

// Everything the peer sends until it closes (or 10 s pass).
std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 10000) > 0) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

class NetProxyLimits : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("moat-net-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / "user");
    std::ofstream(dir_ / "user" / "n.toml")
        << "schema = 1\n[[network]]\nid = \"t.local\"\ndecision = \"allow\"\n"
           "domains = [\"local.test\", \"127.0.0.1\"]\n";
    policy::LoadOptions o;
    o.system_dir = (dir_ / "none").string();
    o.user_dir = (dir_ / "user").string();
    o.trust_dir = (dir_ / "trust").string();
    o.use_builtin_default = false;
    auto p = policy::Policy::load(o);
    ASSERT_TRUE(p) << p.error().message();
    policy_ = std::move(*p);
    server_fd_ = testing::listen_on_free_port(&server_port_);
    // The server sends 1 MiB to each connection, then closes.
    server_ = std::thread([this] {
      for (;;) {
        UniqueFd c(::accept4(server_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!c.valid()) return;
        const std::string payload(1 << 20, 'x');
        (void)!::send(c.get(), payload.data(), payload.size(), MSG_NOSIGNAL);
      }
    });
  }
  void TearDown() override {
    proxy_.reset();
    ::shutdown(server_fd_.get(), SHUT_RDWR);
    if (server_.joinable()) server_.join();
    std::filesystem::remove_all(dir_);
  }
  void start(NetProxyOptions o) {
    o.resolve_overrides["local.test"] = "127.0.0.1";
    UniqueFd listener = testing::listen_on_free_port(&proxy_port_);
    auto p = NetProxy::start(std::move(listener), *policy_, std::move(o), [this](json r) {
      std::lock_guard<std::mutex> lock(mu_);
      records_.push_back(std::move(r));
      cv_.notify_all();
    });
    ASSERT_TRUE(p) << p.error().message();
    proxy_ = std::move(*p);
  }
  UniqueFd tunnel() {
    UniqueFd c = testing::connect_to_port(proxy_port_);
    const std::string req =
        "CONNECT local.test:" + std::to_string(server_port_) + " HTTP/1.1\r\n\r\n";
    EXPECT_EQ(::write(c.get(), req.data(), req.size()), static_cast<ssize_t>(req.size()));
    return c;
  }
  json wait_record(std::size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(20), [&] { return records_.size() >= n; });
    return records_.size() >= n ? records_[n - 1] : json();
  }

  std::filesystem::path dir_;
  std::unique_ptr<policy::Policy> policy_;
  UniqueFd server_fd_;
  int server_port_ = 0, proxy_port_ = 0;
  std::thread server_;
  std::unique_ptr<NetProxy> proxy_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<json> records_;
};

TEST_F(NetProxyLimits, AnAllowedTunnelCarriesEveryByteAndIsRecorded) {
  start({});
  UniqueFd c = tunnel();
  const std::string got = read_all(c.get());
  EXPECT_EQ(got.size(),
            std::string("HTTP/1.1 200 Connection established\r\n\r\n").size() + (1 << 20));
  json r = wait_record(1);
  EXPECT_EQ(r.value("decision", ""), "allow") << r.dump();
  EXPECT_EQ(r.value("bytes_down", 0), 1 << 20) << r.dump();
  EXPECT_EQ(r.value("address", ""), "127.0.0.1") << r.dump();
}

TEST_F(NetProxyLimits, TheSessionsByteLimitEndsTheConnectionWithARecord) {
  NetProxyOptions o;
  o.max_bytes = 100 * 1024;
  start(o);
  UniqueFd c = tunnel();
  const std::string got = read_all(c.get());
  EXPECT_LT(got.size(), std::size_t{1} << 20);
  json r = wait_record(1);
  EXPECT_NE(r.value("error", "").find("network_bytes limit (102400)"), std::string::npos)
      << r.dump();
}

TEST_F(NetProxyLimits, AConnectionPastTheLimitGetsA503AndARecord) {
  NetProxyOptions o;
  o.max_connections = 1;
  start(o);
  UniqueFd held =
      testing::connect_to_port(proxy_port_);  // holds the one slot: its head never comes
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  UniqueFd c = tunnel();
  const std::string got = read_all(c.get());
  EXPECT_EQ(got.rfind("HTTP/1.1 503", 0), 0u) << got;
  EXPECT_NE(got.find("network_connections limit (1)"), std::string::npos) << got;
  json r = wait_record(1);
  EXPECT_EQ(r.value("rule", ""), "resources.network_connections") << r.dump();
}

TEST_F(NetProxyLimits, AnIdleConnectionIsClosedWithARecord) {
  NetProxyOptions o;
  o.idle_s = 1;
  start(o);
  UniqueFd c = testing::connect_to_port(proxy_port_);  // says nothing
  EXPECT_EQ(read_all(c.get()).rfind("HTTP/1.1 400", 0), 0u);
  json r = wait_record(1);
  EXPECT_NE(r.value("error", "").find("no request head in time"), std::string::npos) << r.dump();
}

}  // namespace
}  // namespace moat::sandbox

// tests/bench/net_proxy_bench.cc: a 100 MB download through the network proxy (a CONNECT
// tunnel, as every https:// URL takes) against the same download straight from the server on
// loopback, measured in the same run; and the time to a first byte per connection, both ways.
// Prints ratios (issue 18's targets: at least 0.8x direct throughput, under 1 ms added).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/net_proxy.h"
#include "sandbox/socket_owner.h"
#include "tests/support/loopback.h"

using namespace moat;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::size_t kDownload = 100u << 20;

// Reads until the peer closes, or until `want` bytes came; returns the bytes read.
std::size_t drain(int fd, std::size_t want) {
  std::vector<char> buf(256 * 1024);
  std::size_t total = 0;
  while (total < want) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    total += static_cast<std::size_t>(n);
  }
  return total;
}

// The server: a one-byte request selects the answer ('b': 100 MB, 's': one byte).
void serve(int listener) {
  const std::vector<char> chunk(1 << 20, 'x');
  for (;;) {
    UniqueFd c(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
    if (!c.valid()) return;
    std::thread([c = std::make_shared<UniqueFd>(std::move(c)), &chunk] {
      char what = 0;
      if (::read(c->get(), &what, 1) != 1) return;
      const std::size_t total = what == 'b' ? kDownload : 1;
      for (std::size_t sent = 0; sent < total;) {
        ssize_t n =
            ::send(c->get(), chunk.data(), std::min(chunk.size(), total - sent), MSG_NOSIGNAL);
        if (n <= 0) return;
        sent += static_cast<std::size_t>(n);
      }
    }).detach();
  }
}

// One request through the proxy's tunnel (or straight to the server when proxy_port is 0).
std::size_t fetch(int proxy_port, int server_port, char what) {
  UniqueFd c = testing::connect_to_port(proxy_port != 0 ? proxy_port : server_port);
  if (proxy_port != 0) {
    const std::string req =
        "CONNECT bench.test:" + std::to_string(server_port) + " HTTP/1.1\r\n\r\n";
    (void)!::write(c.get(), req.data(), req.size());
    std::string reply;
    char ch;
    while (reply.find("\r\n\r\n") == std::string::npos && ::read(c.get(), &ch, 1) == 1) reply += ch;
  }
  (void)!::write(c.get(), &what, 1);
  return drain(c.get(), what == 'b' ? kDownload : 1);
}

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const auto dir =
      std::filesystem::temp_directory_path() / ("moat-netbench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "user");
  std::ofstream(dir / "user" / "n.toml")
      << "schema = 1\n[[network]]\nid = \"b\"\ndecision = "
         "\"allow\"\ndomains = [\"bench.test\", \"127.0.0.1\"]\n";
  policy::LoadOptions lo;
  lo.system_dir = (dir / "none").string();
  lo.user_dir = (dir / "user").string();
  lo.trust_dir = (dir / "trust").string();
  lo.use_builtin_default = false;
  auto policy = policy::Policy::load(lo);
  if (!policy) return std::fprintf(stderr, "%s\n", policy.error().message().c_str()), 1;
  int server_port = 0, proxy_port = 0;
  UniqueFd server = testing::listen_on_free_port(&server_port);
  std::thread(serve, server.get()).detach();
  sandbox::NetProxyOptions o;
  o.max_bytes = std::int64_t{1} << 40;
  o.resolve_overrides["bench.test"] = "127.0.0.1";
  auto proxy = sandbox::NetProxy::start(testing::listen_on_free_port(&proxy_port), **policy, o,
                                        [](nlohmann::json) {});
  if (!proxy) return 1;
  // The same proxy naming each connection's program as moatd does (the socket table, then
  // the client's fds): here the client is this process.
  int named_port = 0;
  o.attribute = [](int client) {
    auto pid = sandbox::socket_peer_pid(client, getpid(), {getpid()});
    return nlohmann::json{{"pid", pid ? *pid : -1}};
  };
  auto named = sandbox::NetProxy::start(testing::listen_on_free_port(&named_port), **policy, o,
                                        [](nlohmann::json) {});
  if (!named) return 1;
  double direct_s = 1e9, proxied_s = 1e9, direct_small = 1e9, proxied_small = 1e9;
  double named_small = 1e9;
  for (int r = 0; r < rounds; ++r) {  // interleaved: load hits both paths alike; best of each
    auto t = Clock::now();
    if (fetch(0, server_port, 'b') != kDownload) return 2;
    direct_s = std::min(direct_s, seconds_since(t));
    t = Clock::now();
    if (fetch(proxy_port, server_port, 'b') != kDownload) return 3;
    proxied_s = std::min(proxied_s, seconds_since(t));
    for (int i = 0; i < 20; ++i) {
      t = Clock::now();
      fetch(0, server_port, 's');
      direct_small = std::min(direct_small, seconds_since(t));
      t = Clock::now();
      fetch(proxy_port, server_port, 's');
      proxied_small = std::min(proxied_small, seconds_since(t));
      t = Clock::now();
      fetch(named_port, server_port, 's');
      named_small = std::min(named_small, seconds_since(t));
    }
  }
  const double mb = static_cast<double>(kDownload) / (1 << 20);
  std::printf(
      "100 MB direct   %8.1f MB/s\n100 MB proxied  %8.1f MB/s\nratio proxied/direct %.2fx "
      "(target >= 0.8x)\n",
      mb / direct_s, mb / proxied_s, direct_s / proxied_s);
  std::printf(
      "connection to first byte: direct %.3f ms, proxied %.3f ms, added %.3f ms (target < 1 ms)\n",
      direct_small * 1e3, proxied_small * 1e3, (proxied_small - direct_small) * 1e3);
  std::printf("naming the connection's program (net record's exec_id): %.3f ms, added %.3f ms\n",
              named_small * 1e3, (named_small - proxied_small) * 1e3);
  std::filesystem::remove_all(dir);
  std::fflush(stdout);
  std::_Exit(0);  // the server's threads are detached
}

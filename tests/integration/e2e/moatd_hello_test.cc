// tests/integration/e2e/moatd_hello_test.cc: the hello's version and a refused hello's answer.
// moat sandbox exec against a moatd of protocol version 1 (one not yet upgraded), which does not
// take an exec pipelined behind the hello: moat says its hello again as version 1 and the
// command runs; against a moatd of version 2, one connection and no wait for the welcome
// (docs/protocol.md, "Versions"). A refused hello is answered, and its connection (a private
// moatd: moat) ends, while the git identity read beside the steps still runs.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/sys.h"
#include "e2e_support.h"
#include "moatd_fixture.h"
#include "sandbox/protocol.h"

namespace moat::e2e {
namespace {

using nlohmann::json;

// A version-1 moatd's answers, word for word from git history (328fedc^:sandbox/supervisor.cc's
// take_fds and sandbox/hello_steps.cc's check_version): what a moatd not yet upgraded says.
constexpr const char* kOldFdsRefusal =
    "file descriptors before 'hello' (only an exec frame carries them: its stdin, stdout and "
    "stderr)";
constexpr const char* kOldVersionRefusal = "protocol version 2 is not supported (this moatd speaks 1)";

// What the front saw of one connection.
struct Seen {
  std::int64_t version = -1;        // the hello's
  bool fds_before_welcome = false;  // fds came before moatd's first byte back
  std::string refusal;              // the front's answer, "" when passed to the real moatd
};

// A moatd's front of protocol version `speaks` on its own socket, with a real moatd behind it.
// Of version 1 it answers a connection as a version-1 moatd did: fds before its welcome
// (pre-pipelining: kOldFdsRefusal), then a hello of another version (kOldVersionRefusal); a
// version-1 hello without fds goes to the real moatd, and so does everything after it, fds and
// all. Of version 2 it passes everything through and only watches.
class MoatdFront {
 public:
  MoatdFront(std::string path, std::string behind, int speaks, bool refuses_early_fds)
      : path_(std::move(path)), behind_(std::move(behind)), speaks_(speaks),
        refuses_early_fds_(refuses_early_fds) {
    auto s = sys::make_socket(AF_UNIX, SOCK_STREAM);
    EXPECT_TRUE(s);
    listener_ = std::move(*s);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    path_.copy(a.sun_path, sizeof a.sun_path - 1);
    EXPECT_EQ(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(listener_.get(), 8), 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~MoatdFront() {
    stop_ = true;
    thread_.join();
  }
  // What it saw of the first `n` connections, once their relays ended (moat returns at the
  // bye's answer, before moatd's end of file reaches the front); fewer when no more came.
  std::vector<Seen> seen(std::size_t n) {
    eventually([&] { return seen_count() >= n; }, std::chrono::seconds(10));
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{listener_.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) != 1) continue;
      UniqueFd c(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c.valid()) continue;
      Seen s = serve_one(c.get());
      std::lock_guard lock(mu_);
      seen_.push_back(s);
    }
  }
  std::size_t seen_count() {
    std::lock_guard lock(mu_);
    return seen_.size();
  }
  // The first frame, as a moatd reads it: whole, fds and all.
  Seen serve_one(int client) {
    Seen s;
    // A moatd takes a moment to accept and start a connection's thread: the client's hello and
    // what it sent behind it are there by its first read.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    sandbox::FrameDecoder decoder;
    std::string bytes;
    std::vector<UniqueFd> fds;
    while (!decoder.holds_frame()) {
      if (!read_some(client, bytes, fds)) return s;
      decoder.feed(bytes.substr(bytes.size() - last_read_));
    }
    s.fds_before_welcome = !fds.empty();
    auto hello = decoder.next();
    if (hello && *hello) s.version = (**hello).value("version", -1);
    if (speaks_ == 1 && refuses_early_fds_ && !fds.empty()) return refuse(client, kOldFdsRefusal, s);
    if (speaks_ == 1 && s.version != 1) return refuse(client, kOldVersionRefusal, s);
    relay(client, bytes, std::move(fds), s);
    return s;
  }
  bool read_some(int fd, std::string& bytes, std::vector<UniqueFd>& fds) {
    char buf[65536];
    UniqueFd got[8];
    std::size_t n = 0;
    auto r = sys::recv_with_fds(fd, buf, sizeof buf, got, 8, &n);
    if (!r || *r == 0) return false;
    bytes.append(buf, *r);
    last_read_ = *r;
    for (std::size_t i = 0; i < n; ++i) fds.push_back(std::move(got[i]));
    return true;
  }
  Seen refuse(int client, const char* message, Seen s) {
    s.refusal = message;
    (void)sandbox::send_frame(client, json{{"type", "error"}, {"message", message}, {"code", "protocol"}});
    return s;
  }
  // The connection passed to the real moatd: what was read first, then both ways until moatd
  // ends it; fds go on with the bytes they came with.
  void relay(int client, const std::string& first, std::vector<UniqueFd> fds, Seen& s) {
    RawClient behind(behind_);
    if (!behind.connected()) return;
    forward(behind.fd(), first, fds);
    bool answered = false;
    for (bool client_open = true;;) {
      pollfd p[2] = {{client, static_cast<short>(client_open ? POLLIN : 0), 0},
                     {behind.fd(), POLLIN, 0}};
      if (::poll(p, 2, 20000) <= 0) return;
      if (p[1].revents != 0) {
        char buf[65536];
        const ssize_t n = ::read(behind.fd(), buf, sizeof buf);
        if (n <= 0) return;
        answered = true;
        if (!sys::write_all(client, buf, static_cast<std::size_t>(n))) return;
      }
      if (client_open && p[0].revents != 0) {
        std::string bytes;
        std::vector<UniqueFd> more;
        if (!read_some(client, bytes, more)) {
          client_open = false;
          ::shutdown(behind.fd(), SHUT_WR);
          continue;
        }
        if (!more.empty() && !answered) s.fds_before_welcome = true;
        forward(behind.fd(), bytes, more);
      }
    }
  }
  static void forward(int to, const std::string& bytes, const std::vector<UniqueFd>& fds) {
    std::vector<int> raw;
    for (const UniqueFd& f : fds) raw.push_back(f.get());
    if (raw.empty()) (void)sys::write_all(to, bytes.data(), bytes.size());
    else (void)sys::send_with_fds(to, bytes.data(), bytes.size(), raw.data(), raw.size());
  }

  std::string path_, behind_;
  const int speaks_;
  const bool refuses_early_fds_;
  UniqueFd listener_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::size_t last_read_ = 0;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

class ProtocolVersionTest : public MoatdFixture {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    MoatdFixture::SetUp();
    front_ = dir_.path() + "/front.sock";
  }
  // `moat sandbox exec --connect` to the front: cat of the workspace's hello.txt.
  e2e::Run exec_through_front() {
    return run({moat_bin(), "sandbox", "exec", "--connect", front_, "-C", ws_, "--", "cat",
                "hello.txt"});
  }
  std::string front_;
};

// A moatd older than the pipelining (328fedc) read moat's hello and the exec's fds behind it in
// one read and refused the fds: the run failed with that. moat now says its hello again as
// version 1 and sends the exec after the welcome.
TEST_F(ProtocolVersionTest, AMoatdThatRefusesFdsBeforeItsWelcomeGetsAVersionOneHelloAndRuns) {
  std::vector<Seen> seen;
  {
    MoatdFront front(front_, socket_, 1, /*refuses_early_fds=*/true);
    const e2e::Run r = exec_through_front();
    EXPECT_EQ(r.exit_code, 0) << r.out << moatd_log();
    EXPECT_EQ(r.out, "hello from the workspace\n");
    seen = front.seen(2);
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].version, sandbox::kPipelinedExecVersion);
  EXPECT_TRUE(seen[0].fds_before_welcome) << "moat pipelines its exec first";
  EXPECT_EQ(seen[0].refusal, kOldFdsRefusal);
  EXPECT_EQ(seen[1].version, 1);
  EXPECT_FALSE(seen[1].fds_before_welcome) << "the exec waits for the welcome";
  EXPECT_EQ(seen[1].refusal, "");
}

// A moatd of version 1 that took a pipelined exec (328fedc to 24d6d8a) refuses a hello of
// version 2 by its version.
TEST_F(ProtocolVersionTest, AMoatdOfVersionOneRefusesVersionTwoAndGetsAVersionOneHello) {
  std::vector<Seen> seen;
  {
    MoatdFront front(front_, socket_, 1, /*refuses_early_fds=*/false);
    const e2e::Run r = exec_through_front();
    EXPECT_EQ(r.exit_code, 0) << r.out << moatd_log();
    EXPECT_EQ(r.out, "hello from the workspace\n");
    seen = front.seen(2);
  }
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].refusal, kOldVersionRefusal);
  EXPECT_EQ(seen[1].version, 1);
  EXPECT_FALSE(seen[1].fds_before_welcome);
}

// The fast path: a moatd of version 2 gets one connection, whose hello says 2, with the exec and
// its fds before the welcome (no round trip more than before the versions).
TEST_F(ProtocolVersionTest, AMoatdOfVersionTwoGetsOneConnectionWithTheExecBeforeItsWelcome) {
  std::vector<Seen> seen;
  {
    MoatdFront front(front_, socket_, 2, /*refuses_early_fds=*/false);
    const e2e::Run r = exec_through_front();
    EXPECT_EQ(r.exit_code, 0) << r.out << moatd_log();
    EXPECT_EQ(r.out, "hello from the workspace\n");
    seen = front.seen(1);
  }
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].version, sandbox::kPipelinedExecVersion);
  EXPECT_TRUE(seen[0].fds_before_welcome);
  EXPECT_EQ(seen[0].refusal, "");
}

// moatd speaks versions 1 and 2, and refuses another naming both; its welcome says the newest.
TEST_F(ProtocolVersionTest, MoatdTakesVersionsOneAndTwoAndRefusesThreeNamingThem) {
  for (int v : {1, 2}) {
    RawClient c(socket_);
    c.send_json({{"type", "hello"}, {"version", v}, {"workspace", ws_}});
    const json w = c.read_frame();
    EXPECT_EQ(w.value("type", ""), "welcome") << v << ": " << w.dump();
    EXPECT_EQ(w.value("version", 0), 2) << w.dump();
  }
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 3}, {"workspace", ws_}});
  const json e = expect_error_then_close(c);
  EXPECT_EQ(e.value("code", ""), "protocol");
  EXPECT_EQ(e.value("message", ""),
            "protocol version 3 is not supported (this moatd speaks 1 to 2)");
}

// A moatd of the test's uid reads the person's git identity (git config --global) beside the
// hello's steps. Here ~/.gitconfig is a FIFO nobody writes: git blocks opening it, until moatd
// kills it after 5 s. A hello refused meanwhile must not wait for it.
class HelloGitIdentityTest : public MoatdProcess {
 protected:
  void SetUp() override {
    if (::access("/usr/bin/git", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/git on this host";
    home_ = dir_.path() + "/home";
    std::filesystem::create_directories(home_);
    ASSERT_EQ(::mkfifo((home_ + "/.gitconfig").c_str(), 0600), 0);
  }
  void TearDown() override {
    // A writer that closes at once: git reads an empty file and ends.
    UniqueFd w(::open((home_ + "/.gitconfig").c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
    MoatdProcess::TearDown();
  }
  // The git processes reading this test's home (the identity read): moatd's children, or an
  // exited private moatd's orphans.
  std::size_t gits_reading_home() {
    std::size_t n = 0;
    std::error_code ec;
    for (const auto& p : std::filesystem::directory_iterator("/proc", ec)) {
      const std::string proc = p.path().string();
      if (read_file(proc + "/comm") != "git\n") continue;
      const std::string env = read_file(proc + "/environ");
      if (env.find("HOME=" + home_ + std::string(1, '\0')) != std::string::npos) ++n;
    }
    return n;
  }
  std::string home_;
};

TEST_F(HelloGitIdentityTest, ARefusedHelloIsAnsweredAndClosedWhileGitStillRuns) {
  start_moatd(default_policy_flags(), {"HOME=" + home_});
  ASSERT_TRUE(eventually([&] { return RawClient(socket_).connected(); })) << moatd_log();
  RawClient c(socket_);
  const auto sent = std::chrono::steady_clock::now();
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", dir_.path() + "/missing"}});
  const json e = c.read_frame(10000);
  EXPECT_EQ(e.value("code", ""), "workspace") << e.dump();
  EXPECT_TRUE(c.closed_by_peer(10000));
  const auto took = std::chrono::steady_clock::now() - sent;
  // Started beside the steps, maybe after the answer; it ends only at its 5 s kill.
  EXPECT_TRUE(eventually([&] { return gits_reading_home() == 1; }, std::chrono::seconds(3)))
      << "git does not run: the test proves nothing";
  EXPECT_LT(took, std::chrono::milliseconds(1500)) << "the refused hello waited for git";
}

// moat sandbox exec on a private moatd waits for it to exit (its session.end): a refused hello
// (--network under a policy without network) ends the run while git still runs.
TEST_F(HelloGitIdentityTest, MoatSandboxExecOfARefusedHelloEndsWhileGitStillRuns) {
  const std::string ws = dir_.path() + "/ws";
  std::filesystem::create_directories(ws);
  const auto started = std::chrono::steady_clock::now();
  const e2e::Run r = run({moat_bin(), "sandbox", "exec", "--private", "--network", "-C", ws,
                          "--audit-dir", dir_.path() + "/audit", "--", "true"},
                         {"HOME=" + home_});
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(r.exit_code, 125) << r.out;
  EXPECT_NE(r.out.find("the network was asked for"), std::string::npos) << r.out;
  EXPECT_TRUE(eventually([&] { return gits_reading_home() == 1; }, std::chrono::seconds(3)))
      << "git does not run: the test proves nothing";
  EXPECT_LT(took, std::chrono::milliseconds(2500)) << "moat waited for moatd's git";
}

}  // namespace
}  // namespace moat::e2e

// tests/integration/e2e/moatd_workspace_test.cc: a shared moatd resolves a hello's workspace
// once, following no symlink. An unprivileged user who swaps their own directory with a symlink
// to a root-owned one while saying hello (issue 12, item 1) never gets a session over it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "moatd_fixture.h"

namespace moat::e2e {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The attacker: a uid that owns nothing but its own directory (not 65534, which root moatd
// maps the sandbox to: the attacker must be a different person from the sandbox).
constexpr uid_t kAttacker = 54321;
constexpr const char* kRootSecret = "root-only secret\n";

// What the attacker saw, reported over a pipe as one line of JSON.
struct Tally {
  int tries = 0, welcomes = 0, refused = 0, wins = 0, first_win = 0;
  std::string won_with;  // the result text that showed the root-owned directory
};

// Runs body in a forked child that has dropped to kAttacker (no groups); returns what it
// returned. The peer credentials moatd sees are the attacker's.
std::string as_attacker(const std::function<std::string()>& body) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return "pipe2 failed";
  pid_t child = fork();
  if (child == 0) {
    close(p[0]);
    std::string out = "cannot drop to the attacker's uid";
    if (setgroups(0, nullptr) == 0 && setresgid(kAttacker, kAttacker, kAttacker) == 0 &&
        setresuid(kAttacker, kAttacker, kAttacker) == 0)
      out = body();
    (void)!write(p[1], out.data(), out.size());
    _exit(0);
  }
  close(p[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(p[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(p[0]);
  waitpid(child, nullptr, 0);
  return out;
}

class Race {
 public:
  Race() {
    root_dir_ = dir_.path() + "/rootdir";
    att_ = dir_.path() + "/att";
    ws_ = att_ + "/ws";
    link_ = att_ + "/link";
    socket_ = dir_.path() + "/moatd.sock";
    fs::create_directories(root_dir_);
    chmod(root_dir_.c_str(), 0700);
    std::ofstream(root_dir_ + "/ROOT_MARKER") << kRootSecret;
    chmod((root_dir_ + "/ROOT_MARKER").c_str(), 0600);
    fs::create_directories(ws_);
    std::ofstream(ws_ + "/USER_MARKER") << "the attacker's own file\n";
    symlink(root_dir_.c_str(), link_.c_str());
    for (const std::string& p : {att_, ws_, ws_ + "/USER_MARKER", link_})
      lchown(p.c_str(), kAttacker, kAttacker);
  }

  const TempDir& dir() const { return dir_; }
  const std::string& socket() const { return socket_; }
  const std::string& root_dir() const { return root_dir_; }
  const std::string& ws() const { return ws_; }

  // Runs the attacker for `seconds` as kAttacker; returns its tally.
  Tally attack(int seconds) {
    json j =
        json::parse(as_attacker([&] { return attacker_in_child(seconds).dump(); }), nullptr, false);
    Tally t;
    if (!j.is_object()) return t;
    t.tries = j.value("tries", 0);
    t.welcomes = j.value("welcomes", 0);
    t.refused = j.value("refused", 0);
    t.wins = j.value("wins", 0);
    t.first_win = j.value("first_win", 0);
    t.won_with = j.value("won_with", "");
    return t;
  }

 private:
  // A session that got the root-owned directory can read its marker (at the workspace path,
  // or at the directory's own path, where the pre-fix moatd mounted it) and write into it.
  json attacker_in_child(int seconds) {
    json tally = {{"tries", 0}, {"welcomes", 0}, {"refused", 0}, {"wins", 0}};
    pid_t swapper = fork();
    if (swapper == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      for (;;) renameat2(AT_FDCWD, ws_.c_str(), AT_FDCWD, link_.c_str(), RENAME_EXCHANGE);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      const int attempt = tally["tries"].get<int>() + 1;
      tally["tries"] = attempt;
      RawClient c(socket_);
      c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws_}, {"headless", true}});
      json w = c.read_frame();
      if (w.value("type", "") != "welcome") {
        tally["refused"] = tally["refused"].get<int>() + 1;
        continue;
      }
      tally["welcomes"] = tally["welcomes"].get<int>() + 1;
      const json calls[] = {{{"type", "call"},
                             {"id", "rel"},
                             {"tool", "read"},
                             {"arguments", {{"path", "ROOT_MARKER"}}}},
                            {{"type", "call"},
                             {"id", "abs"},
                             {"tool", "read"},
                             {"arguments", {{"path", root_dir_ + "/ROOT_MARKER"}}}},
                            {{"type", "call"},
                             {"id", "put"},
                             {"tool", "write"},
                             {"arguments", {{"path", root_dir_ + "/PWNED"}, {"content", "x"}}}},
                            {{"type", "call"},
                             {"id", "own"},
                             {"tool", "write"},
                             {"arguments", {{"path", "from-session.txt"}, {"content", "x"}}}}};
      for (const json& call : calls) c.send_json(call);
      for (int results = 0; results < 4;) {
        json r = c.read_frame();
        if (r.is_null()) break;
        if (r.value("type", "") != "result") continue;
        ++results;
        const std::string text = r.dump();
        // A write's success proves nothing by itself: a session without the directory writes
        // into its private /tmp. Whether one reached the real directory is checked on the host.
        if (text.find("root-only secret") != std::string::npos) {
          tally["wins"] = tally["wins"].get<int>() + 1;
          if (tally["wins"].get<int>() == 1) {
            tally["first_win"] = attempt;
            tally["won_with"] = text;
          }
        }
      }
      c.send_json({{"type", "bye"}});
      c.read_frame(5000);
      if (tally["wins"].get<int>() > 0) break;  // one win is the verdict: stop the clock
    }
    kill(swapper, SIGKILL);
    waitpid(swapper, nullptr, 0);
    return tally;
  }

  TempDir dir_;
  std::string root_dir_, att_, ws_, link_, socket_;
};

// 60 s as the issue asks; MOAT_RACE_SECONDS shortens it for a local run.
int race_seconds() { return std::max(1, std::stoi(env_or("MOAT_RACE_SECONDS", "60"))); }

TEST(MoatdWorkspaceRace, SwappingTheWorkspaceForALinkToARootDirectoryNeverWins) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root: the race is a local user against a moatd running as root";
  Race race;
  const pid_t moatd =
      start({moatd_bin(), "--socket", race.socket(), "--audit-dir", race.dir().path() + "/audit"},
            race.dir().path() + "/moatd.log");
  const int seconds = race_seconds();
  const Tally t = race.attack(seconds);
  const bool moatd_alive = kill(moatd, 0) == 0 && waitpid(moatd, nullptr, WNOHANG) == 0;
  kill(moatd, SIGTERM);
  wait_exit(moatd, 10);
  std::printf("race for %d s: %d hellos, %d welcomes, %d refused, %d wins (first at try %d)\n",
              seconds, t.tries, t.welcomes, t.refused, t.wins, t.first_win);

  EXPECT_EQ(t.wins, 0) << "try " << t.first_win << " got the root-owned directory: " << t.won_with;
  std::vector<std::string> root_entries;
  for (const auto& e : fs::directory_iterator(race.root_dir()))
    root_entries.push_back(e.path().filename().string());
  EXPECT_EQ(root_entries, std::vector<std::string>{"ROOT_MARKER"}) << "a session wrote into it";
  std::ifstream marker(race.root_dir() + "/ROOT_MARKER");
  std::stringstream ss;
  ss << marker.rdbuf();
  EXPECT_EQ(ss.str(), kRootSecret);
  // What the sessions wrote in the attacker's own directory landed as the attacker, never root.
  struct stat st {};
  for (const std::string& dir : {race.ws(), race.dir().path() + "/att/link"})
    if (lstat((dir + "/from-session.txt").c_str(), &st) == 0) {
      EXPECT_EQ(st.st_uid, kAttacker);
    }
  // Both states of the swap were met: the test exercised the race, not only one side of it.
  EXPECT_GT(t.welcomes, 0) << "no hello saw the attacker's own directory";
  EXPECT_GT(t.refused, 0) << "no hello saw the symlink";
  EXPECT_TRUE(moatd_alive);
}

// A test of its own moatd, started once its directories are in place.
using MoatdWorkspace = MoatdProcess;

// The pre-fix moatd resolved the path with realpath (and again when it built the session).
TEST_F(MoatdWorkspace, APathThroughASymlinkIsRefused) {
  fs::create_directories(dir_.path() + "/real/ws");
  fs::create_directory_symlink(dir_.path() + "/real", dir_.path() + "/link");
  start_moatd({"--audit-dir", dir_.path() + "/audit"});
  for (const std::string& ws : {dir_.path() + "/link/ws", dir_.path() + "/link"}) {
    RawClient c(socket_);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws}, {"headless", true}});
    json e = c.read_frame();
    const std::string got = e.value("type", "") + ": " + e.value("message", "");
    EXPECT_EQ(e.value("type", ""), "error") << ws << " got " << got;
    EXPECT_EQ(e.value("code", ""), "workspace") << got;
    EXPECT_NE(e.value("message", "").find("symlink"), std::string::npos) << got;
  }
  stop_moatd();
}

// The ownership rule itself, checked on the opened directory: a peer that is not root gets
// only a directory it owns.
TEST_F(MoatdWorkspace, AnotherUsersDirectoryIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: the peer must be a different uid from moatd";
  fs::create_directories(dir_.path() + "/rootdir");
  start_moatd({"--audit-dir", dir_.path() + "/audit"});
  const std::string out = as_attacker([&] {
    RawClient c(socket_);
    c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", dir_.path() + "/rootdir"}});
    return c.read_frame().dump();
  });
  stop_moatd();
  json e = json::parse(out, nullptr, false);
  ASSERT_TRUE(e.is_object()) << out;
  EXPECT_EQ(e.value("type", ""), "error") << out;
  EXPECT_EQ(e.value("code", ""), "workspace") << out;
  EXPECT_NE(e.value("message", "").find("connecting user"), std::string::npos) << out;
}

// The policy reads the project layer by path; the session runs on the opened directory. A
// loaded project layer must be that directory's own .moat/policy.toml, reached beneath its
// fd: here `.moat` leads outside the workspace, so the pinned file the load found by path is
// not the workspace's, and the hello is refused (the pre-fix moatd applied it).
TEST_F(MoatdWorkspace, AProjectPolicyFoundOutsideTheWorkspaceIsRefused) {
  std::string why;
  if (!sandbox_available(&why)) GTEST_SKIP() << why;
  const std::string ws = dir_.path() + "/ws";
  const std::string trust = "MOAT_TRUST_DIR=" + dir_.path() + "/trust";
  fs::create_directories(ws);
  fs::create_directories(dir_.path() + "/outside/.moat");
  std::ofstream(dir_.path() + "/outside/.moat/policy.toml")
      << "schema = 1\n[[command]]\nid = \"proj.no-ls\"\ndecision = \"deny\"\nprogram = \"ls\"\n";
  fs::create_directory_symlink(dir_.path() + "/outside/.moat", ws + "/.moat");
  const e2e::Run pinned = run({moat_bin(), "policy", "trust", "--workspace", ws}, {trust}, 30);
  ASSERT_EQ(pinned.exit_code, 0) << pinned.out;
  start_moatd({"--audit-dir", dir_.path() + "/audit"}, {trust});
  RawClient c(socket_);
  c.send_json({{"type", "hello"}, {"version", 1}, {"workspace", ws}, {"headless", true}});
  json e = c.read_frame();
  stop_moatd();
  const std::string got = e.value("type", "") + ": " + e.value("message", "");
  EXPECT_EQ(e.value("type", ""), "error") << got;
  EXPECT_EQ(e.value("code", ""), "policy") << got;
  EXPECT_NE(got.find("not the workspace's own"), std::string::npos) << got;
}

}  // namespace
}  // namespace moat::e2e

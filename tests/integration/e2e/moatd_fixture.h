// tests/integration/e2e/moatd_fixture.h: a real moatd serving a socket path for the length
// of one test, with a workspace owned by the test's user; or one the test starts by hand.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace moat::e2e {

// A test with a moatd of its own, started by hand (its flags, its environment) and stopped at
// TearDown: its socket, log and audit folder in the test's directory. A test that must see
// how moatd starts (a refusal, a variable of its environment) starts it when it likes.
class MoatdProcess : public ::testing::Test {
 protected:
  void TearDown() override { stop_moatd(); }

  // `moatd --socket socket_` then `flags`, with `env` added to its environment; its output
  // goes to moatd.log.
  void start_moatd(const std::vector<std::string>& flags,
                   const std::vector<std::string>& env = {}) {
    socket_ = dir_.path() + "/moatd.sock";
    std::vector<std::string> argv = {moatd_bin(), "--socket", socket_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    pid_ = start(argv, dir_.path() + "/moatd.log", env);
  }
  void stop_moatd() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    wait_exit(pid_, 20);
    pid_ = -1;
  }
  bool moatd_alive() { return kill(pid_, 0) == 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  std::string moatd_log() const { return read_file(dir_.path() + "/moatd.log"); }

  // The audit folder in the test's directory and an empty system and user layer: moatd
  // judges by the built-in default policy only.
  std::vector<std::string> default_policy_flags() const {
    std::filesystem::create_directories(dir_.path() + "/no-policy");
    return {"--audit-dir",         dir_.path() + "/audit",
            "--system-policy-dir", dir_.path() + "/no-policy",
            "--user-policy-dir",   dir_.path() + "/no-policy"};
  }
  // An empty workspace, dir/ws.
  void make_workspace() {
    ws_ = dir_.path() + "/ws";
    std::filesystem::create_directories(ws_);
  }

  TempDir dir_;
  std::string socket_;
  std::string ws_;
  pid_t pid_ = -1;
};

// A moatd serving the test from SetUp on, and a workspace holding hello.txt.
class MoatdFixture : public MoatdProcess {
 protected:
  void SetUp() override {
    start_moatd({"--audit-dir", dir_.path() + "/audit"});
    // Clients started at once (MoatdConcurrencyTest) must not race moatd's bind and listen:
    // a `moat sandbox exec --connect` before them fails with ENOENT or ECONNREFUSED.
    ASSERT_TRUE(eventually([&] { return RawClient(socket_).connected(); })) << moatd_log();
    make_workspace();
    std::ofstream(ws_ + "/hello.txt") << "hello from the workspace\n";
  }
  nlohmann::json expect_error_then_close(RawClient& c) {
    nlohmann::json e = c.read_frame();
    EXPECT_EQ(e.value("type", ""), "error") << e.dump();
    EXPECT_TRUE(c.closed_by_peer()) << "moatd closes a connection that broke the protocol";
    return e;
  }
};

}  // namespace moat::e2e

// tests/integration/e2e/moatd_fixture.h: a real moatd serving a socket path for the length
// of one test, with a workspace owned by the test's user.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "e2e_support.h"

namespace moat::e2e {

class MoatdFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.path() + "/moatd.sock";
    pid_ = start({moatd_bin(), "--socket", socket_, "--audit-dir", dir_.path() + "/audit"},
                 dir_.path() + "/moatd.log");
    // Clients started at once (MoatdConcurrencyTest) must not race moatd's bind and listen:
    // a `moat sandbox exec --connect` before them fails with ENOENT or ECONNREFUSED.
    ASSERT_TRUE(eventually([&] { return RawClient(socket_).connected(); })) << moatd_log();
    ws_ = dir_.path() + "/ws";
    std::filesystem::create_directories(ws_);
    std::ofstream(ws_ + "/hello.txt") << "hello from the workspace\n";
  }
  void TearDown() override {
    kill(pid_, SIGTERM);
    wait_exit(pid_, 20);
  }
  bool moatd_alive() { return kill(pid_, 0) == 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  std::string moatd_log() {
    std::ifstream in(dir_.path() + "/moatd.log");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  nlohmann::json expect_error_then_close(RawClient& c) {
    nlohmann::json e = c.read_frame();
    EXPECT_EQ(e.value("type", ""), "error") << e.dump();
    EXPECT_TRUE(c.closed_by_peer()) << "moatd closes a connection that broke the protocol";
    return e;
  }

  TempDir dir_;
  std::string socket_;
  std::string ws_;
  pid_t pid_ = -1;
};

}  // namespace moat::e2e

// tests/integration/e2e/workspace_test.h: the fixture of tests that run moat on a fresh
// workspace: dir_/ws, moat's state and config kept under dir_, skipped without a sandbox.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "e2e_support.h"

namespace moat::e2e {

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    ws_ = dir_.path() + "/ws";
    std::filesystem::create_directories(ws_);
  }
  // The environment of a moat run: its state and config under dir_, the moatd under test.
  std::vector<std::string> env() const {
    return {"XDG_STATE_HOME=" + dir_.path() + "/state",
            "XDG_CONFIG_HOME=" + dir_.path() + "/config", "MOATD_BIN=" + moatd_bin()};
  }
  TempDir dir_;
  std::string ws_;
};

}  // namespace moat::e2e

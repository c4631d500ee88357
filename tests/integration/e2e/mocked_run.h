// tests/integration/e2e/mocked_run.h: `moat run` against the mock model server with its
// streams apart: a workspace, a config.toml naming the mock as provider "mock", a run.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "tests/support/mock_model_server.h"

namespace moat::e2e {

inline constexpr const char* kMockTuning =
    "max_retries = 2\nretry_base_ms = 10\nretry_max_ms = 20\nconnect_timeout_ms = 3000\n"
    "idle_timeout_ms = 2000\n";

// A turn that answers `text`; one that says "Running it." and calls bash with `command`.
inline testing::ScriptedTurn text_turn(const std::string& text) {
  testing::ScriptedTurn t;
  t.text = text;
  return t;
}

inline testing::ScriptedTurn call_turn(const std::string& id, const std::string& command) {
  testing::ScriptedTurn t;
  t.text = "Running it.";
  t.calls.push_back({id, "bash", {{"command", command}}});
  return t;
}

class MockedRun : public ::testing::Test {
 protected:
  // The mock for `api`, and config.toml naming it with these provider keys after its own.
  void start(agent::providers::Api api, const std::string& tuning = kMockTuning) {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    server_ = std::make_unique<testing::MockModelServer>(api);
    api_ = api;
    ws_ = dir_.path() + "/ws";
    std::filesystem::create_directories(ws_);
    std::filesystem::create_directories(dir_.path() + "/config/moat");
    std::ofstream(dir_.path() + "/config/moat/config.toml")
        << server_->provider_toml("mock") << tuning;
  }

  std::vector<std::string> env() const {
    return {"XDG_STATE_HOME=" + dir_.path() + "/state",
            "XDG_CONFIG_HOME=" + dir_.path() + "/config", "MOATD_BIN=" + moatd_bin()};
  }

  // `moat run` on the mock's `model` in the workspace, its records in the test's directory,
  // then `flags`.
  std::vector<std::string> run_argv(const std::vector<std::string>& flags = {},
                                    const std::string& model = "any") const {
    std::vector<std::string> a = {moat_bin(),
                                  "run",
                                  "--model",
                                  "mock/" + model,
                                  "-C",
                                  ws_,
                                  "--sessions-dir",
                                  dir_.path() + "/sessions",
                                  "--audit-dir",
                                  dir_.path() + "/audit"};
    a.insert(a.end(), flags.begin(), flags.end());
    return a;
  }

  // `moat run` with `flags`; `task` words last (none when empty).
  SplitRun moat(const std::vector<std::string>& flags, const std::string& task = "do the task",
                const std::string& stdin_data = "", bool hold_stdin = false) {
    std::vector<std::string> a = run_argv(flags);
    if (!task.empty()) a.push_back(task);
    return run_split(a, env(), 120, stdin_data, hold_stdin);
  }

  TempDir dir_;
  agent::providers::Api api_ = agent::providers::Api::kOpenAiChat;
  std::unique_ptr<testing::MockModelServer> server_;
  std::string ws_;
};

}  // namespace moat::e2e

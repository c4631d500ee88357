// tests/integration/e2e/batch_mock_test.cc: `moat batch` against the mock model server over
// real HTTP, for each wire format (the other batch tests use replay files): every item's
// `moat run` reads config.toml, streams its answers, retries a server error and records the
// usage the server reported, and the patches apply.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "agent/batch/results.h"
#include "tests/integration/e2e/e2e_support.h"
#include "tests/integration/e2e/mocked_run.h"
#include "tests/support/batch_repos.h"
#include "tests/support/mock_model_server.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using agent::providers::Api;
using moat::testing::ScriptedTurn;
using nlohmann::json;

constexpr int kRepos = 4;

// The mocked run's server and config.toml (mocked_run.h); the repositories and the manifest
// in the test's directory.
class BatchMockTest : public MockedRun, public ::testing::WithParamInterface<Api> {
 protected:
  void SetUp() override {
    start(GetParam(), "retry_base_ms = 10\n");
    if (IsSkipped()) return;
    ASSERT_TRUE(moat::testing::make_batch_repos(dir_.path(), kRepos));
    // The manifest's model is the mock's, not the replay file.
    const std::string manifest = read_file(dir_.path() + "/batch.toml");
    const std::string replay = "model = \"replay:rename.replay.jsonl\"";
    std::ofstream(dir_.path() + "/batch.toml")
        << manifest.substr(0, manifest.find(replay)) << "model = \"mock/rename-model\""
        << manifest.substr(manifest.find(replay) + replay.size());
  }
};

// The rename, answered from the request: a first request gets the call, one that already
// holds the call's answer (the model's "Renaming." comes back in it) gets the final words.
ScriptedTurn rename_turn(const json& body, size_t) {
  ScriptedTurn t;
  if (body.dump().find("Renaming.") == std::string::npos) {
    t.text = "Renaming.";
    t.calls = {{"call_rename",
                "bash",
                {{"command",
                  "sed -i 's/compute_total/sum_line_items/g' lib.sh main.sh && echo 'renamed "
                  "compute_total' > NOTES.md"}}}};
  } else {
    t.text = "Done: renamed, tests pass.";
  }
  return t;
}

TEST_P(BatchMockTest, EachItemTalksToTheModelOverHttpAndItsPatchApplies) {
  server_->set_responder(rename_turn);
  server_->inject(moat::testing::Fault::kServerError);  // one item's first request is retried
  const std::string out = dir_.path() + "/out";
  const e2e::Run r = run(
      {moat_bin(), "batch", dir_.path() + "/batch.toml", "--jobs", "2", "--out", out},
      {"XDG_CONFIG_HOME=" + dir_.path() + "/config", "XDG_STATE_HOME=" + dir_.path() + "/state"},
      600);
  ASSERT_EQ(r.exit_code, 0) << r.out << read_file(out + "/items/repo-00/run.log");
  const auto results = agent::batch::parse_results(read_file(out + "/results.jsonl"));
  ASSERT_EQ(results.size(), static_cast<size_t>(kRepos)) << read_file(out + "/results.jsonl");
  // Two answers per item, plus the one the server error cost.
  EXPECT_EQ(server_->request_count(), static_cast<size_t>(2 * kRepos + 1));
  std::set<std::string> sessions;
  for (const auto& res : results) {
    const std::string id = res["id"];
    SCOPED_TRACE(id);
    EXPECT_EQ(res.value("status", ""), "passed") << res.dump();
    EXPECT_EQ(res.value("model", ""), "mock/rename-model");
    EXPECT_EQ(res.value("turns", 0), 2) << res.dump();
    // The usage is what the server counted (Anthropic's prompt is in the cache buckets), not
    // a replay file's numbers.
    const json& u = res["usage"];
    EXPECT_GT(u.value("input", 0) + u.value("cacheRead", 0) + u.value("cacheWrite", 0), 0)
        << res.dump();
    EXPECT_GT(res["usage"].value("output", 0), 0) << res.dump();
    sessions.insert(res.value("session", ""));
    const std::string clone = dir_.path() + "/apply-" + id;
    const e2e::Run a = run({"sh", "-c",
                            "git clone -q '" + dir_.path() + "/" + id + "' '" + clone +
                                "' && cd '" + clone + "' && git apply '" + out + "/patches/" + id +
                                ".patch' && sh run_tests.sh && grep -q renamed NOTES.md"});
    EXPECT_EQ(a.exit_code, 0) << a.out;
  }
  EXPECT_EQ(sessions.size(), static_cast<size_t>(kRepos)) << "each item has a session of its own";
}

INSTANTIATE_TEST_SUITE_P(EachApi, BatchMockTest,
                         ::testing::Values(Api::kOpenAiChat, Api::kAnthropic,
                                           Api::kOpenAiResponses),
                         [](const ::testing::TestParamInfo<Api>& info) {
                           return moat::testing::api_test_name(info.param);
                         });

}  // namespace
}  // namespace moat::e2e

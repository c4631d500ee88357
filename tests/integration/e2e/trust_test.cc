// tests/integration/e2e/trust_test.cc: the project policy (.moat/policy.toml) through
// `moat run` and moatd: skipped while unpinned (headless never trusts, and says so), applied
// once pinned (by `moat policy trust` or the interactive question), skipped again when the
// file changes after pinning, and recorded in session.start either way.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "e2e_support.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The project layer denies `ls`, which the default policy allows: whether the layer was
// loaded shows in which rule decided the model's `ls`.
constexpr const char* kProjectPolicy =
    "schema = 1\n[[command]]\nid = \"proj.no-ls\"\ndecision = \"deny\"\nprogram = \"ls\"\n"
    "reason = \"This project lists files with its own tool.\"\n";

class TrustTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    ws_ = dir_.path() + "/ws";
    fs::create_directories(ws_ + "/.moat");
    std::ofstream(ws_ + "/.moat/policy.toml") << kProjectPolicy;
    script_ = dir_.path() + "/ls.jsonl";
    std::ofstream(script_) << R"({"tool_calls":[{"name":"bash","arguments":{"command":"ls -la"}}]})"
                           << "\n"
                           << R"({"text":"done"})"
                           << "\n";
  }

  std::vector<std::string> env() const {
    std::vector<std::string> e = {"XDG_STATE_HOME=" + dir_.path() + "/state",
                                  "XDG_CONFIG_HOME=" + dir_.path() + "/config",
                                  "MOATD_BIN=" + moatd_bin()};
    if (!trust_dir_.empty()) e.push_back("MOAT_TRUST_DIR=" + trust_dir_);
    return e;
  }

  // One `moat run`, with its own audit directory so each run's records stand apart.
  e2e::Run run_moat(const std::string& mode, const std::string& stdin_data = "") {
    audit_dir_ = dir_.path() + "/audit" + std::to_string(++runs_);
    return run(
        {moat_bin(), "run", mode, "--model", "replay:" + script_, "-C", ws_, "--sessions-dir",
         dir_.path() + "/sessions", "--audit-dir", audit_dir_, "list the files"},
        env(), 120, stdin_data);
  }

  e2e::Run policy_trust(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {moat_bin(), "policy", "trust", "--workspace", ws_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run(argv, env(), 30);
  }

  // Every record of the last run's audit log.
  std::vector<json> records() const {
    std::vector<json> out;
    for (const auto& e : fs::recursive_directory_iterator(audit_dir_)) {
      if (!e.is_regular_file() || e.path().extension() != ".jsonl") continue;
      std::ifstream in(e.path());
      for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(json::parse(line, nullptr, false));
    }
    return out;
  }

  json project_at_start() const {
    for (const auto& r : records())
      if (r.value("type", "") == "session.start") return r.value("project_policy", json());
    return json();
  }

  // The rule that decided the bash call's command line ("" if none was recorded).
  std::string ls_rule() const {
    for (const auto& r : records())
      if (r.value("type", "") == "decision" && r.contains("units") &&
          r["input"].dump().find("ls -la") != std::string::npos)
        return r["deciding_rule"].value("id", "");
    return "";
  }

  TempDir dir_;
  std::string ws_, script_, audit_dir_, trust_dir_;
  int runs_ = 0;
};

TEST_F(TrustTest, HeadlessSkipsAnUnpinnedProjectPolicyWithAWarningAndAnAuditRecord) {
  auto r = run_moat("--headless");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("warning: project policy " + ws_ + "/.moat/policy.toml is skipped"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("moat policy trust"), std::string::npos) << r.out;
  EXPECT_EQ(ls_rule(), "default.read-only");
  const json p = project_at_start();
  ASSERT_TRUE(p.is_object()) << "session.start must say what became of the project layer";
  EXPECT_EQ(p["loaded"], false);
  EXPECT_EQ(p["state"], "untrusted");
  EXPECT_NE(p.value("skipped", "").find("not trusted"), std::string::npos) << p.dump();
  EXPECT_FALSE(fs::exists(dir_.path() + "/state/moat/trust")) << "headless runs never pin";
}

TEST_F(TrustTest, APinnedProjectPolicyAppliesUntilTheFileChangesAndARevokeUndoesIt) {
  auto t = policy_trust();
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_NE(t.out.find("trusted: " + ws_ + "/.moat/policy.toml"), std::string::npos) << t.out;

  auto pinned = run_moat("--headless");
  ASSERT_EQ(pinned.exit_code, 0) << pinned.out;
  EXPECT_EQ(ls_rule(), "proj.no-ls") << pinned.out;
  EXPECT_NE(pinned.out.find("proj.no-ls"), std::string::npos)
      << "the model is told which rule refused";
  EXPECT_EQ(pinned.out.find("warning: project policy"), std::string::npos) << pinned.out;
  EXPECT_EQ(project_at_start()["loaded"], true);

  // Changed after pinning: moatd computes the new hash, it is not the pin, the layer is out.
  std::ofstream(ws_ + "/.moat/policy.toml", std::ios::app) << "# edited after it was trusted\n";
  auto changed = run_moat("--headless");
  ASSERT_EQ(changed.exit_code, 0) << changed.out;
  EXPECT_EQ(ls_rule(), "default.read-only");
  EXPECT_NE(changed.out.find("changed since you trusted it"), std::string::npos) << changed.out;
  EXPECT_EQ(project_at_start()["state"], "changed");
  EXPECT_EQ(project_at_start()["loaded"], false);

  // Trusting the new content, then revoking: skipped again.
  ASSERT_EQ(policy_trust().exit_code, 0);
  ASSERT_EQ(run_moat("--headless").exit_code, 0);
  EXPECT_EQ(ls_rule(), "proj.no-ls");
  auto revoked = policy_trust({"--revoke"});
  ASSERT_EQ(revoked.exit_code, 0) << revoked.out;
  ASSERT_EQ(run_moat("--headless").exit_code, 0);
  EXPECT_EQ(ls_rule(), "default.read-only");
  EXPECT_EQ(project_at_start()["state"], "untrusted");
}

// MOAT_TRUST_DIR moves the pins: `moat policy trust` writes there, and the private moatd that
// `moat run` starts (whose environment is otherwise scrubbed) reads them from there too.
// `moat policy trust` names the files it pinned: a workspace whose only project file is a
// .mcp.json pins that file, and no .moat/policy.toml that does not exist is named.
TEST_F(TrustTest, TrustNamesTheFilesItPinnedAnMcpJsonAlone) {
  fs::remove_all(ws_ + "/.moat");
  std::ofstream(ws_ + "/.mcp.json") << R"({"mcpServers": {"t": {"command": "/bin/true"}}})";
  auto t = policy_trust();
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_NE(t.out.find("trusted: " + ws_ + "/.mcp.json\n"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find(".moat/policy.toml"), std::string::npos) << t.out;
  std::ofstream(ws_ + "/.mcp.json", std::ios::trunc) << "{}";
  fs::remove(ws_ + "/.mcp.json");
  t = policy_trust();
  EXPECT_NE(t.exit_code, 0) << t.out;
  EXPECT_NE(t.out.find("has no .moat/policy.toml, .mcp.json or .vscode/mcp.json"),
            std::string::npos)
      << t.out;
}

TEST_F(TrustTest, PinsInMoatTrustDirReachThePrivateMoatd) {
  trust_dir_ = dir_.path() + "/elsewhere/trust";
  auto t = policy_trust();
  ASSERT_EQ(t.exit_code, 0) << t.out;
  EXPECT_FALSE(fs::exists(dir_.path() + "/state/moat/trust")) << "pinned where MOAT_TRUST_DIR says";
  auto r = run_moat("--headless");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(ls_rule(), "proj.no-ls") << r.out;
  EXPECT_EQ(project_at_start()["loaded"], true) << project_at_start().dump();
}

TEST_F(TrustTest, InteractiveRunsAskShowingPathAndHashAndPinOnYes) {
  auto declined = run_moat("--interactive", "n\n");
  ASSERT_EQ(declined.exit_code, 0) << declined.out;
  EXPECT_NE(declined.out.find("Trust this file?"), std::string::npos) << declined.out;
  EXPECT_NE(declined.out.find(ws_ + "/.moat/policy.toml"), std::string::npos) << declined.out;
  EXPECT_NE(declined.out.find("sha256"), std::string::npos) << declined.out;
  EXPECT_EQ(ls_rule(), "default.read-only");

  auto accepted = run_moat("--interactive", "y\n");
  ASSERT_EQ(accepted.exit_code, 0) << accepted.out;
  EXPECT_NE(accepted.out.find("trusted; pinned"), std::string::npos) << accepted.out;
  EXPECT_EQ(ls_rule(), "proj.no-ls");

  // Pinned and unchanged: no question the next time.
  auto again = run_moat("--interactive", "");
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(again.out.find("Trust this file?"), std::string::npos) << again.out;
  EXPECT_EQ(ls_rule(), "proj.no-ls");

  // Changed: asked again.
  std::ofstream(ws_ + "/.moat/policy.toml", std::ios::app) << "# edited\n";
  auto asked = run_moat("--interactive", "n\n");
  EXPECT_NE(asked.out.find("changed since you trusted it"), std::string::npos) << asked.out;
  EXPECT_EQ(ls_rule(), "default.read-only");
}

}  // namespace
}  // namespace moat::e2e

// tests/unit/agent/trust_prompt_test.cc: the trust question shows every file the pin covers
// (.moat/policy.toml and the imported .mcp.json files), and "y" pins their one hash.
#include "agent/trust_prompt.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "policy/layer.h"

namespace moat::agent {
namespace {

namespace fs = std::filesystem;

// Answers the question with `answer` through a real pipe; returns what was written on stderr.
std::string ask(const std::string& workspace, const std::string& answer, const std::string& err) {
  int p[2];
  EXPECT_EQ(::pipe(p), 0);
  EXPECT_EQ(::write(p[1], answer.data(), answer.size()), static_cast<ssize_t>(answer.size()));
  ::close(p[1]);
  std::fflush(stderr);
  const int saved = ::dup(2);
  EXPECT_TRUE(std::freopen(err.c_str(), "w", stderr) != nullptr);
  settle_project_trust(workspace, /*headless=*/false, p[0]);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  ::close(p[0]);
  std::ifstream in(err);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The pin covers .mcp.json too (its servers run once trusted); the pre-fix question named only
// .moat/policy.toml, so the person trusted servers they were never shown.
TEST(TrustPrompt, TheQuestionListsEveryFileThePinCoversAndYesPinsThem) {
  char tmpl[] = "/tmp/moat-trust-prompt-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string root = fs::canonical(tmpl).string(), ws = root + "/ws";
  fs::create_directories(ws + "/.moat");
  std::ofstream(ws + "/.moat/policy.toml") << "schema = 1\n";
  std::ofstream(ws + "/.mcp.json") << R"({"mcpServers": {"files": {"command": "node"}}})";
  ::setenv("MOAT_TRUST_DIR", (root + "/trust").c_str(), 1);
  const std::string out = ask(ws, "y\n", root + "/stderr");
  EXPECT_NE(out.find(ws + "/.moat/policy.toml"), std::string::npos) << out;
  EXPECT_NE(out.find(ws + "/.mcp.json"), std::string::npos) << out;
  EXPECT_NE(out.find("Trust these files?"), std::string::npos) << out;
  auto t = policy::project_trust(ws, root + "/trust");
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(t->state, policy::TrustState::kTrusted) << out;
  ::unsetenv("MOAT_TRUST_DIR");
  fs::remove_all(root);
}

}  // namespace
}  // namespace moat::agent

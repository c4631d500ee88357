// tests/unit/tools/contract_fixture.h: the fixture of the tool contract tests: a scratch
// workspace, a harness (LocalRunner or the real sandbox) and a policy stub that records
// what it was asked and refuses what a test tells it to.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/tools/harness.h"
#include "tools/registry.h"

namespace moat::tools::testing {

class ToolContractTest : public ::testing::Test {
 public:
  void SetUp() override {
    std::string dir = make_workspace_dir();
    ASSERT_FALSE(dir.empty()) << "mkdtemp failed";
    ws_ = std::filesystem::canonical(dir).string();
    harness_ = make_harness(ws_);
    if (!harness_->skip_reason().empty()) GTEST_SKIP() << harness_->skip_reason();
    ASSERT_EQ(harness_->setup_error(), "");
    ctx_.runner = harness_->runner();
    ctx_.workspace = ws_;
    ctx_.mutations = &queue_;
    ctx_.authorize = [this](const std::string& path,
                            PathAccess access) -> std::optional<std::string> {
      std::lock_guard lock(mu_);
      asked_.emplace_back(path, access);
      if (refused_.count(path)) return "path " + path + " is denied by rule test.deny";
      return std::nullopt;
    };
  }
  void TearDown() override {
    std::error_code ec;
    if (!ws_.empty()) std::filesystem::remove_all(ws_, ec);
  }

  ToolResult run(const std::string& tool, const nlohmann::json& args) {
    CallContext ctx = ctx_;
    return execute(tool, args, ctx);
  }
  static std::string text(const ToolResult& r) {
    std::string out;
    for (const auto& b : r.content)
      if (b.value("type", "") == "text") out += b.value("text", "");
    return out;
  }
  std::string path(const std::string& rel) const { return ws_ + "/" + rel; }
  void write(const std::string& rel, const std::string& content) {
    std::filesystem::create_directories(std::filesystem::path(path(rel)).parent_path());
    std::ofstream(path(rel), std::ios::binary) << content;
  }
  std::string slurp(const std::string& abs) const {
    std::ifstream in(abs, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static std::string numbered_lines(std::size_t n, std::size_t from = 1) {
    std::string s;
    for (std::size_t i = from; i < from + n; ++i) s += "line " + std::to_string(i) + "\n";
    return s;
  }
  void refuse(const std::string& canonical) {
    std::lock_guard lock(mu_);
    refused_.insert(canonical);
  }
  std::vector<std::pair<std::string, PathAccess>> asked() {
    std::lock_guard lock(mu_);
    return asked_;
  }

  std::string ws_;
  std::unique_ptr<Harness> harness_;
  MutationQueue queue_;
  CallContext ctx_;
  std::mutex mu_;
  std::set<std::string> refused_;
  std::vector<std::pair<std::string, PathAccess>> asked_;
};

}  // namespace moat::tools::testing

// tests/unit/tools/descriptions_test.cc: every description is generated from the limits
// the code enforces: each tool states its limits, and no number in any description (or in
// its schema's property descriptions) is anything but one of those constants.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>

#include "tools/registry.h"
#include "tools/truncate.h"

namespace moat::tools {
namespace {

// What each tool's text must state, rendered the way the descriptions render it.
std::map<std::string, std::set<std::string>> expected_limits() {
  const std::string lines = std::to_string(kMaxLines);
  const std::string bytes = format_size(kMaxBytes);
  return {
      {"read", {lines, bytes, format_size(kMaxImageBytes)}},
      // all_tools() states the default limits: 120 s without a timeout, 16 MB of output.
      {"bash", {lines, bytes, "120", format_size(ToolLimits{}.output_ceiling)}},
      {"edit", {}},
      {"write", {}},
      {"grep", {std::to_string(kGrepDefaultLimit), bytes, std::to_string(kGrepMaxLineLength)}},
      {"find", {std::to_string(kFindDefaultLimit), bytes}},
      {"ls", {std::to_string(kLsDefaultLimit), bytes}},
  };
}

// The description plus every description string inside the schema.
std::string all_text(const ToolSpec& spec) {
  std::string text = spec.description;
  for (const auto& [name, prop] : spec.parameters["properties"].items())
    text += "\n" + prop.value("description", "");
  return text;
}

TEST(ToolDescriptions, EachToolStatesTheLimitsItEnforces) {
  const auto expected = expected_limits();
  ASSERT_EQ(all_tools().size(), expected.size());
  for (const auto& spec : all_tools()) {
    SCOPED_TRACE(spec.name);
    ASSERT_TRUE(expected.count(spec.name));
    for (const auto& v : expected.at(spec.name))
      EXPECT_NE(spec.description.find(v), std::string::npos)
          << "missing " << v << " in: " << spec.description;
  }
}

TEST(ToolDescriptions, EveryNumberInADescriptionIsAnEnforcedConstant) {
  const auto expected = expected_limits();
  const std::regex number(R"((\d+(?:\.\d+)?)( (?:B|KB|MB)\b)?)");
  for (const auto& spec : all_tools()) {
    SCOPED_TRACE(spec.name);
    std::string text = all_text(spec);
    // "1-based" describes numbering, not a limit.
    for (std::size_t p; (p = text.find("1-based")) != std::string::npos;) text.erase(p, 7);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), number);
         it != std::sregex_iterator(); ++it) {
      const std::string found = it->str();
      EXPECT_TRUE(expected.at(spec.name).count(found))
          << "stale number " << found << " in: " << text;
    }
  }
}

TEST(ToolDescriptions, BashStatesTheSessionsTimeoutAndOutputCeiling) {
  auto bash_description = [](const ToolLimits& limits) {
    for (const auto& spec : all_tools(limits))
      if (spec.name == "bash") return spec.description;
    return std::string();
  };
  const std::string standard = bash_description(ToolLimits::for_session(600, 16ull << 20));
  EXPECT_NE(standard.find("default 120 s, at most the policy's 600 s"), std::string::npos)
      << standard;
  EXPECT_NE(standard.find("passes 16 MB is killed"), std::string::npos) << standard;
  const std::string tight = bash_description(ToolLimits::for_session(30, 1ull << 20));
  EXPECT_NE(tight.find("default 30 s, at most the policy's 30 s"), std::string::npos) << tight;
  EXPECT_NE(tight.find("passes 1 MB is killed"), std::string::npos) << tight;
}

TEST(ToolSpecs, SchemasAreClosedObjectsWithEveryPropertyDescribed) {
  for (const auto& spec : all_tools()) {
    SCOPED_TRACE(spec.name);
    EXPECT_EQ(spec.parameters["type"], "object");
    EXPECT_EQ(spec.parameters["additionalProperties"], false);
    for (const auto& [name, prop] : spec.parameters["properties"].items())
      EXPECT_FALSE(prop.value("description", "").empty()) << name;
    for (const auto& req : spec.parameters.value("required", nlohmann::json::array()))
      EXPECT_TRUE(spec.parameters["properties"].contains(req.get<std::string>()));
  }
}

TEST(ToolSpecs, OnlyEditAndWriteAreMutations) {
  std::set<std::string> mutating;
  for (const auto& spec : all_tools())
    if (spec.mutates) mutating.insert(spec.name);
  EXPECT_EQ(mutating, (std::set<std::string>{"edit", "write"}));
}

TEST(ToolSpecs, TheModelSeesTheToolsInAFixedOrder) {
  std::vector<std::string> names;
  for (const auto& spec : all_tools()) names.push_back(spec.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"read", "bash", "edit", "write", "grep", "find", "ls"}));
  EXPECT_EQ(find_tool("grep")->name, "grep");
  EXPECT_EQ(find_tool("nope"), nullptr);
}

}  // namespace
}  // namespace moat::tools

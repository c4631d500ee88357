// tests/unit/tools/tool_test.cc: ToolSpec and ToolResult as they cross the wire.
#include <gtest/gtest.h>

#include "tools/registry.h"
#include "tools/tool.h"

namespace moat::tools {
namespace {

TEST(ToolSpec, EveryToolSurvivesTheWelcomeFrameUnchanged) {
  for (const ToolSpec& spec : all_tools()) {
    SCOPED_TRACE(spec.name);
    auto back = ToolSpec::from_json(nlohmann::json::parse(spec.to_json().dump()));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->name, spec.name);
    EXPECT_EQ(back->description, spec.description);
    EXPECT_EQ(back->parameters, spec.parameters);
    EXPECT_EQ(back->mutates, spec.mutates);
    EXPECT_EQ(back->sequential, spec.sequential);
  }
}

TEST(ToolSpec, AnEntryWithoutAStringNameIsSkippedAndMissingFieldsKeepTheirDefaults) {
  EXPECT_FALSE(ToolSpec::from_json({{"description", "no name"}}).has_value());
  EXPECT_FALSE(ToolSpec::from_json({{"name", 7}}).has_value());
  EXPECT_FALSE(ToolSpec::from_json("read").has_value());
  auto bare = ToolSpec::from_json({{"name", "x"}});
  ASSERT_TRUE(bare.has_value());
  EXPECT_EQ(bare->description, "");
  EXPECT_EQ(bare->parameters, nlohmann::json::object());
  EXPECT_FALSE(bare->mutates);
  EXPECT_FALSE(bare->sequential);
}

TEST(ToolResult, SurvivesTheResultFrameUnchanged) {
  ToolResult r = ToolResult::error("no");
  r.details = {{"exitCode", 2}};
  ToolResult back = ToolResult::from_json(nlohmann::json::parse(r.to_json().dump()));
  EXPECT_TRUE(back.is_error);
  EXPECT_EQ(back.content, r.content);
  EXPECT_EQ(back.details, r.details);
}

}  // namespace
}  // namespace moat::tools

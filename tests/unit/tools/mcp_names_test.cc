// tests/unit/tools/mcp_names_test.cc: MCP server and tool names (tools/mcp_names.h).
#include "tools/mcp_names.h"

#include <gtest/gtest.h>

namespace moat::tools::mcp {
namespace {

TEST(McpNames, ModelAndPolicyNamesRoundTrip) {
  auto name = model_tool_name("files", "read_file");
  ASSERT_TRUE(name) << name.error().message();
  EXPECT_EQ(*name, "mcp__files__read_file");
  EXPECT_TRUE(is_model_tool_name(*name));
  EXPECT_EQ(parse_tool_name(*name), (ToolRef{"files", "read_file"}));
  EXPECT_EQ(policy_tool_name("files", "read_file"), "mcp:files:read_file");
  EXPECT_EQ(parse_tool_name("mcp:files:read_file"), (ToolRef{"files", "read_file"}));
}

TEST(McpNames, AToolNameMayHoldTheSeparatorTheServerNameMayNot) {
  EXPECT_EQ(parse_tool_name("mcp__gh__list__all"), (ToolRef{"gh", "list__all"}));
  EXPECT_FALSE(check_server_name("a__b"));
}

TEST(McpNames, BadServerNamesAreRefusedSayingWhatIsAccepted) {
  for (const char* bad : {"", "has space", "a.b", "x__y", "ünï",
                          "a123456789012345678901234567890123"}) {
    SCOPED_TRACE(bad);
    auto r = check_server_name(bad);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("expected 1 to 32 of A-Z a-z 0-9 _ -"), std::string::npos);
  }
  EXPECT_EQ(check_server_name("x\x1b[2J").error().message(),
            "MCP server name 'x\\x1b[2J': expected 1 to 32 of A-Z a-z 0-9 _ -, without \"__\"");
  EXPECT_TRUE(check_server_name("my-server_2"));
}

TEST(McpNames, AToolWhoseModelNameBreaksTheProvidersRuleIsNotOffered) {
  const std::string long_tool(64 - std::string("mcp__s__").size() + 1, 't');
  auto r = model_tool_name("s", long_tool);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("not offered"), std::string::npos) << r.error().message();
  EXPECT_TRUE(model_tool_name("s", long_tool.substr(1)));
  EXPECT_FALSE(model_tool_name("s", "read file"));
  EXPECT_FALSE(model_tool_name("s", ""));
}

TEST(McpNames, OtherNamesAreNotMcpNames) {
  for (const char* other : {"bash", "mcp__", "mcp__files", "mcp__files__", "mcp:files",
                            "mcp::tool", "mcp__a.b__t"}) {
    SCOPED_TRACE(other);
    EXPECT_EQ(parse_tool_name(other), std::nullopt);
  }
}

}  // namespace
}  // namespace moat::tools::mcp

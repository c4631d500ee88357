// tests/unit/agent/providers/request_bytes_test.cc: what every turn pays for before the
// conversation itself: the system prompt and the tool schemas of the first request, with the
// real tool set, in each wire format (issue 19, item 4). Prints the bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "agent/providers/prompt.h"
#include "agent/providers/request_body.h"
#include "tools/registry.h"

namespace moat::agent::providers {
namespace {

using nlohmann::json;

std::vector<tools::ToolSpec> tools_named(const std::vector<std::string>& names) {
  std::vector<tools::ToolSpec> out;
  for (const auto& t : tools::all_tools())
    if (names.empty() || std::find(names.begin(), names.end(), t.name) != names.end())
      out.push_back(t);
  return out;
}

// The bytes of the body that are the same on every turn: the system prompt and the tools,
// as the format renders them.
std::size_t fixed_bytes(const char* format, const ModelRequest& r) {
  const BodyOptions o{"m", false, false};
  const std::string f = format;
  const json body = f == "anthropic" ? anthropic_body(r, o)
                    : f == "openai"  ? openai_chat_body(r, o)
                                     : responses_body(r, o);
  return r.system.size() + body["tools"].dump().size();
}

void expect_within(const std::vector<std::string>& names, std::size_t budget) {
  PromptInputs in;
  in.tools = tools_named(names);
  in.workspace = "/home/user/project";
  ModelRequest r;
  r.system = assemble_system_prompt(in);
  r.tools = in.tools;
  r.messages = {{{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "hi"}}})}}};
  for (const char* format : {"anthropic", "openai", "responses"}) {
    const std::size_t n = fixed_bytes(format, r);
    std::printf(
        "[ request bytes ] %zu tools, %-9s system %zu B + tools %zu B = %zu B (budget %zu)\n",
        in.tools.size(), format, r.system.size(), n - r.system.size(), n, budget);
    EXPECT_LE(n, budget) << format;
  }
}

// pi's default set (read, bash, edit, write) costs 5.4 KB of system prompt and schemas.
TEST(RequestBytes, TheFourToolsPiOffersFitInPisBytes) {
  expect_within({"read", "bash", "edit", "write"}, 5400);
}

TEST(RequestBytes, AllSevenToolsFitInSevenKilobytes) { expect_within({}, 7000); }

// The descriptions live in the tool schemas only; the prompt names the tools. And nothing is
// escaped that no provider needs escaped: an apostrophe is an apostrophe.
TEST(RequestBytes, ThePromptNamesEachToolOnceAndEscapesNoApostrophe) {
  PromptInputs in;
  in.tools = tools_named({});
  const std::string system = assemble_system_prompt(in);
  EXPECT_EQ(system.find("&apos;"), std::string::npos) << system;
  for (const auto& t : in.tools) {
    EXPECT_NE(system.find(t.name), std::string::npos) << t.name;
    const std::string first_line = t.description.substr(0, t.description.find('\n'));
    EXPECT_EQ(system.find(first_line.substr(0, 40)), std::string::npos) << t.name;
  }
}

}  // namespace
}  // namespace moat::agent::providers

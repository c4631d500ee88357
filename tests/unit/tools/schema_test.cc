// tests/unit/tools/schema_test.cc: validation lists every offending field; repairs are
// deterministic and only the documented ones.
#include "tools/schema.h"

#include <gtest/gtest.h>

#include "tools/registry.h"

namespace moat::tools {
namespace {

TEST(ValidateAgainstSchema, ListsEveryOffendingFieldWithItsPath) {
  const auto& schema = find_tool("edit")->parameters;
  const auto errors = validate_against_schema(
      {{"path", 7}, {"edits", {{{"oldText", ""}, {"newText", "x"}, {"extra", 1}}, "str"}}}, schema);
  const std::vector<std::string> expected = {
      "edits[0].extra: unknown field (allowed: newText, oldText)",
      "edits[0].oldText: must not be empty", "edits[1]: expected object, got string",
      "path: expected string, got integer"};
  EXPECT_EQ(errors, expected);
}

TEST(ValidateAgainstSchema, ArgumentsThatAreNotAnObjectAreOneError) {
  const auto errors =
      validate_against_schema(nlohmann::json::array(), find_tool("read")->parameters);
  EXPECT_EQ(errors, std::vector<std::string>{"arguments: expected object, got array"});
}

TEST(ValidateAgainstSchema, WholeFloatsCountAsIntegers) {
  EXPECT_TRUE(
      validate_against_schema({{"path", "a"}, {"offset", 3.0}}, find_tool("read")->parameters)
          .empty());
  EXPECT_FALSE(
      validate_against_schema({{"path", "a"}, {"offset", 3.5}}, find_tool("read")->parameters)
          .empty());
}

TEST(RepairArguments, ArgumentsGivenAsAJsonStringAreParsed) {
  std::vector<std::string> notes;
  const auto out = repair_arguments("read", R"({"path":"a"})", &notes);
  EXPECT_EQ(out, (nlohmann::json{{"path", "a"}}));
  EXPECT_EQ(notes, std::vector<std::string>{"arguments: parsed a JSON string into an object"});
}

TEST(RepairArguments, NonNumericStringsAreLeftForValidationToReport) {
  std::vector<std::string> notes;
  const auto out = repair_arguments("read", {{"path", "a"}, {"offset", "ten"}}, &notes);
  EXPECT_EQ(out["offset"], "ten");
  EXPECT_TRUE(notes.empty());
}

TEST(RepairArguments, TopLevelEditFieldsJoinExistingEdits) {
  std::vector<std::string> notes;
  const auto out = repair_arguments("edit",
                                    {{"path", "f"},
                                     {"edits", {{{"oldText", "a"}, {"newText", "b"}}}},
                                     {"oldText", "c"},
                                     {"newText", "d"}},
                                    &notes);
  ASSERT_EQ(out["edits"].size(), 2u);
  EXPECT_EQ(out["edits"][1], (nlohmann::json{{"oldText", "c"}, {"newText", "d"}}));
  EXPECT_FALSE(out.contains("oldText"));
}

}  // namespace
}  // namespace moat::tools

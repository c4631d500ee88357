// tests/unit/agent/batch/item_result_test.cc: an item's results line as a typed record
// (agent/batch/item_result.h): the bytes item.cc writes survive a decode and an encode, the
// decoder names a field it refuses, and docs/batch.md lists every field the encoder writes.
#include "agent/batch/item_result.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace moat::agent::batch {
namespace {

using nlohmann::json;

// Every field set, as a finished url item with a check and flagged programs writes it.
ItemResult full_result() {
  ItemResult r;
  r.id = "svc-c";
  r.repo = r.model = "m";
  r.url = "https://example.com/svc-c.git";
  r.ref = "release/1.x";
  r.clone = CloneUsed{"clones/k/repo.bundle", "clones/k/clone.log", true};
  r.status = "failed";
  r.reason = "the check failed";
  r.exit = 0;
  r.agent = RunEnd{0, 12.5, 0, false};
  r.check = CheckEnd{RunEnd{-1, 3.25, 9, true}, "make test", false,
                     AuditSide{"items/svc-c/check-audit/a.jsonl", 1, {{"sh -c x", "org.ask"}}}};
  r.session = "0193";
  r.session_file = "items/svc-c/sessions/s.jsonl";
  r.turns = 4;
  r.usage = json{{"input", 10}, {"output", 2}};
  r.cost = 0.0125;
  r.audit = AuditSide{"items/svc-c/audit/a.jsonl", 2, {{"curl x", "org.net"}}};
  r.start_commit = "abc123";
  r.patch = "patches/svc-c.patch";
  r.patch_bytes = 712;
  r.wall_seconds = 20.75;
  r.host_executed = std::vector<std::string>{".envrc"};
  r.steps = {{"workCopy", 1.5}, {"agent", 12.5}, {"pages", 0.25}, {"check", 3.25},
             {"patch", 0.5}};
  return r;
}

TEST(ItemResultLine, ALineWithEveryFieldDecodesAndEncodesToTheSameBytes) {
  const std::string line = to_json(full_result()).dump();
  auto decoded = item_result_from_json(json::parse(line));
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(to_json(*decoded).dump(), line);
}

TEST(ItemResultLine, AnErrorLineKeepsOnlyTheFieldsItsItemGotTo) {
  const std::string line =
      R"({"id":"a","model":"replay","reason":"work copy: git clone failed","repo":"/r",)"
      R"("status":"error","steps":{"workCopy":0.5}})";
  auto decoded = item_result_from_json(json::parse(line));
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_FALSE(decoded->agent.has_value());
  EXPECT_EQ(to_json(*decoded).dump(), line);
}

TEST(ItemResultLine, TheDecoderNamesTheFieldItRefuses) {
  auto no_id = item_result_from_json(json{{"status", "passed"}});
  ASSERT_FALSE(no_id);
  EXPECT_EQ(no_id.error().message(), "results line: \"id\" is not a string");
  auto bad_exit = item_result_from_json(json{{"id", "a"}, {"check", {{"exit", "1"}}}});
  ASSERT_FALSE(bad_exit);
  EXPECT_EQ(bad_exit.error().message(), "results line: \"exit\" is not an integer");
}

// docs/batch.md's paragraph on OUT/results.jsonl, up to the blank line that ends it.
std::string results_paragraph() {
  std::ifstream in(std::string(MOAT_SOURCE_ROOT) + "/docs/batch.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const auto start = doc.find("`OUT/results.jsonl`, one line per finished item:");
  EXPECT_NE(start, std::string::npos);
  return doc.substr(start, doc.find("\n\n", start) - start);
}

void collect_keys(const json& j, std::set<std::string>& keys) {
  if (!j.is_object()) return;
  for (const auto& [k, v] : j.items()) {
    keys.insert(k);
    if (k != "usage") collect_keys(v.is_array() && !v.empty() ? v[0] : v, keys);
  }
}

TEST(ItemResultLine, DocsBatchMdListsEveryFieldTheEncoderWrites) {
  const std::string para = results_paragraph();
  std::set<std::string> documented;
  const std::regex code("`([^`]*)`"), word("[A-Za-z]+");  // `{argv, rule}` names two
  for (std::sregex_iterator it(para.begin(), para.end(), code), end; it != end; ++it) {
    const std::string span = (*it)[1];
    for (std::sregex_iterator w(span.begin(), span.end(), word); w != end; ++w)
      documented.insert(w->str());
  }
  const json full = to_json(full_result());
  std::set<std::string> written;
  collect_keys(full, written);
  for (const std::string& k : written) EXPECT_TRUE(documented.count(k)) << k << " is undocumented";
  std::set<std::string> top;
  for (const auto& [k, v] : full.items()) top.insert(k);
  EXPECT_EQ(top, std::set<std::string>(std::begin(kItemResultFields), std::end(kItemResultFields)));
}

}  // namespace
}  // namespace moat::agent::batch

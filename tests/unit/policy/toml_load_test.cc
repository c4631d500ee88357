// tests/unit/policy/toml_load_test.cc: policy files to PolicyFile, and every error naming
// file:line:col, the key and what is accepted.
#include "policy/toml_load.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "policy/quantity.h"

namespace moat::policy {
namespace {

using ::testing::HasSubstr;

Result<PolicyFile> parse(const std::string& text, bool strict = true,
                         std::vector<std::string>* notices = nullptr) {
  ParseOptions o;
  o.file = "t.toml";
  o.unknown_keys_are_errors = strict;
  return parse_policy_text(text, o, notices);
}

std::string error_of(const std::string& text) {
  auto r = parse(text);
  EXPECT_FALSE(r.has_value()) << text;
  return r ? "" : r.error().message();
}

TEST(TomlLoad, ReadsEveryTable) {
  auto p = parse(R"(schema = 1
defaults = { command = "deny", unparseable_shell = "ask" }
resources = { wall_time = "1h30m", memory = "512MiB", pids = 64 }
[layer]
name = "acme"
revision = "7"
[constraints]
managed_allows_only = ["network", "command"]
audit_required = true
[[command]]
id = "a.b"
decision = "allow"
program = ["git"]
args = [["status", "log"], "**"]
no_flag = "-c"
unless = { any_arg = ["x"] }
tests.match = ["git status"]
[[path]]
id = "p"
decision = "deny"
access = "write"
paths = [".git/config"]
[[network]]
id = "n"
decision = "deny"
domains = ["*.example.com"]
ports = [443]
[[tool]]
id = "t"
decision = "deny"
tool = "mcp:*"
unless = { server = ["jira"] }
)");
  ASSERT_TRUE(p.has_value()) << p.error().message();
  EXPECT_EQ(*p->defaults.command, Verdict::kDeny);
  EXPECT_EQ(*p->resources.wall_time, 5400);
  EXPECT_EQ(*p->resources.memory, 512 << 20);
  EXPECT_EQ(p->layer.name, "acme");
  ASSERT_TRUE(p->constraints.has_value());
  EXPECT_TRUE(p->constraints->audit_required);
  ASSERT_EQ(p->command.size(), 1u);
  EXPECT_EQ(p->command[0].pos.line, 10);
  EXPECT_EQ(p->command[0].args[0].alternatives, (Strings{"status", "log"}));
  EXPECT_EQ(p->command[0].no_flag, (Strings{"-c"}));
  EXPECT_EQ(p->command[0].tests.match, (Strings{"git status"}));
  EXPECT_EQ(p->path[0].access, (Strings{"write"}));
  EXPECT_EQ(p->network[0].ports, (std::vector<std::int64_t>{443}));
  EXPECT_EQ(p->tool[0].unless.server, (Strings{"jira"}));
  EXPECT_EQ(p->defaults_pos.line, 2);
}

TEST(TomlLoad, SyntaxErrorsNameFileLineAndColumn) {
  EXPECT_THAT(error_of("schema = 1\n[[command]\n"), HasSubstr("t.toml:2:"));
  EXPECT_THAT(error_of("schema = 1\nx = \"unterminated\n"), HasSubstr("t.toml:2:"));
}

TEST(TomlLoad, UnknownKeysNameTheKeyAndWhatIsAccepted) {
  std::string e =
      error_of("schema = 1\n[[command]]\nid = \"a\"\ndecision = \"deny\"\nprogramm = \"rm\"\n");
  EXPECT_THAT(e, HasSubstr("t.toml:5:1: command[0].programm: unknown key"));
  EXPECT_THAT(e, HasSubstr("program_paths"));
  EXPECT_THAT(error_of("schema = 1\nfoo = 1\n"), HasSubstr("t.toml:2:1: foo: unknown key"));
  EXPECT_THAT(error_of("schema = 1\ndefaults = { comand = \"ask\" }\n"),
              HasSubstr("defaults.comand"));
}

TEST(TomlLoad, UnknownKeysBecomeNoticesWhenLenient) {
  std::vector<std::string> notices;
  auto p = parse("schema = 1\nfoo = 1\n", false, &notices);
  ASSERT_TRUE(p.has_value());
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_THAT(notices[0], HasSubstr("t.toml:2:1: foo"));
}

TEST(TomlLoad, WrongTypesAndValuesNameTheAcceptedOnes) {
  EXPECT_THAT(error_of("schema = 1\n[[command]]\nid = \"a\"\ndecision = \"permit\"\n"),
              HasSubstr("t.toml:4:12: command[0].decision: expected one of \"allow\", \"ask\", "
                        "\"deny\", got \"permit\""));
  EXPECT_THAT(error_of("schema = 1\n[[command]]\nid = \"a\"\ndecision = 1\n"),
              HasSubstr("expected a string, got an integer"));
  EXPECT_THAT(error_of("schema = 2\n"),
              HasSubstr("t.toml:1:10: schema: expected an integer from 1 to 1"));
  EXPECT_THAT(error_of("schema = 1\nresources = { pids = 0 }\n"), HasSubstr("resources.pids"));
  EXPECT_THAT(error_of("schema = 1\nresources = { memory = \"4 parsecs\" }\n"),
              HasSubstr("expected a size"));
  EXPECT_THAT(error_of("schema = 1\n[[path]]\nid = \"p\"\ndecision = \"deny\"\naccess = "
                       "[\"delete\"]\npaths = [\"x\"]\n"),
              HasSubstr("expected any of \"read\", \"write\", \"exec\""));
  EXPECT_THAT(error_of("schema = 1\n[[command]]\ndecision = \"deny\"\n"),
              HasSubstr("command[0].id: required key is missing"));
  EXPECT_THAT(
      error_of(
          "schema = 1\n[[command]]\nid = \"a\"\ndecision = \"deny\"\nargs = [\"**\", \"x\"]\n"),
      HasSubstr("must be the last"));
  EXPECT_THAT(
      error_of("schema = 1\n[[command]]\nid = \"a\"\ndecision = \"deny\"\nsha256 = \"zz\"\n"),
      HasSubstr("64 hex digits"));
  EXPECT_THAT(error_of(""), HasSubstr("schema: required key is missing"));
}

TEST(TomlLoad, NetworkAllowLoadsWithItsDomainsNormalised) {
  auto p = parse(
      "schema = 1\n[[network]]\nid = \"n\"\ndecision = \"allow\"\n"
      "domains = [\"X.org.\", \"*.Mirror.org\", \"[::1]\"]\n");
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->network[0].decision, Verdict::kAllow);
  EXPECT_EQ(p->network[0].domains, (Strings{"x.org", "*.mirror.org", "::1"}));
}

TEST(TomlLoad, ADomainThatIsNotAHostIsAnErrorNamingIt) {
  EXPECT_THAT(
      error_of("schema = 1\n[[network]]\nid = \"n\"\ndecision = \"allow\"\ndomains = [\"*\"]\n"),
      HasSubstr("t.toml:5:11: network[0].domains: '*' is not a host name"));
}

TEST(TomlLoad, DuplicateIdsAreErrors) {
  EXPECT_THAT(
      error_of("schema = 1\n[[command]]\nid = \"a\"\ndecision = \"deny\"\n[[path]]\nid = \"a\"\n"
               "decision = \"deny\"\naccess = \"read\"\npaths = \"x\"\n"),
      HasSubstr("t.toml:5:1: id: \"a\" is used by an earlier rule"));
}

TEST(TomlLoad, DurationsAndSizesParse) {
  EXPECT_EQ(*parse_duration_seconds("90"), 90);
  EXPECT_EQ(*parse_duration_seconds("10m"), 600);
  EXPECT_EQ(*parse_duration_seconds("1h30m"), 5400);
  EXPECT_FALSE(parse_duration_seconds("10x").has_value());
  EXPECT_FALSE(parse_duration_seconds("").has_value());
  EXPECT_FALSE(parse_duration_seconds("m").has_value());
  EXPECT_EQ(*parse_size_bytes("4GiB"), std::int64_t{4} << 30);
  EXPECT_EQ(*parse_size_bytes("16MiB"), 16 << 20);
  EXPECT_EQ(*parse_size_bytes("1000"), 1000);
  EXPECT_FALSE(parse_size_bytes("99999999999999999999GiB").has_value());
}

TEST(TomlLoad, EveryTruncationFailsCleanlyOrParses) {
  const std::string file =
      "schema = 1\n[[command]]\nid = \"a\"\ndecision = \"deny\"\nprogram = [\"rm\"]\nany_flag = "
      "[\"-r\"]\n";
  for (std::size_t cut = 0; cut <= file.size(); ++cut) {
    SCOPED_TRACE("cut at byte " + std::to_string(cut));
    auto r = parse(file.substr(0, cut));
    if (!r) {
      EXPECT_THAT(r.error().message(), ::testing::MatchesRegex("t\\.toml:[0-9]+:[0-9]+: .*"));
    }
  }
}

// A deterministic stand-in for the libFuzzer target (tests/fuzz), run on every test run:
// byte-level mutations of the shipped policies never crash the loader, and every error
// names file:line:col.
TEST(TomlLoad, MutatedPoliciesNeverCrashAndErrorsAlwaysNameAPosition) {
  std::string seed;
  {
    std::ifstream in(std::string(MOAT_SOURCE_ROOT) + "/examples/policies/org.toml");
    std::stringstream ss;
    ss << in.rdbuf();
    seed = ss.str();
  }
  ASSERT_FALSE(seed.empty());
  std::mt19937 rng(20260302);
  const char kBytes[] = "[]{}=\"'#\n\\.,:0123456789abcxyz-_ \t\x00\xff";
  int failures = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text = seed;
    int edits = 1 + static_cast<int>(rng() % 8);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      std::size_t at = rng() % text.size();
      switch (rng() % 4) {
        case 0: text[at] = kBytes[rng() % (sizeof kBytes - 1)]; break;
        case 1: text.erase(at, 1 + rng() % 16); break;
        case 2: text.insert(at, 1, kBytes[rng() % (sizeof kBytes - 1)]); break;
        default: text.insert(at, text.substr(rng() % text.size(), rng() % 40)); break;
      }
    }
    auto r = parse(text);
    if (r) continue;
    ++failures;
    ASSERT_TRUE(std::regex_search(r.error().message(), std::regex("^t\\.toml:[0-9]+:[0-9]+: ")))
        << r.error().message();
  }
  EXPECT_GT(failures, 1000);  // the mutations do reach the error paths
}

TEST(TomlLoad, OversizedFilesAreRefused) {
  EXPECT_THAT(error_of(std::string(kMaxPolicyFileBytes + 1, '#')), HasSubstr("larger than"));
}

}  // namespace
}  // namespace moat::policy

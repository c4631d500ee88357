// tests/unit/policy/ceilings_test.cc: which layer sets each resource ceiling (policy/ceilings.cc),
// as `moat policy list` shows it and `moat policy lint` warns of a ceiling that does nothing
// (issue 27 item 7).
#include "policy/ceilings.h"

#include <gtest/gtest.h>

#include <map>

#include "policy/lint.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using testing::PolicyWorld;
using testing::write_file;

std::map<std::string, CeilingSource> by_key(const LoadOptions& o) {
  auto layers = load_layers(o, nullptr);
  EXPECT_TRUE(layers.has_value());
  std::map<std::string, CeilingSource> out;
  if (layers)
    for (const auto& c : ceiling_sources(*layers)) out[c.key] = c;
  return out;
}

TEST(Ceilings, EachNamesTheLayerThatSetItAndAgreesWithTheEffectiveCeilings) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/10.toml",
             "schema = 1\nresources = { wall_time = \"1h\", pids = 4096 }\n");
  write_file(w.root + "/cli.toml", "schema = 1\nresources = { wall_time = \"20m\" }\n");
  w.options.extra_files = {w.root + "/cli.toml"};
  auto p = w.load();
  ASSERT_TRUE(p);
  auto c = by_key(w.options);
  EXPECT_EQ(c["wall_time"].value, p->resources().wall_time_s);
  EXPECT_EQ(c["wall_time"].value, 1200);
  EXPECT_EQ(c["wall_time"].layer, "cli");
  EXPECT_EQ(c["wall_time"].file, w.root + "/cli.toml");
  EXPECT_EQ(c["pids"].value, p->resources().pids);
  EXPECT_EQ(c["pids"].value, 4096);  // the user layer raised the built-in 512
  EXPECT_EQ(c["pids"].layer, "user");
  EXPECT_EQ(c["cpu_time"].value, p->resources().cpu_time_s);
  EXPECT_EQ(c["cpu_time"].layer, "builtin");
  EXPECT_EQ(c["network_idle"].value, p->resources().network_idle_s);
  EXPECT_EQ(c["network_idle"].layer, "");  // schema.h's default: the built-in sets none
  EXPECT_EQ(c.size(), 11u);
  EXPECT_EQ(c["network_rate"].value, p->resources().network_rate);  // a row for each key
}

TEST(Ceilings, LintWarnsOfACeilingThatAStricterLayerOverrides) {
  PolicyWorld w;
  write_file(w.options.user_dir + "/10.toml", "schema = 1\nresources = { wall_time = \"1h\" }\n");
  auto warnings = [&] {
    std::vector<std::string> out;
    for (const auto& f : lint_policy(w.options))
      if (f.severity == "warning" || f.severity == "error")
        out.push_back(f.where + ": " + f.message);
    return out;
  };
  EXPECT_TRUE(warnings().empty());  // the user layer replaces the built-in 10m: no warning
  write_file(w.root + "/cli.toml", "schema = 1\nresources = { wall_time = \"20m\" }\n");
  w.options.extra_files = {w.root + "/cli.toml"};
  const auto found = warnings();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], w.options.user_dir + "/10.toml: resources.wall_time = 1h (user layer) "
                      "has no effect: the cli layer's 20m (" + w.root + "/cli.toml) binds; the "
                      "user layer replaces only the built-in default's ceilings");
}

TEST(Ceilings, AreWrittenAsAPolicyFileWritesThem) {
  EXPECT_EQ(format_ceiling("wall_time", 600), "10m");
  EXPECT_EQ(format_ceiling("wall_time", 3600), "1h");
  EXPECT_EQ(format_ceiling("network_idle", 90), "90s");
  EXPECT_EQ(format_ceiling("memory", std::int64_t{4} << 30), "4GiB");
  EXPECT_EQ(format_ceiling("output", 1000), "1000 bytes");
  EXPECT_EQ(format_ceiling("pids", 512), "512");
}

}  // namespace
}  // namespace moat::policy

// tests/unit/sandbox/session_description_test.cc: a session's typed description encodes to the
// bytes the hand-built JSON had (session.start's "sandbox" and the welcome are unchanged), and
// the init's kReady report round-trips and names a bad field.
#include "sandbox/session_description.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "base/byte_strings.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

const std::vector<std::string> kNs = {"user_ns", "mount_ns", "pid_ns",   "net_ns",
                                      "ipc_ns",  "uts_ns",   "cgroup_ns"};

// session_create.cc's describe_session before the description was typed, kept as the reference.
json old_describe(const std::string& init_text, bool rootless, const std::string& uid_map,
                  bool cgroup_active, const std::vector<std::string>& dirs, const json& skipped) {
  auto describe = json::parse(init_text, nullptr, false);
  for (const auto& ns : kNs) describe[ns] = true;
  describe["rootless"] = rootless;
  describe["uid_map"] = uid_map;
  describe["idmap"] = !rootless && !skipped.contains("idmap");
  describe["cgroup"] = cgroup_active && !skipped.contains("cgroup");
  if (cgroup_active) describe["cgroup_dirs"] = dirs;
  if (!describe.contains("skipped")) describe["skipped"] = json::object();
  for (const auto& [k, v] : skipped.items()) describe["skipped"][k] = v;
  return describe;
}

SessionDescription new_describe(const InitLayers& init, bool rootless, const std::string& uid_map,
                                bool cgroup_active, const std::vector<std::string>& dirs,
                                const SkippedLayers& skipped) {
  SessionDescription d;
  d.layers = init;
  d.namespaces = kNs;
  d.rootless = rootless;
  d.uid_map = uid_map;
  d.idmap = !rootless && !skipped.count("idmap");
  d.cgroup = cgroup_active && !skipped.count("cgroup");
  if (cgroup_active) d.cgroup_dirs = dirs;
  for (const auto& [k, v] : skipped) d.layers.skipped[k] = v;
  return d;
}

InitLayers all_applied() {
  InitLayers l;
  l.seccomp = l.exec_watch = l.landlock = true;
  l.landlock_abi = 6;
  l.landlock_scoped = true;
  return l;
}

InitLayers landlock_skipped() {
  InitLayers l;
  l.seccomp = l.exec_watch = true;
  l.landlock = false;
  // What a kernel without Landlock reports (ENOSYS), as session_init words it.
  l.skipped["landlock"] = std::string("landlock_create_ruleset: ") + std::strerror(ENOSYS);
  return l;
}

TEST(SessionDescription, EncodesTheBytesTheHandBuiltDescriptionHad) {
  const std::vector<std::string> dirs = {"/sys/fs/cgroup/moat-1"};
  for (const InitLayers& init : {all_applied(), landlock_skipped()})
    for (bool rootless : {false, true})
      for (bool cgroup : {false, true})
        for (const SkippedLayers& skipped :
             {SkippedLayers{}, SkippedLayers{{"idmap", "mount_setattr: Invalid argument"}},
              SkippedLayers{{"cgroup", "no writable hierarchy"}}}) {
          const std::string init_text = dump_lossless(to_json(init));
          const json old =
              old_describe(init_text, rootless, "0 1000 1", cgroup, dirs, json(skipped));
          const json now = to_json(new_describe(init, rootless, "0 1000 1", cgroup, dirs, skipped));
          EXPECT_EQ(dump_lossless(now), dump_lossless(old)) << init_text;
        }
}

TEST(SessionDescription, AFullDescriptionIsTheseBytes) {
  SkippedLayers skipped = {{"idmap", "mount_setattr: Invalid argument"}};
  const json j = to_json(new_describe(all_applied(), false, "0 1000 1", true, {"/cg"}, skipped));
  EXPECT_EQ(
      j.dump(),
      R"({"cgroup":true,"cgroup_dirs":["/cg"],"cgroup_ns":true,"exec_watch":true,)"
      R"("idmap":false,"ipc_ns":true,"landlock":true,"landlock_abi":6,"landlock_scoped":true,)"
      R"("mount_ns":true,"net_ns":true,"pid_ns":true,"rootless":false,"seccomp":true,)"
      R"("skipped":{"idmap":"mount_setattr: Invalid argument"},"uid_map":"0 1000 1",)"
      R"("user_ns":true,"uts_ns":true})");
}

TEST(SessionDescription, TheInitsReportRoundTripsEvenWithAReasonThatIsNotUtf8) {
  InitLayers sent = landlock_skipped();
  sent.skipped["landlock"] = "open(/w/d\xff): No such file or directory";
  auto got = init_layers_from_text(dump_lossless(to_json(sent)));
  ASSERT_TRUE(got) << got.error().message();
  EXPECT_EQ(got->seccomp, sent.seccomp);
  EXPECT_EQ(got->landlock, std::optional<bool>(false));
  EXPECT_EQ(got->landlock_abi, std::nullopt);
  EXPECT_EQ(got->skipped, sent.skipped);
}

TEST(SessionDescription, ABadReportNamesTheField) {
  for (const auto& [text, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"seccomp":1})", "\"seccomp\""},
           {R"({"landlock_abi":"6"})", "\"landlock_abi\""},
           {R"({"skipped":[]})", "\"skipped\""},
           {R"({"skipped":{"landlock":false}})", "\"skipped.landlock\""},
           {R"([])", "not a JSON object"}}) {
    auto got = init_layers_from_text(text);
    ASSERT_FALSE(got) << text;
    EXPECT_NE(got.error().message().find(field), std::string::npos) << got.error().message();
  }
}

}  // namespace
}  // namespace moat::sandbox

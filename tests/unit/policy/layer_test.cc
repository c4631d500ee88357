// tests/unit/policy/layer_test.cc: the project layer's trust pin: pinned, changed after
// pinning, revoked, and a pin that sandboxed code could have written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "policy/layer.h"
#include "tests/unit/policy/policy_fixture.h"

namespace moat::policy {
namespace {

using ::testing::HasSubstr;
using testing::PolicyWorld;
using testing::write_file;

constexpr const char* kDenyMake =
    "schema = 1\n[[command]]\nid = \"proj.no-make\"\ndecision = \"deny\"\nprogram = \"make\"\n";

class ProjectTrustTest : public ::testing::Test {
 protected:
  void SetUp() override { write_file(proj_, kDenyMake); }
  Verdict make_verdict() { return w_.load()->decide_command("make", w_.workspace).verdict; }

  PolicyWorld w_;
  const std::string proj_ = w_.workspace + "/.moat/policy.toml";
  const std::string& trust_dir_ = w_.options.trust_dir;
};

TEST_F(ProjectTrustTest, NoProjectPolicyIsNoneAndLoadsNothing) {
  std::filesystem::remove(proj_);
  auto t = project_trust(w_.workspace, trust_dir_);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->state, TrustState::kNoProjectPolicy);
  EXPECT_TRUE(w_.load()->project_json().is_null());
}

TEST_F(ProjectTrustTest, UnpinnedIsUntrustedAndSkippedWithTheReason) {
  auto t = project_trust(w_.workspace, trust_dir_);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->state, TrustState::kUntrusted);
  EXPECT_EQ(t->file, w_.workspace + "/.moat/policy.toml");
  EXPECT_EQ(t->sha256.size(), 64u);
  auto p = w_.load();
  EXPECT_EQ(p->decide_command("make", w_.workspace).verdict, Verdict::kAllow);
  const auto j = p->project_json();
  EXPECT_EQ(j["state"], "untrusted");
  EXPECT_EQ(j["loaded"], false);
  EXPECT_TRUE(j["pinned"].is_null());
  EXPECT_THAT(j["skipped"].get<std::string>(), HasSubstr("not trusted"));
}

TEST_F(ProjectTrustTest, PinnedHashLoadsTheLayer) {
  auto t = project_trust(w_.workspace, trust_dir_);
  ASSERT_TRUE(t);
  ASSERT_TRUE(pin_project(w_.workspace, trust_dir_, t->sha256));
  auto after = project_trust(w_.workspace, trust_dir_);
  EXPECT_EQ(after->state, TrustState::kTrusted);
  EXPECT_EQ(after->pinned, t->sha256);
  auto p = w_.load();
  Decision d = p->decide_command("make", w_.workspace);
  EXPECT_EQ(d.verdict, Verdict::kDeny);
  EXPECT_EQ(d.deciding.id, "proj.no-make");
  EXPECT_EQ(d.deciding.layer, "project");
  EXPECT_EQ(p->project_json()["loaded"], true);
  EXPECT_EQ(p->project_json()["state"], "trusted");
}

TEST_F(ProjectTrustTest, ChangingTheFileAfterPinningMakesItUntrustedAgain) {
  auto t = project_trust(w_.workspace, trust_dir_);
  ASSERT_TRUE(pin_project(w_.workspace, trust_dir_, t->sha256));
  ASSERT_EQ(make_verdict(), Verdict::kDeny);
  write_file(proj_, std::string(kDenyMake) + "# one more line\n");
  auto changed = project_trust(w_.workspace, trust_dir_);
  EXPECT_EQ(changed->state, TrustState::kChanged);
  EXPECT_EQ(changed->pinned, t->sha256);
  EXPECT_NE(changed->sha256, t->sha256);
  auto p = w_.load();
  EXPECT_EQ(p->decide_command("make", w_.workspace).verdict, Verdict::kAllow);
  EXPECT_EQ(p->project_json()["state"], "changed");
  EXPECT_THAT(p->project_json()["skipped"].get<std::string>(),
              HasSubstr("changed since it was trusted"));
  // Changing it back restores the pinned content, so the pin holds again.
  write_file(proj_, kDenyMake);
  EXPECT_EQ(make_verdict(), Verdict::kDeny);
}

TEST_F(ProjectTrustTest, RevokingThePinSkipsTheLayerAndRevokingTwiceIsFine) {
  auto t = project_trust(w_.workspace, trust_dir_);
  ASSERT_TRUE(pin_project(w_.workspace, trust_dir_, t->sha256));
  ASSERT_EQ(make_verdict(), Verdict::kDeny);
  ASSERT_TRUE(revoke_project(w_.workspace, trust_dir_));
  EXPECT_EQ(project_trust(w_.workspace, trust_dir_)->state, TrustState::kUntrusted);
  EXPECT_EQ(make_verdict(), Verdict::kAllow);
  EXPECT_TRUE(revoke_project(w_.workspace, trust_dir_));
}

TEST_F(ProjectTrustTest, APinForOneWorkspaceDoesNotTrustAnother) {
  auto t = project_trust(w_.workspace, trust_dir_);
  ASSERT_TRUE(pin_project(w_.workspace, trust_dir_, t->sha256));
  const std::string other = w_.root + "/other";
  write_file(other + "/.moat/policy.toml", kDenyMake);
  EXPECT_EQ(project_trust(other, trust_dir_)->state, TrustState::kUntrusted);
}

// moat run pins the workspace by the name canonical_workspace gives it, moatd loads the policy
// by the path it opened, and `moat policy trust` by what the person typed: one pin for all.
TEST_F(ProjectTrustTest, APinMadeThroughASymlinkOrFromInsideTheWorkspaceIsTheSamePin) {
  namespace fs = std::filesystem;
  const std::string link = w_.root + "/link-to-ws";
  fs::create_directory_symlink(w_.workspace, link);
  auto t = project_trust(link, trust_dir_);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->file, w_.workspace + "/.moat/policy.toml");
  ASSERT_TRUE(pin_project(link, trust_dir_, t->sha256));
  EXPECT_EQ(project_trust(w_.workspace, trust_dir_)->state, TrustState::kTrusted);
  ASSERT_TRUE(revoke_project(w_.workspace, trust_dir_));
  const fs::path before = fs::current_path();
  fs::current_path(w_.workspace + "/src");
  auto pinned = pin_project("..", trust_dir_, t->sha256);
  fs::current_path(before);
  ASSERT_TRUE(pinned) << pinned.error().message();
  EXPECT_EQ(project_trust(w_.workspace, trust_dir_)->state, TrustState::kTrusted);
}

TEST_F(ProjectTrustTest, ATrustDirInsideTheWorkspaceIsRefused) {
  namespace fs = std::filesystem;
  const std::string inside = w_.workspace + "/.state/trust";
  auto t = project_trust(w_.workspace, inside);
  ASSERT_TRUE(t);
  auto pinned = pin_project(w_.workspace, inside, t->sha256);
  ASSERT_FALSE(pinned);
  EXPECT_THAT(pinned.error().message(), HasSubstr("inside the workspace"));
  // A valid pin copied there (as sandboxed code could) is not honoured either.
  ASSERT_TRUE(pin_project(w_.workspace, trust_dir_, t->sha256));
  fs::create_directories(inside);
  for (const auto& e : fs::directory_iterator(trust_dir_))
    fs::copy_file(e.path(), inside + "/" + e.path().filename().string());
  EXPECT_EQ(project_trust(w_.workspace, inside)->state, TrustState::kTrusted);
  w_.options.trust_dir = inside;
  auto p = w_.load();
  EXPECT_EQ(p->decide_command("make", w_.workspace).verdict, Verdict::kAllow);
  EXPECT_EQ(p->project_json()["loaded"], false);
  EXPECT_THAT(p->project_json()["skipped"].get<std::string>(), HasSubstr("inside the workspace"));
  // And the person's --trust-project cannot pin there: the load fails loudly.
  w_.options.trust_project = true;
  fs::remove_all(inside);
  EXPECT_FALSE(Policy::load(w_.options));
}

}  // namespace
}  // namespace moat::policy

// tests/unit/sandbox/protect_test.cc: which path a protected entry masks (the path, the first
// symlink on the way, or the first missing component).
#include "sandbox/protect.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace moat::sandbox {
namespace {

class MaskTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "moat-mask-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    ws_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(ws_); }
  std::string ws_;
};

TEST_F(MaskTargetTest, ExistingPathIsMaskedItself) {
  std::filesystem::create_directories(ws_ + "/.git/hooks");
  auto t = mask_target(ws_, ".git/hooks");
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, ws_ + "/.git/hooks");
}

TEST_F(MaskTargetTest, MissingPathMasksTheFirstMissingComponent) {
  auto t = mask_target(ws_, ".git/hooks");
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, ws_ + "/.git");
  std::filesystem::create_directories(ws_ + "/.git");
  EXPECT_EQ(*mask_target(ws_, ".git/hooks"), ws_ + "/.git/hooks");
}

TEST_F(MaskTargetTest, SymlinkIsMaskedAsTheLinkNotItsTarget) {
  std::filesystem::create_directories(ws_ + "/real");
  std::filesystem::create_directory_symlink("/etc", ws_ + "/.git");
  auto t = mask_target(ws_, ".git/hooks");
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, ws_ + "/.git");
}

TEST_F(MaskTargetTest, DotDotIsRefusedWithEinval) {
  auto t = mask_target(ws_, "../outside");
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().code, EINVAL);
}

TEST_F(MaskTargetTest, FileInTheMiddleIsMasked) {
  std::ofstream(ws_ + "/.moat") << "x";
  EXPECT_EQ(*mask_target(ws_, ".moat/policy.toml"), ws_ + "/.moat");
}

}  // namespace
}  // namespace moat::sandbox

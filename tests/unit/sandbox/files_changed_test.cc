// tests/unit/sandbox/files_changed_test.cc: the index's diff as a call record's fields: absolute
// paths, hashes per side, hashes withheld for what the policy does not let the model read, and
// the reason when there is no index.
#include "sandbox/files_changed.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sessions/digest.h"
#include "tests/unit/sandbox/supervisor_fakes.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;
using testing::TempWorld;

class FilesChangedFieldsTest : public ::testing::Test {
 protected:
  FilesChangedFieldsTest() {
    session_.workspace = world_.workspace;
    session_.policy = world_.load_policy();
  }
  void index() {
    UniqueFd fd(::open(world_.workspace.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    auto built = WorkspaceIndex::build(fd.get());
    ASSERT_TRUE(built) << built.error().message();
    session_.files = std::move(*built);
  }
  void write(const std::string& rel, const std::string& text) {
    std::ofstream(world_.workspace + "/" + rel, std::ios::trunc) << text;
  }

  TempWorld world_;
  SessionState session_;
};

TEST_F(FilesChangedFieldsTest, WithoutAnIndexTheListIsNullAndTheReasonIsGiven) {
  session_.files_error = "the workspace is not indexed: too many files";
  json f = files_changed_fields(session_);
  EXPECT_TRUE(f["files_changed"].is_null());
  EXPECT_EQ(f["files_changed_error"], "the workspace is not indexed: too many files");
}

TEST_F(FilesChangedFieldsTest, ARenameNamesBothAbsolutePathsAndBothSides) {
  write("f4", "four\n");
  index();
  std::filesystem::rename(world_.workspace + "/f4", world_.workspace + "/f5");
  json f = files_changed_fields(session_);
  ASSERT_EQ(f["files_changed"].size(), 1u) << f.dump();
  const json& c = f["files_changed"][0];
  EXPECT_EQ(c["op"], "rename");
  EXPECT_EQ(c["path"], world_.workspace + "/f5");
  EXPECT_EQ(c["from"], world_.workspace + "/f4");
  EXPECT_EQ(c["before"]["sha256"], sessions::sha256_hex("four\n"));
  EXPECT_EQ(c["after"]["sha256"], sessions::sha256_hex("four\n"));
  EXPECT_EQ(c["after"]["size"], 5);
  EXPECT_EQ(c["after"]["type"], "file");
  EXPECT_EQ(f["files_changed_truncated"], false);
}

TEST_F(FilesChangedFieldsTest, AFileThePolicyDoesNotLetTheModelReadHasItsHashesWithheld) {
  write("server.pem", "key one");
  index();
  write("server.pem", "key two!");
  json f = files_changed_fields(session_);
  ASSERT_EQ(f["files_changed"].size(), 1u) << f.dump();
  const json& c = f["files_changed"][0];
  EXPECT_EQ(c["op"], "modify");
  EXPECT_TRUE(c["before"]["sha256"].is_null());
  EXPECT_TRUE(c["after"]["sha256"].is_null());
  EXPECT_EQ(c["after"]["size"], 8);
  EXPECT_TRUE(c["after"].contains("withheld"));
  EXPECT_EQ(f.dump().find(sessions::sha256_hex("key two!")), std::string::npos);
}

}  // namespace
}  // namespace moat::sandbox

// tests/unit/policy/protected_paths_test.cc: policy/protected_paths.h and the default policy's
// default.protected-meta rule name the same workspace paths.
#include "policy/protected_paths.h"

#include <gtest/gtest.h>

#include <string>

#include "policy_fixture.h"

namespace moat::policy {
namespace {

using testing::PolicyWorld;

TEST(ProtectedPaths, TheDefaultPolicyDeniesWritingEachProtectedPathAndWhatIsBelowIt) {
  PolicyWorld w;
  auto p = w.load();
  ASSERT_TRUE(p);
  for (const char* rel : kProtectedWorkspacePaths) {
    for (const std::string& path : {w.workspace + "/" + rel, w.workspace + "/" + rel + "/x"}) {
      // .git/config is a file: nothing is below it.
      if (std::string(rel) == ".git/config" && path.back() == 'x') continue;
      auto d = p->decide_path(path, Access::kWrite);
      EXPECT_EQ(d.verdict, Verdict::kDeny) << path;
      EXPECT_EQ(d.deciding.id, "default.protected-meta") << path;
    }
  }
}

}  // namespace
}  // namespace moat::policy

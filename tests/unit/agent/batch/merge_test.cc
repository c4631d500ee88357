// tests/unit/agent/batch/merge_test.cc: `moat batch merge` reads each shard's lines as typed
// results (agent/batch/item_result.h) and writes them again: every key and byte of a line the
// writer wrote comes out as it went in (the shard's absolute paths made relative), and the
// report's bytes are those the key-reading code wrote (testdata/merge_report.html).
#include "agent/batch/merge.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/batch/results.h"
#include "agent/batch/runner.h"
#include "tests/unit/sessions/temp_dir.h"

namespace moat::agent::batch {
namespace {

using sessions::testing::slurp;
using sessions::testing::TempDir;

// A finished url item with every field, as item.cc writes it; PREFIX before the paths that
// name files under the shard's OUT.
std::string full_line(const std::string& prefix) {
  return R"({"agent":{"exit":0,"seconds":12.5},"auditLog":")" + prefix +
         R"(items/svc-c/audit/a.jsonl","check":{"auditLog":")" + prefix +
         R"(items/svc-c/check-audit/a.jsonl","command":"make test","exit":-1,"flagged":[{"argv":)"
         R"("sh -c x","rule":"org.ask"}],"flaggedExecs":1,"passed":false,"seconds":3.25,)"
         R"("signal":9,"timedOut":true},"clone":{"bundle":"clones/k/repo.bundle","cached":true,)"
         R"("log":"clones/k/clone.log"},"cost":0.0125,"exit":0,"flagged":[{"argv":"curl x",)"
         R"("rule":"org.net"}],"flaggedExecs":2,"hostExecuted":[".envrc"],"id":"svc-c",)"
         R"("model":"m","patch":"patches/svc-c.patch","patchBytes":712,"reason":)"
         R"("the check failed","ref":"release/1.x","repo":"m","session":"0193","sessionFile":")" +
         prefix +
         R"(items/svc-c/sessions/s.jsonl","startCommit":"abc123","status":"failed","steps":)"
         R"({"agent":12.5,"check":3.25,"pages":0.25,"patch":0.5,"workCopy":1.5},"turns":4,)"
         R"("url":"https://example.com/svc-c.git","usage":{"cache_read":0,"input":10,)"
         R"("output":2},"wallSeconds":20.75})";
}

constexpr const char* kErrorLine =
    R"({"id":"a","model":"replay","reason":"work copy: git clone failed","repo":"/r",)"
    R"("status":"error","steps":{"workCopy":0.5}})";

TEST(BatchMerge, EveryKeyAndByteOfALineSurvivesTheMergeAndTheReportKeepsItsBytes) {
  TempDir dir;
  const std::string shard = dir.path() + "/s1", dest = dir.path() + "/merged";
  std::filesystem::create_directories(shard);
  std::ofstream(shard + "/" + kBatchInfoFile) << R"({"manifest":"m.toml","items":["a","svc-c","z"]})";
  const std::string abs = std::filesystem::absolute(shard).lexically_normal().string() + "/";
  std::ofstream(shard + "/" + kResultsFile) << full_line(abs) << "\n" << kErrorLine << "\n";
  EXPECT_EQ(merge_outputs({shard}, dest), 1);  // z is missing, a and svc-c did not pass
  EXPECT_EQ(slurp(dest + "/" + kResultsFile),
            std::string(kErrorLine) + "\n" + full_line("") + "\n");
  EXPECT_EQ(slurp(dest + "/report.html"),
            slurp(std::string(MOAT_SOURCE_ROOT) +
                  "/tests/unit/agent/batch/testdata/merge_report.html"));
}

}  // namespace
}  // namespace moat::agent::batch

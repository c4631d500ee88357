// tests/integration/e2e/batch_test.cc: `moat batch` over 20 generated repositories with a
// scripted rename (replay files): patches that apply, --resume, a SIGKILL mid-batch, --apply.
#include <signal.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "agent/batch/results.h"
#include "tests/integration/e2e/e2e_support.h"
#include "tests/support/batch_repos.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kRepos = 20;

std::vector<json> results_of(const std::string& out) {
  return agent::batch::parse_results(read_file(out + "/results.jsonl"));
}

std::set<std::string> ids_of(const std::vector<json>& results) {
  std::set<std::string> ids;
  for (const auto& r : results) ids.insert(r["id"].get<std::string>());
  return ids;
}

int line_count(const std::string& path) {
  const std::string text = read_file(path);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

class BatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    ASSERT_TRUE(testing::make_batch_repos(dir_.path(), kRepos));
  }

  e2e::Run batch(const std::string& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {
        moat_bin(), "batch", dir_.path() + "/batch.toml", "--jobs", "2", "--out", out};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run(argv, {}, 600);
  }

  // Every item passed and its patch applies to a fresh clone of the repository it came from.
  void expect_all_patches_apply(const std::string& out) {
    const auto results = results_of(out);
    ASSERT_EQ(results.size(), static_cast<std::size_t>(kRepos))
        << read_file(out + "/results.jsonl");
    for (const auto& r : results) {
      const std::string id = r["id"];
      SCOPED_TRACE(id);
      EXPECT_EQ(r.value("status", ""), "passed") << r.dump();
      EXPECT_TRUE(r["check"].value("passed", false));
      // The check ran under a moatd of its own: its log is apart from the agent's, verifies,
      // holds the check's command, and has a page the report links.
      std::string check_log = r["check"].value("auditLog", "");
      ASSERT_FALSE(check_log.empty()) << r.dump();
      if (fs::path(check_log).is_relative()) check_log = out + "/" + check_log;  // a merge's
      EXPECT_NE(check_log, r.value("auditLog", "")) << r.dump();
      EXPECT_EQ(run({moat_bin(), "audit", "verify", check_log}).exit_code, 0);
      EXPECT_NE(read_file(check_log).find("run_tests.sh"), std::string::npos);
      EXPECT_TRUE(fs::exists(out + "/items/" + id + "/check-audit.html"));
      EXPECT_NE(read_file(out + "/report.html").find("items/" + id + "/check-audit.html"),
                std::string::npos);
      const std::string clone = dir_.path() + "/apply-" + id;
      const e2e::Run a = run({"sh", "-c",
                              "git clone -q '" + dir_.path() + "/" + id + "' '" + clone +
                                  "' && cd '" + clone + "' && git apply '" + out + "/patches/" +
                                  id + ".patch' && sh run_tests.sh && grep -q renamed NOTES.md"});
      EXPECT_EQ(a.exit_code, 0) << a.out;
    }
  }

  TempDir dir_;
};

TEST_F(BatchTest, TwentyReposWithTwoJobsGiveTwentyPatchesThatApplyAndAResumeStartsNothing) {
  const std::string out = dir_.path() + "/out";
  const e2e::Run first = batch(out);
  ASSERT_EQ(first.exit_code, 0) << first.out;
  expect_all_patches_apply(out);
  // Items never write into the repositories they came from without --apply.
  const e2e::Run status =
      run({"sh", "-c", "cd '" + dir_.path() + "/repo-03' && git status --porcelain"});
  EXPECT_EQ(status.out, "");
  EXPECT_TRUE(fs::exists(out + "/report.html"));

  const std::string before = read_file(out + "/results.jsonl");
  const e2e::Run again = batch(out, {"--resume"});
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("20 already done, 0 to run"), std::string::npos) << again.out;
  EXPECT_EQ(read_file(out + "/results.jsonl"), before);
  // Without --resume an output that holds results is refused, not mixed into.
  const e2e::Run mixed = batch(out);
  EXPECT_EQ(mixed.exit_code, 2) << mixed.out;
  EXPECT_NE(mixed.out.find("pass --resume"), std::string::npos) << mixed.out;
}

TEST_F(BatchTest, ABatchKilledWithSigkillHalfwayAndResumedGivesTheSameTwentyResults) {
  const std::string reference = dir_.path() + "/reference";
  ASSERT_EQ(batch(reference).exit_code, 0);
  const std::string out = dir_.path() + "/out";
  const pid_t pid =
      start({moat_bin(), "batch", dir_.path() + "/batch.toml", "--jobs", "2", "--out", out},
            dir_.path() + "/killed.log");
  ASSERT_TRUE(eventually([&] { return line_count(out + "/results.jsonl") >= kRepos / 2; },
                         std::chrono::seconds(300)));
  ::kill(pid, SIGKILL);
  wait_exit(pid, 30);
  const auto halfway = results_of(out);
  ASSERT_GE(halfway.size(), static_cast<std::size_t>(kRepos / 2));
  ASSERT_LT(halfway.size(), static_cast<std::size_t>(kRepos))
      << "the batch finished before the kill";

  const e2e::Run resumed = batch(out, {"--resume"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find(std::to_string(halfway.size()) + " already done"), std::string::npos)
      << resumed.out;
  const auto results = results_of(out);
  EXPECT_EQ(results.size(), static_cast<std::size_t>(kRepos));  // none twice, none lost
  EXPECT_EQ(ids_of(results), ids_of(results_of(reference)));
  for (const auto& r : results) {
    const std::string id = r["id"];
    EXPECT_EQ(read_file(out + "/patches/" + id + ".patch"),
              read_file(reference + "/patches/" + id + ".patch"))
        << id;
  }
  expect_all_patches_apply(out);
}

TEST_F(BatchTest, ApplyWritesOnlyPatchesWhoseCheckPassedIntoTheirRepositories) {
  // repo-01's check fails whatever the agent does: its patch must stay out of repo-01.
  std::string manifest = read_file(dir_.path() + "/batch.toml");
  const std::string entry = "[[repo]]\npath = \"repo-01\"\n";
  manifest.replace(manifest.find(entry), entry.size(), entry + "check = \"false\"\n");
  testing::write_text(dir_.path() + "/batch.toml", manifest);
  const e2e::Run r = batch(dir_.path() + "/out", {"--apply"});
  EXPECT_EQ(r.exit_code, 1) << r.out;  // one item failed
  EXPECT_NE(read_file(dir_.path() + "/repo-00/lib.sh").find("sum_line_items"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir_.path() + "/repo-00/NOTES.md"));
  EXPECT_NE(read_file(dir_.path() + "/repo-01/lib.sh").find("compute_total"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_.path() + "/repo-01/NOTES.md"));
}

TEST_F(BatchTest, ShardsSplitTheItemsAndAMergeNamesTheMissingOnesThenJoinsAll) {
  const std::string d = dir_.path();
  std::vector<std::set<std::string>> shards;
  for (int i = 0; i < 3; ++i) {
    const std::string out = d + "/shard-" + std::to_string(i);
    const e2e::Run r = batch(out, {"--shard", std::to_string(i) + "/3"});
    ASSERT_EQ(r.exit_code, 0) << r.out;
    shards.push_back(ids_of(results_of(out)));
  }
  std::set<std::string> all;
  std::size_t total = 0;
  for (const auto& s : shards) {
    all.insert(s.begin(), s.end());
    total += s.size();
  }
  EXPECT_EQ(total, static_cast<std::size_t>(kRepos));  // no item in two shards
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kRepos));

  const e2e::Run partial =
      run({moat_bin(), "batch", "merge", "--out", d + "/partial", d + "/shard-0", d + "/shard-2"});
  EXPECT_EQ(partial.exit_code, 1) << partial.out;
  for (const auto& id : shards[1])
    EXPECT_NE(partial.out.find("  " + id + "\n"), std::string::npos) << id << partial.out;
  EXPECT_NE(read_file(d + "/partial/report.html").find("<tr class=\"missing\">"),
            std::string::npos);

  const e2e::Run merged = run({moat_bin(), "batch", "merge", "--out", d + "/merged", d + "/shard-0",
                               d + "/shard-1", d + "/shard-2"});
  ASSERT_EQ(merged.exit_code, 0) << merged.out;
  expect_all_patches_apply(d + "/merged");
  EXPECT_TRUE(fs::exists(d + "/merged/items/repo-00/session.html"));
}

TEST_F(BatchTest, OnceTheBatchsCostCeilingIsReachedNoNewItemStarts) {
  // The cost so far includes what earlier runs of this batch spent (results.jsonl): $2 of a
  // $1 ceiling is spent already, so a resumed run starts nothing.
  const std::string out = dir_.path() + "/out";
  testing::write_text(dir_.path() + "/batch.toml",
                      "max_total_cost = 1.0\n" + read_file(dir_.path() + "/batch.toml"));
  fs::create_directories(out);
  testing::write_text(out + "/results.jsonl",
                      "{\"id\":\"repo-00\",\"status\":\"passed\",\"cost\":2.0}\n");
  const e2e::Run r = batch(out, {"--resume"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("19 item(s) not started: the batch's max_total_cost ($1.0000) was reached"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(results_of(out).size(), 1u);
  EXPECT_FALSE(fs::exists(out + "/items/repo-01"));
}

TEST_F(BatchTest, AnAgentThatPointsDotGitObjectsAtAHostFolderCannotMakeTheBatchWriteThere) {
  // Inside the sandbox the work copy's .git/objects can be swapped for a symlink to any host
  // path; the batch's git (outside the sandbox) must not follow it: it works from its own copy.
  const std::string d = dir_.path(), victim = d + "/victim";
  fs::create_directories(victim);
  testing::write_text(
      d + "/rename.replay.jsonl",
      R"({"text": "Swapping objects.", "tool_calls": [{"name": "bash", "arguments": {"command": "mv .git/objects .git/o && ln -s )" +
          victim +
          R"( .git/objects && sed -i 's/compute_total/sum_line_items/g' lib.sh main.sh && echo renamed > NOTES.md"}}]}
{"text": "Done."}
)");
  const e2e::Run r = batch(d + "/out");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(fs::is_empty(victim)) << "the batch wrote into " << victim;
  expect_all_patches_apply(d + "/out");
}

TEST_F(BatchTest, ATerminalGetsAStatusLineAndJsonGivesAStartAndAFinishEventPerItem) {
  const std::string d = dir_.path();
  testing::write_text(d + "/two.toml",
                      "task = \"t\"\nmodel = \"replay:rename.replay.jsonl\"\n"
                      "check = \"sh run_tests.sh\"\n[[repo]]\npath = "
                      "\"repo-00\"\n[[repo]]\npath = \"repo-01\"\n");
  // script(1) gives the batch a terminal on stderr.
  const e2e::Run tty =
      run({"script", "-qec",
           "'" + moat_bin() + "' batch '" + d + "/two.toml' --out '" + d + "/tty' --jobs 2",
           "/dev/null"});
  EXPECT_EQ(tty.exit_code, 0) << tty.out;
  EXPECT_NE(tty.out.find("\r\033[Kmoat batch: [0/2 done, 0 failed, 1 running, $0.0000, eta ?]"),
            std::string::npos)
      << tty.out;
  EXPECT_NE(tty.out.find("\r\033[Kmoat batch: [2/2 done, 0 failed, 0 running"), std::string::npos);

  const e2e::Run json = run({moat_bin(), "batch", d + "/two.toml", "--out", d + "/json", "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.out;
  EXPECT_EQ(json.out.find("\033["), std::string::npos);  // no terminal: plain lines
  for (const char* id : {"repo-00", "repo-01"}) {
    EXPECT_NE(json.out.find(std::string("{\"event\":\"start\",\"id\":\"") + id + "\"}\n"),
              std::string::npos)
        << json.out;
    EXPECT_NE(json.out.find(std::string("{\"event\":\"finish\",\"result\":{")), std::string::npos);
    EXPECT_NE(json.out.find(std::string("moat batch: ") + id + " passed  [", 0), std::string::npos);
  }
}

// --- issue 27: what a batch says and refuses (two repositories) --------------------------------

class BatchTwoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    ASSERT_TRUE(testing::make_batch_repos(dir_.path(), 2));
  }
  // moat batch run from dir_ (so a relative --out is relative to it), stdout and stderr
  // together.
  e2e::Run batch_in_dir(const std::string& args, const std::vector<std::string>& env = {}) {
    return run({"sh", "-c",
                "cd '" + dir_.path() + "' && '" + fs::absolute(moat_bin()).string() + "' batch " +
                    args},
               env, 600);
  }
  // repo-01's check fails whatever the agent does.
  void fail_repo_01_check() {
    std::string manifest = read_file(dir_.path() + "/batch.toml");
    const std::string entry = "[[repo]]\npath = \"repo-01\"\n";
    manifest.replace(manifest.find(entry), entry.size(), entry + "check = \"false\"\n");
    testing::write_text(dir_.path() + "/batch.toml", manifest);
  }
  void set_manifest_key(const std::string& key, const std::string& toml_value) {
    std::string manifest = read_file(dir_.path() + "/batch.toml");
    const std::size_t at = manifest.find(key + " = ");
    manifest.replace(at, manifest.find('\n', at) - at, key + " = " + toml_value);
    testing::write_text(dir_.path() + "/batch.toml", manifest);
  }
  // No item was started: no item folder, no results.
  void expect_nothing_started(const std::string& out) {
    EXPECT_FALSE(fs::exists(out + "/items/repo-00"));
    EXPECT_TRUE(results_of(out).empty());
  }

  TempDir dir_;
};

// Item 1: git was handed OUT/patches/x.patch relative to the repository, not to the directory
// the batch ran in, so nothing applied and the batch exited 0.
TEST_F(BatchTwoTest, ApplyWithARelativeOutAppliesEveryPatchThatPassed) {
  const e2e::Run r = batch_in_dir("batch.toml --out out --apply");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (const char* id : {"repo-00", "repo-01"}) {
    SCOPED_TRACE(id);
    EXPECT_TRUE(fs::exists(dir_.path() + "/" + id + "/NOTES.md")) << r.out;
    EXPECT_NE(read_file(dir_.path() + "/" + id + "/lib.sh").find("sum_line_items"),
              std::string::npos);
  }
  EXPECT_EQ(r.out.find("can't open patch"), std::string::npos) << r.out;
}

// Item 1: a patch that does not apply (the repository moved on) fails the batch, naming the
// item and git's own message; the other item's patch is still applied.
TEST_F(BatchTwoTest, APatchThatDoesNotApplyFailsTheBatchNamingTheItemAndGitsMessage) {
  ASSERT_EQ(batch_in_dir("batch.toml --out out").exit_code, 0);
  const std::string repo = dir_.path() + "/repo-00";
  testing::write_text(repo + "/lib.sh", "# moved on\ncompute_total() { echo 0; }\n");
  ASSERT_EQ(run({"sh", "-c",
                 "cd '" + repo + "' && git -c user.name=t -c user.email=t@example.com commit -qam moved"})
                .exit_code,
            0);
  const e2e::Run r = batch_in_dir("batch.toml --out out --resume --apply");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("apply repo-00"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("patch does not apply"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir_.path() + "/repo-01/NOTES.md")) << r.out;
  EXPECT_FALSE(fs::exists(repo + "/NOTES.md"));
}

// Issue 26 item 12: an agent-created .vscode/tasks.json (runs when the folder opens) and .envrc
// (direnv) were applied to the person's repository. Now such a patch is named in results.jsonl,
// the report and the end's lines, and applied only with --apply-host-executed.
TEST_F(BatchTwoTest, APatchWritingFilesTheHostRunsIsAppliedOnlyWithApplyHostExecuted) {
  testing::write_text(
      dir_.path() + "/rename.replay.jsonl",
      R"({"text": "Renaming.", "tool_calls": [{"name": "bash", "arguments": {"command": "sed -i 's/compute_total/sum_line_items/g' lib.sh main.sh && echo renamed > NOTES.md && mkdir -p .vscode && echo '{\"tasks\": [{\"runOptions\": {\"runOn\": \"folderOpen\"}}]}' > .vscode/tasks.json && echo 'touch /tmp/pwned' > .envrc"}}]}
{"text": "Done."}
)");
  e2e::Run r = batch_in_dir("batch.toml --out out --apply");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  for (const char* id : {"repo-00", "repo-01"}) {
    SCOPED_TRACE(id);
    const std::string repo = dir_.path() + "/" + id;
    EXPECT_FALSE(fs::exists(repo + "/.envrc")) << r.out;
    EXPECT_FALSE(fs::exists(repo + "/.vscode/tasks.json")) << r.out;
    EXPECT_FALSE(fs::exists(repo + "/NOTES.md")) << r.out;  // the patch is left whole
    EXPECT_NE(r.out.find(std::string("apply ") + id), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(std::string("moat batch: ") + id +
                         ": its patch adds or changes files that programs on your host run code "
                         "from: .envrc, .vscode/tasks.json"),
              std::string::npos)
        << r.out;
  }
  EXPECT_NE(r.out.find("--apply-host-executed"), std::string::npos) << r.out;
  for (const auto& res : results_of(dir_.path() + "/out")) {
    EXPECT_EQ(res.value("status", ""), "passed") << res.dump();
    EXPECT_EQ(res.value("hostExecuted", json()), json({".envrc", ".vscode/tasks.json"}))
        << res.dump();
  }
  const std::string html = read_file(dir_.path() + "/out/report.html");
  EXPECT_NE(html.find(">.envrc, .vscode/tasks.json<"), std::string::npos) << html;
  EXPECT_NE(html.find("<b>2</b> patches add or change files that programs on your host run"),
            std::string::npos)
      << html;

  r = batch_in_dir("batch.toml --out out --resume --apply --apply-host-executed");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  for (const char* id : {"repo-00", "repo-01"}) {
    SCOPED_TRACE(id);
    const std::string repo = dir_.path() + "/" + id;
    EXPECT_TRUE(fs::exists(repo + "/.envrc")) << r.out;
    EXPECT_TRUE(fs::exists(repo + "/.vscode/tasks.json")) << r.out;
    EXPECT_TRUE(fs::exists(repo + "/NOTES.md")) << r.out;
  }
}

// Item 10: a replay file that does not exist made every item "failed: moat run exited 2".
TEST_F(BatchTwoTest, AMissingReplayFileFailsTheBatchBeforeAnyItemStarts) {
  set_manifest_key("model", "\"replay:no-such.replay.jsonl\"");
  const e2e::Run r = batch_in_dir("batch.toml --out out");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("no-such.replay.jsonl"), std::string::npos) << r.out;
  expect_nothing_started(dir_.path() + "/out");
}

TEST_F(BatchTwoTest, AModelWithoutItsApiKeyFailsTheBatchBeforeAnyItemStarts) {
  fs::create_directories(dir_.path() + "/config/moat");
  testing::write_text(dir_.path() + "/config/moat/config.toml",
                      "[providers.keyed]\nkind = \"openai-chat\"\nbase_url = "
                      "\"http://127.0.0.1:9\"\napi_key_env = \"MOAT_TEST_NO_SUCH_KEY\"\n");
  set_manifest_key("model", "\"keyed/some-model\"");
  const e2e::Run r = batch_in_dir("batch.toml --out out", {"XDG_CONFIG_HOME=" + dir_.path() + "/config"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("MOAT_TEST_NO_SUCH_KEY"), std::string::npos) << r.out;
  expect_nothing_started(dir_.path() + "/out");
}

TEST_F(BatchTwoTest, ACheckThePolicyRefusesOrThatDoesNotParseFailsTheBatchBeforeAnyItemStarts) {
  testing::write_text(dir_.path() + "/no-make.toml",
                      "schema = 1\n[[command]]\nid = \"test.no-make\"\ndecision = \"deny\"\n"
                      "program = \"make\"\nreason = \"No make in this test.\"\n");
  testing::write_text(dir_.path() + "/batch.toml",
                      "policy = [\"no-make.toml\"]\n" + read_file(dir_.path() + "/batch.toml"));
  set_manifest_key("check", "\"make test\"");
  e2e::Run r = batch_in_dir("batch.toml --out out");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("test.no-make"), std::string::npos) << r.out;
  expect_nothing_started(dir_.path() + "/out");

  set_manifest_key("check", "\"sh run_tests.sh 'unclosed\"");
  r = batch_in_dir("batch.toml --out out2");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("check"), std::string::npos) << r.out;
  expect_nothing_started(dir_.path() + "/out2");
}

// Item 10: --resume skipped failed items for ever; --retry-failed runs them again, and the
// item's new result takes the place of the old one.
TEST_F(BatchTwoTest, ResumeWithRetryFailedRunsTheFailedItemsAgain) {
  const std::string manifest = read_file(dir_.path() + "/batch.toml");
  fail_repo_01_check();
  ASSERT_EQ(batch_in_dir("batch.toml --out out").exit_code, 1);
  testing::write_text(dir_.path() + "/batch.toml", manifest);  // the check is fixed
  const e2e::Run plain = batch_in_dir("batch.toml --out out --resume");
  EXPECT_EQ(plain.exit_code, 1) << plain.out;
  EXPECT_NE(plain.out.find("2 already done, 0 to run"), std::string::npos) << plain.out;

  const e2e::Run r = batch_in_dir("batch.toml --out out --resume --retry-failed");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("1 already done, 1 to run"), std::string::npos) << r.out;
  const auto results = results_of(dir_.path() + "/out");
  ASSERT_EQ(results.size(), 2u) << read_file(dir_.path() + "/out/results.jsonl");
  for (const auto& res : results) EXPECT_EQ(res.value("status", ""), "passed") << res.dump();
}

// Item 10: the end says the totals and where the report is; the report links each item's logs
// and gives the diff's size with its unit.
TEST_F(BatchTwoTest, TheEndNamesTheTotalsAndTheReportWhichLinksEachItemsLogs) {
  fail_repo_01_check();
  const e2e::Run r = batch_in_dir("batch.toml --out out");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const std::string report = dir_.path() + "/out/report.html";
  EXPECT_NE(r.out.find("2 items: 1 passed, 1 failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(report), std::string::npos) << r.out;
  const std::string html = read_file(report);
  for (const char* id : {"repo-00", "repo-01"}) {
    EXPECT_NE(html.find(std::string("href=\"items/") + id + "/run.log\""), std::string::npos);
    EXPECT_NE(html.find(std::string("href=\"items/") + id + "/check.log\""), std::string::npos);
  }
  const auto patch_bytes = fs::file_size(dir_.path() + "/out/patches/repo-00.patch");
  ASSERT_LT(patch_bytes, 1024u);
  EXPECT_NE(html.find(">" + std::to_string(patch_bytes) + " B<"), std::string::npos) << html;
}

// Item 10: a merge of failed items exits 1, and its results name files under its own OUT.
TEST_F(BatchTwoTest, AMergeOfFailedItemsExitsOneAndItsPathsAreRelativeToItsOut) {
  fail_repo_01_check();
  for (const char* shard : {"0/2", "1/2"})
    batch_in_dir(std::string("batch.toml --out shard-") + shard[0] + " --shard " + shard);
  const e2e::Run m = batch_in_dir("merge --out merged shard-0 shard-1");
  EXPECT_EQ(m.exit_code, 1) << m.out;
  EXPECT_NE(m.out.find("failed"), std::string::npos) << m.out;
  const auto results = results_of(dir_.path() + "/merged");
  ASSERT_EQ(results.size(), 2u);
  for (const auto& res : results) {
    SCOPED_TRACE(res.dump());
    for (const std::string& file :
         {res.value("auditLog", ""), res.value("sessionFile", ""), res["check"].value("auditLog", "")}) {
      ASSERT_FALSE(file.empty());
      EXPECT_EQ(file.rfind("items/" + res["id"].get<std::string>() + "/", 0), 0u);
      EXPECT_TRUE(fs::exists(dir_.path() + "/merged/" + file));
    }
  }
}

}  // namespace
}  // namespace moat::e2e

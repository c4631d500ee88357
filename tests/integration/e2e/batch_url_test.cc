// tests/integration/e2e/batch_url_test.cc: `moat batch` with `url =` repositories (issue 17):
// a real HTTP git server on 127.0.0.1 (python3's http.server over bare repositories, git's
// "dumb" protocol), reached only through a sandbox's moatd proxy, which resolves *.test names
// to it (moatd --test-resolve, given by a MOATD_BIN wrapper as whoever starts moatd would).
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>

#include "agent/batch/manifest.h"
#include "agent/batch/results.h"
#include "tests/integration/e2e/e2e_support.h"
#include "tests/support/batch_repos.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Test-side git never reads the person's configuration.
const std::string kGit = "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git";

std::vector<json> results_of(const std::string& out) {
  return agent::batch::parse_results(read_file(out + "/results.jsonl"));
}

json result_for(const std::vector<json>& results, const std::string& id) {
  for (const auto& r : results)
    if (r.value("id", "") == id) return r;
  return nullptr;
}

int count_of(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class BatchUrlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    if (run({"python3", "--version"}).exit_code != 0) GTEST_SKIP() << "python3 is not installed";
    const std::string d = dir_.path();
    ASSERT_TRUE(testing::make_batch_repos(d, 1));
    // svc: tag v0 at the first commit, a second commit on top.
    sh("cd '" + d + "/repo-00' && " + kGit + " tag v0 && echo '# v1' >> main.sh && " + kGit +
       " -c user.name=t -c user.email=t@example.com commit -qam v1");
    fs::create_directories(d + "/srv");
    sh(kGit + " clone -q --bare '" + d + "/repo-00' '" + d + "/srv/svc.git'");
    serve_all();
    server_ = start({"python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
                     "--directory", d + "/srv"},
                    d + "/http.log");
    std::smatch m;
    ASSERT_TRUE(eventually([&] {
      const std::string log = read_file(d + "/http.log");
      return std::regex_search(log, m, std::regex("port ([0-9]+)"));
    })) << read_file(d + "/http.log");
    port_ = m[1].str();
    // Whoever starts moatd may give it test names; the batch starts its moatds through this.
    testing::write_text(d + "/moatd.sh", "#!/bin/sh\nexec '" + moatd_bin() +
                                             "' --test-resolve git.test=127.0.0.1 "
                                             "--test-resolve other.test=127.0.0.1 \"$@\"\n");
    fs::permissions(d + "/moatd.sh", fs::perms::owner_all | fs::perms::group_read |
                                         fs::perms::group_exec | fs::perms::others_read |
                                         fs::perms::others_exec);
    fs::create_directories(d + "/config/moat/policy.d");
    fs::create_directories(d + "/home");
    testing::write_text(d + "/config/moat/policy.d/git.toml",
                        "schema = 1\n[[network]]\nid = \"test.git\"\ndecision = \"allow\"\n"
                        "domains = [\"git.test\", \"127.0.0.1\"]\n");
  }
  void TearDown() override {
    if (server_ > 0) {
      kill(server_, SIGTERM);
      wait_exit(server_, 10);
    }
  }

  void sh(const std::string& script) {
    const e2e::Run r = run({"sh", "-c", "set -e\n" + script});
    ASSERT_EQ(r.exit_code, 0) << script << "\n" << r.out;
  }
  // Dumb HTTP serves what info/refs and objects/info/packs list.
  void serve_all() {
    for (const auto& e : fs::directory_iterator(dir_.path() + "/srv"))
      sh(kGit + " --git-dir='" + e.path().string() + "' update-server-info");
  }
  std::string url(const std::string& host, const std::string& repo) const {
    return "http://" + host + ":" + port_ + "/" + repo;
  }
  std::string http_log() const { return read_file(dir_.path() + "/http.log"); }
  // NAME's one commit (made by `files`, a shell line in its folder) served as NAME.git, batched
  // under a user layer's `resources`; the item's results line, which must be an error.
  json error_under_resources(const std::string& name, const std::string& files,
                             const std::string& resources) {
    const std::string d = dir_.path();
    sh("cd '" + d + "' && " + kGit + " init -q " + name + " && cd " + name + " && " + files +
       " && " + kGit + " add -A && " + kGit +
       " -c user.name=t -c user.email=t@example.com commit -qm b && " + kGit +
       " clone -q --bare . '" + d + "/srv/" + name + ".git'");
    serve_all();
    testing::write_text(d + "/config/moat/policy.d/small.toml",
                        "schema = 1\nresources = { " + resources + " }\n");
    write_manifest("[[repo]]\nurl = \"" + url("git.test", name + ".git") + "\"\n");
    const e2e::Run r = batch(d + "/out");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    const json line = result_for(results_of(d + "/out"), name);
    EXPECT_EQ(line.value("status", ""), "error") << r.out;
    return line;
  }
  // A server that prints "port N" into `log` once it listens; `port` stays empty when it did
  // not start.
  pid_t start_server(const std::vector<std::string>& argv, const std::string& log,
                     std::string& port) {
    const pid_t pid = start(argv, log);
    std::smatch m;
    if (eventually([&] {
          const std::string text = read_file(log);
          return std::regex_search(text, m, std::regex("port ([0-9]+)"));
        }))
      port = m[1].str();
    return pid;
  }
  // python3's server running SRV/cgi-bin's scripts, logging into smart.log.
  pid_t start_cgi_server(std::string& port) {
    const std::string d = dir_.path();
    return start_server({"python3", "-u", "-m", "http.server", "--cgi", "0", "--bind", "127.0.0.1",
                         "--directory", d + "/srv"},
                        d + "/smart.log", port);
  }

  void write_manifest(const std::string& repos) {
    testing::write_text(dir_.path() + "/batch.toml",
                        "task = \"Rename compute_total to sum_line_items.\"\n"
                        "model = \"replay:rename.replay.jsonl\"\ncheck = \"sh run_tests.sh\"\n" +
                            repos);
  }
  e2e::Run batch(const std::string& out, std::vector<std::string> extra = {},
                 std::vector<std::string> env = {}) {
    const std::string d = dir_.path();
    std::vector<std::string> argv = {moat_bin(), "batch", d + "/batch.toml", "--jobs", "2",
                                     "--out",    out};
    argv.insert(argv.end(), extra.begin(), extra.end());
    env.insert(env.end(), {"HOME=" + d + "/home", "XDG_CONFIG_HOME=" + d + "/config",
                           "XDG_STATE_HOME=" + d + "/state", "MOATD_BIN=" + d + "/moatd.sh"});
    return run(argv, env, 600);
  }

  // The item's patch applies to a fresh clone of the server's repository at `rev`, and the
  // rename's tests pass there.
  void expect_patch_applies(const std::string& out, const std::string& id, const std::string& repo,
                            const std::string& rev) {
    const std::string clone = dir_.path() + "/apply-" + id;
    const e2e::Run a = run({"sh", "-c",
                            kGit + " clone -q 'http://127.0.0.1:" + port_ + "/" + repo + "' '" +
                                clone + "' && cd '" + clone + "' && " + kGit + " checkout -q " +
                                rev + " && " + kGit + " apply '" + out + "/patches/" + id +
                                ".patch' && sh run_tests.sh && grep -q renamed NOTES.md"});
    EXPECT_EQ(a.exit_code, 0) << id << ": " << a.out;
  }
  std::string rev_parse(const std::string& git_dir, const std::string& rev) {
    return run({"sh", "-c", kGit + " --git-dir='" + git_dir + "' rev-parse '" + rev + "'"}).out;
  }

  TempDir dir_;
  pid_t server_ = -1;
  std::string port_;
};

TEST_F(BatchUrlTest, UrlReposAreClonedOnceThroughTheSandboxAndTheirPatchesApplyToAFreshClone) {
  const std::string d = dir_.path(), out = d + "/out", svc = url("git.test", "svc.git");
  write_manifest("[[repo]]\nurl = \"" + svc + "\"\n[[repo]]\nurl = \"" + svc +
                 "\"\nid = \"svc-v0\"\nref = \"v0\"\n[[repo]]\npath = \"repo-00\"\nid = "
                 "\"local\"\n");
  const e2e::Run r = batch(out, {"--apply"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const int fetches = count_of(http_log(), "GET /svc.git/info/refs");
  EXPECT_EQ(fetches, 1) << "one clone for the two items with that url\n" << http_log();
  const auto results = results_of(out);
  ASSERT_EQ(results.size(), 3u) << read_file(out + "/results.jsonl");
  const json a = result_for(results, "svc"), v0 = result_for(results, "svc-v0");
  ASSERT_TRUE(a.is_object() && v0.is_object()) << read_file(out + "/results.jsonl");
  for (const json& item : {a, v0}) {
    EXPECT_EQ(item.value("status", ""), "passed") << item.dump();
    EXPECT_EQ(item.value("repo", ""), svc);
    EXPECT_EQ(item.value("url", ""), svc);
  }
  EXPECT_EQ(v0.value("ref", ""), "v0");
  const std::string bare = d + "/srv/svc.git";
  EXPECT_EQ(a.value("startCommit", "") + "\n", rev_parse(bare, "HEAD"));
  EXPECT_EQ(v0.value("startCommit", "") + "\n", rev_parse(bare, "v0^{commit}"));
  EXPECT_NE(a.value("startCommit", ""), v0.value("startCommit", ""));
  expect_patch_applies(out, "svc", "svc.git", "HEAD");
  expect_patch_applies(out, "svc-v0", "svc.git", "v0");
  // The report names the url (and the ref) as the items' source.
  EXPECT_NE(read_file(out + "/report.html").find(svc + " @ v0"), std::string::npos);
  // --apply: a url item has no repository here to apply to; it is named, never applied.
  EXPECT_NE(r.out.find("apply patches/svc.patch: not applied: the item was cloned from " + svc),
            std::string::npos)
      << r.out;
  EXPECT_NE(read_file(d + "/repo-00/lib.sh").find("sum_line_items"), std::string::npos);

  // A resume starts nothing and clones nothing; an item run again (its line lost) takes the
  // url's bundle this OUT already holds.
  const int before = count_of(http_log(), "GET /svc.git/info/refs");
  const e2e::Run again = batch(out, {"--resume"});
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("3 already done, 0 to run"), std::string::npos) << again.out;
  std::string kept;
  for (const auto& line : results)
    if (line.value("id", "") != "svc-v0") kept += line.dump() + "\n";
  testing::write_text(out + "/results.jsonl", kept);
  const e2e::Run rerun = batch(out, {"--resume"});
  EXPECT_EQ(rerun.exit_code, 0) << rerun.out;
  EXPECT_NE(rerun.out.find("2 already done, 1 to run"), std::string::npos) << rerun.out;
  const json redone = result_for(results_of(out), "svc-v0");
  EXPECT_EQ(redone.value("status", ""), "passed") << redone.dump();
  EXPECT_TRUE(redone["clone"].value("cached", false)) << redone.dump();
  EXPECT_EQ(count_of(http_log(), "GET /svc.git/info/refs"), before);
}

TEST_F(BatchUrlTest, GitsSmartHttpProtocolWorksThroughTheProxyToo) {
  // What hosting services speak: git http-backend (a CGI script under python3's server, which
  // runs it as nobody when the test is root: hence safe.directory).
  const std::string d = dir_.path(), cgi = d + "/srv/cgi-bin";
  fs::create_directories(cgi);
  testing::write_text(cgi + "/git",
                      "#!/bin/sh\nexport GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory "
                      "GIT_CONFIG_VALUE_0='*' GIT_PROJECT_ROOT='" +
                          d + "/srv' GIT_HTTP_EXPORT_ALL=1\nexec git http-backend\n");
  fs::permissions(cgi + "/git", fs::perms::all, fs::perm_options::add);
  std::string smart_port;
  const pid_t smart = start_cgi_server(smart_port);
  const bool up = !smart_port.empty();
  if (up) {
    const std::string smart_url = "http://git.test:" + smart_port + "/cgi-bin/git/svc.git";
    write_manifest("[[repo]]\nurl = \"" + smart_url + "\"\n");
    const e2e::Run r = batch(d + "/out");
    EXPECT_EQ(r.exit_code, 0) << r.out << read_file(d + "/out/results.jsonl");
    EXPECT_NE(read_file(d + "/smart.log").find("\"POST /cgi-bin/git/svc.git/git-upload-pack "),
              std::string::npos)
        << read_file(d + "/smart.log");
    EXPECT_EQ(result_for(results_of(d + "/out"), "svc").value("startCommit", "") + "\n",
              rev_parse(d + "/srv/svc.git", "HEAD"));
  }
  kill(smart, SIGTERM);
  wait_exit(smart, 10);
  ASSERT_TRUE(up) << read_file(d + "/smart.log");
}

TEST_F(BatchUrlTest, AHostThePolicyDoesNotAllowIsRefusedNamingTheRuleToAddAndNothingIsCloned) {
  const std::string d = dir_.path(), other = url("other.test", "svc.git");
  write_manifest("[[repo]]\nurl = \"" + other + "\"\n");
  const e2e::Run r = batch(d + "/out");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("url " + other + ": the policy does not allow connections to other.test:" +
                       port_ + " (decided by defaults.network"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(http_log().find("GET"), std::string::npos) << http_log();
  EXPECT_TRUE(fs::is_empty(d + "/out/clones"));
  EXPECT_EQ(read_file(d + "/out/results.jsonl"), "");

  // The rule the message gives, as given, is what the policy needed.
  const std::string last = "ports = [" + port_ + "]\n";
  const auto from = r.out.find("  schema = 1\n"), to = r.out.find(last);
  ASSERT_TRUE(from != std::string::npos && to != std::string::npos) << r.out;
  testing::write_text(d + "/config/moat/policy.d/other.toml",
                      r.out.substr(from, to + last.size() - from));
  const e2e::Run allowed = batch(d + "/out2");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.out << read_file(d + "/out2/results.jsonl");
  EXPECT_EQ(count_of(http_log(), "GET /svc.git/info/refs"), 1);

  // The manifest's own policy files count too: one that denies the host refuses the batch.
  testing::write_text(d + "/no-git.toml",
                      "schema = 1\n[[network]]\nid = \"batch.no-git\"\ndecision = \"deny\"\n"
                      "domains = [\"git.test\"]\n");
  write_manifest("policy = \"no-git.toml\"\n[[repo]]\nurl = \"" + url("git.test", "svc.git") +
                 "\"\n");
  const e2e::Run narrowed = batch(d + "/out4");
  EXPECT_EQ(narrowed.exit_code, 2) << narrowed.out;
  EXPECT_NE(narrowed.out.find("(decided by batch.no-git in the cli layer"), std::string::npos)
      << narrowed.out;
  EXPECT_EQ(count_of(http_log(), "GET /svc.git/info/refs"), 1);

  // A file:// url (or a local path) is a path, never fetched: refused before anything starts.
  write_manifest("[[repo]]\nurl = \"file://" + d + "/srv/svc.git\"\n");
  const e2e::Run file = batch(d + "/out3");
  EXPECT_EQ(file.exit_code, 2) << file.out;
  EXPECT_NE(file.out.find("batch.toml:5:7: repo[0].url: \"file://"), std::string::npos) << file.out;
  EXPECT_FALSE(fs::exists(d + "/out3"));
}

TEST_F(BatchUrlTest, AShardChecksAndClonesOnlyItsOwnUrlsAndAFailedCloneIsTheItemsError) {
  const std::string d = dir_.path();
  // Two shards that split "svc" (allowed) from "gone" (an allowed host, a repository the
  // server does not have) and "other" (a host no rule allows).
  unsigned n = 2;
  auto shard = [&](const char* id) {
    for (unsigned i = 0; i < n; ++i)
      if (agent::batch::in_shard(id, i, n)) return i;
    return n;
  };
  while (shard("svc") == shard("other") || shard("svc") == shard("gone") ||
         shard("gone") == shard("other"))
    ++n;
  write_manifest("[[repo]]\nurl = \"" + url("git.test", "svc.git") + "\"\n[[repo]]\nurl = \"" +
                 url("git.test", "gone.git") + "\"\n[[repo]]\nurl = \"" +
                 url("other.test", "svc.git") + "\"\nid = \"other\"\n");
  auto arg = [&](unsigned i) { return std::to_string(i) + "/" + std::to_string(n); };
  const e2e::Run own = batch(d + "/svc", {"--shard", arg(shard("svc"))});
  EXPECT_EQ(own.exit_code, 0) << own.out;
  EXPECT_EQ(results_of(d + "/svc").size(), 1u) << own.out;
  EXPECT_EQ(result_for(results_of(d + "/svc"), "svc").value("status", ""), "passed");

  const e2e::Run gone = batch(d + "/gone", {"--shard", arg(shard("gone"))});
  EXPECT_EQ(gone.exit_code, 1) << gone.out;
  const json line = result_for(results_of(d + "/gone"), "gone");
  EXPECT_EQ(line.value("status", ""), "error") << gone.out;
  EXPECT_NE(line.value("reason", "")
                .find("cloning " + url("git.test", "gone.git") + " in the sandbox failed (exit "),
            std::string::npos)
      << line.dump();
  EXPECT_NE(line.value("reason", "").find("/clone.log)"), std::string::npos) << line.dump();
  EXPECT_NE(http_log().find("GET /gone.git/"), std::string::npos) << http_log();
  const e2e::Run other = batch(d + "/other", {"--shard", arg(shard("other"))});
  EXPECT_EQ(other.exit_code, 2) << other.out;
  EXPECT_NE(other.out.find("url " + url("other.test", "svc.git") + ": the policy does not allow"),
            std::string::npos)
      << other.out;
}

TEST_F(BatchUrlTest, AClonePastThePolicysFileSizeLimitIsTheItemsErrorNamingTheLimit) {
  const std::string d = dir_.path();
  // The clone is a call like any: a 200 KB repository under a 50 KiB file-size limit.
  const json line =
      error_under_resources("big", "head -c 200000 /dev/urandom > blob", "file_size = \"50KiB\"");
  EXPECT_NE(line.value("reason", "")
                .find("a file of the clone outgrew the policy's "
                      "resources.file_size"),
            std::string::npos)
      << line.dump();
  for (const auto& e : fs::directory_iterator(d + "/out/clones"))
    EXPECT_FALSE(fs::exists(e.path() / "repo.bundle")) << "a cut bundle was kept";
}

TEST_F(BatchUrlTest, AHostileRemoteRunsNothingOnTheHostAndWritesNothingOutsideTheWorkCopy) {
  const std::string d = dir_.path(), marks = d + "/marks", victim = d + "/victim";
  fs::create_directories(marks);
  fs::create_directories(victim);
  fs::create_directories(d + "/hooks");
  // The person's own git configuration (the batch's HOME): a filter driver as git-lfs installs
  // one, hooks, fsmonitor and submodule recursion. A remote's .gitattributes picks the filter.
  testing::write_text(d + "/hooks/post-checkout", "#!/bin/sh\ntouch '" + marks + "/hook'\n");
  testing::write_text(d + "/filter.sh", "#!/bin/sh\ntouch '" + marks + "'/\"$1\"\nexec cat\n");
  for (const char* f : {"/hooks/post-checkout", "/filter.sh"})
    fs::permissions(d + f, fs::perms::owner_all, fs::perm_options::add);
  testing::write_text(d + "/home/.gitconfig",
                      "[filter \"evil\"]\n\tsmudge = " + d + "/filter.sh smudge\n\tclean = " + d +
                          "/filter.sh clean\n\trequired = true\n[core]\n\thooksPath = " + d +
                          "/hooks\n[submodule]\n\trecurse = true\n[protocol \"file\"]\n\tallow = "
                          "always\n");
  // The remote: every file through the filter, a submodule on the same server, a symlink to a
  // host folder, and a tree with two entries named "link" (a symlink to that folder, and a
  // folder holding "pwned"), which fsck calls duplicateEntries; hooks and fsmonitor in the
  // served repository's own config.
  const std::string sub = d + "/srv/sub.git", hostile = d + "/hostile";
  sh(kGit + " init -q --bare '" + sub + "' && cd '" + d + "' && " + kGit +
     " init -q sub-src && cd sub-src && echo s > s && " + kGit + " add s && " + kGit +
     " -c user.name=t -c user.email=t@example.com commit -qm s && " + kGit + " push -q '" + sub +
     "' HEAD:refs/heads/master");
  const std::string sub_commit = rev_parse(sub, "master").substr(0, 40);
  sh(kGit + " init -q '" + hostile + "' && cd '" + hostile + "' && cp ../repo-00/lib.sh " +
     "../repo-00/main.sh ../repo-00/run_tests.sh . && printf '* filter=evil\\nmain.sh "
     "filter=evil2\\n' > .gitattributes "
     "&& printf '[submodule \"sub\"]\\n\\tpath = sub\\n\\turl = " +
     url("git.test", "sub.git") + "\\n' > .gitmodules && ln -s '" + victim + "' escape && " + kGit +
     " add -A && " + kGit + " update-index --add --cacheinfo 160000," + sub_commit + ",sub && " +
     kGit + " write-tree > ../tree.txt");
  const std::string tree_script = R"PY(
import subprocess, sys
def git(*a, data=None):
    return subprocess.run(["git"] + list(a), input=data, capture_output=True, check=True).stdout
root, victim = sys.argv[1], sys.argv[2].encode()
entries = []
for line in git("ls-tree", "-z", root).split(b"\0"):
    if not line: continue
    meta, name = line.split(b"\t", 1)
    mode, kind, sha = meta.split(b" ")
    entries.append((mode, name, bytes.fromhex(sha.decode()), kind == b"tree"))
link = git("hash-object", "-w", "--stdin", data=victim).strip()
pwned = git("hash-object", "-w", "--stdin", data=b"pwned\n").strip()
inner = git("mktree", data=b"100644 blob " + pwned + b"\tpwned\n").strip()
entries.append((b"120000", b"link", bytes.fromhex(link.decode()), False))
entries.append((b"40000", b"link", bytes.fromhex(inner.decode()), True))
entries.sort(key=lambda e: e[1] + (b"/" if e[3] else b""))
raw = b"".join(m + b" " + n + b"\0" + s for m, n, s, _ in entries)
print(git("hash-object", "-t", "tree", "-w", "--literally", "--stdin", data=raw).decode().strip())
)PY";
  testing::write_text(d + "/tree.py", tree_script);
  sh("cd '" + hostile + "' && export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null && " +
     "t=$(python3 ../tree.py $(cat ../tree.txt) '" + victim + "') && c=$(git -c user.name=t " +
     "-c user.email=t@example.com commit-tree $t -m hostile) && git update-ref " +
     "refs/heads/master $c && git clone -q --bare . '" + d + "/srv/hostile.git' && cd '" + d +
     "/srv/hostile.git' && git config core.hooksPath '" + d + "/hooks' && git config " +
     "core.fsmonitor '" + d + "/filter.sh' && cp '" + d +
     "/hooks/post-checkout' hooks/post-checkout");
  serve_all();
  write_manifest("[[repo]]\nurl = \"" + url("git.test", "hostile.git") + "\"\n");
  // ... and configuration in the batch's environment (GIT_CONFIG_COUNT), which git also reads.
  const e2e::Run r = batch(
      d + "/out", {},
      {"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=filter.evil2.smudge",
       "GIT_CONFIG_VALUE_0=" + d + "/filter.sh smudge-env", "GIT_CONFIG_KEY_1=filter.evil2.clean",
       "GIT_CONFIG_VALUE_1=" + d + "/filter.sh clean-env"});
  EXPECT_EQ(r.exit_code, 0) << r.out << read_file(d + "/out/results.jsonl");
  const auto results = results_of(d + "/out");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].value("status", ""), "passed") << results[0].dump();
  std::string ran;
  for (const auto& e : fs::directory_iterator(marks)) ran += e.path().filename().string() + " ";
  EXPECT_EQ(ran, "") << "ran on the host over the remote's files";
  EXPECT_TRUE(fs::is_empty(victim)) << "the work copy wrote through a symlink into " << victim;
  EXPECT_EQ(http_log().find("/sub.git/"), std::string::npos) << "the submodule was fetched";
  // The patch holds the agent's change and nothing of the hostile entries: the submodule is
  // kept as it was (not shown as deleted), the symlink too. (The duplicate "link" entries cannot
  // both be in a work copy, so git shows one of them as deleted; moat does not fsck.)
  const std::string patch = read_file(d + "/out/patches/hostile.patch");
  for (const char* untouched : {"escape", "sub", ".gitattributes", ".gitmodules", "link/pwned"})
    EXPECT_EQ(patch.find(std::string(" b/") + untouched + "\n"), std::string::npos) << patch;
  EXPECT_NE(patch.find("+sum_line_items() {"), std::string::npos) << patch;
}

TEST_F(BatchUrlTest, AServersMessageInTheItemsReasonActsOnNoTerminal) {
  // A server that answers the smart protocol's first request with an ERR line: git quotes it
  // ("fatal: remote error: ..."), replacing C0 controls, but not C1 controls in UTF-8 (C2 9B is
  // CSI, ESC [ by another name), and the item's reason quotes git's last line.
  const std::string d = dir_.path(), cgi = d + "/srv/cgi-bin";
  fs::create_directories(cgi);
  testing::write_text(cgi + "/err",
                      "#!/usr/bin/env python3\nimport sys\n"
                      "def pkt(b): return b'%04x' % (len(b) + 4) + b\n"
                      "msg = b'ERR evil \\xc2\\x9b2J\\xc2\\x9d0;title\\xc2\\x9c end'\n"
                      "sys.stdout.buffer.write(b'Content-Type: "
                      "application/x-git-upload-pack-advertisement\\r\\n\\r\\n' + "
                      "pkt(b'# service=git-upload-pack\\n') + b'0000' + pkt(msg))\n");
  fs::permissions(cgi + "/err", fs::perms::all, fs::perm_options::add);
  std::string smart_port;
  const pid_t smart = start_cgi_server(smart_port);
  const bool up = !smart_port.empty();
  if (up) {
    write_manifest("[[repo]]\nurl = \"http://git.test:" + smart_port + "/cgi-bin/err/svc.git\"\n");
    const e2e::Run r = batch(d + "/out");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    const json line = result_for(results_of(d + "/out"), "svc");
    EXPECT_NE(line.value("reason", "").find("remote error: evil"), std::string::npos)
        << line.dump();
    EXPECT_NE(r.out.find("remote error: evil"), std::string::npos) << r.out;
    for (const char* c1 : {"\xc2\x9b", "\xc2\x9d", "\xc2\x9c"})
      EXPECT_EQ(r.out.find(c1), std::string::npos) << "a C1 control reached the terminal";
  }
  kill(smart, SIGTERM);
  wait_exit(smart, 10);
  ASSERT_TRUE(up) << read_file(d + "/smart.log");
}

TEST_F(BatchUrlTest, AnOutFolderAnotherUserCanWriteIsRefusedBeforeAnythingIsWrittenInIt) {
  // Another local user made OUT (e.g. in /tmp) before the person ran the batch, and planted a
  // symlink where the clone's bundle is written (OUT/clones/KEY: KEY is the url's SHA-256).
  if (geteuid() != 0) GTEST_SKIP() << "making a folder of another user's needs root";
  const std::string d = dir_.path(), out = d + "/shared", victim = d + "/victim";
  const std::string u = url("git.test", "svc.git");
  const std::string key = run({"sh", "-c", "printf %s '" + u + "' | sha256sum"}).out.substr(0, 16);
  fs::create_directories(out + "/clones/" + key);
  testing::write_text(victim, "the person's own file\n");
  fs::create_symlink(victim, out + "/clones/" + key + "/repo.bundle.tmp");
  for (const std::string& p : {out, out + "/clones", out + "/clones/" + key}) {
    ASSERT_EQ(::chown(p.c_str(), 65534, 65534), 0) << p;
    fs::permissions(p, fs::perms::all);
  }
  write_manifest("[[repo]]\nurl = \"" + u + "\"\n");
  const e2e::Run r = batch(out);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find(out + ": owned by uid 65534"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(victim), "the person's own file\n") << "written through the planted link";
  EXPECT_FALSE(fs::exists(out + "/batch.json")) << "the batch wrote into the other user's folder";
}

TEST_F(BatchUrlTest, ARedirectToAHostThePolicyDoesNotAllowIsRefusedByTheProxy) {
  // git follows the first request's redirect (http.followRedirects=initial): the proxy judges
  // the host it leads to as any other connection. Once other.test is allowed too, the same
  // redirect clones, so the refusal is the policy's and not git's.
  const std::string d = dir_.path();
  testing::write_text(d + "/redirect.py",
                      "import http.server, sys\n"
                      "class H(http.server.BaseHTTPRequestHandler):\n"
                      "    def do_GET(self):\n"
                      "        self.send_response(302)\n"
                      "        self.send_header('Location', sys.argv[1] + self.path)\n"
                      "        self.send_header('Content-Length', '0')\n"
                      "        self.end_headers()\n"
                      "s = http.server.HTTPServer(('127.0.0.1', 0), H)\n"
                      "print('port', s.server_address[1], flush=True)\n"
                      "s.serve_forever()\n");
  std::string port;
  const pid_t redirect =
      start_server({"python3", "-u", d + "/redirect.py", "http://other.test:" + port_},
                   d + "/redirect.log", port);
  const bool up = !port.empty();
  if (up) {
    write_manifest("[[repo]]\nurl = \"http://git.test:" + port + "/svc.git\"\n");
    const e2e::Run r = batch(d + "/out");
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_EQ(result_for(results_of(d + "/out"), "svc").value("status", ""), "error") << r.out;
    EXPECT_NE(read_file(d + "/redirect.log").find("GET /svc.git/info/refs"), std::string::npos)
        << read_file(d + "/redirect.log");
    EXPECT_EQ(http_log().find("GET /svc.git/"), std::string::npos) << http_log();

    testing::write_text(d + "/config/moat/policy.d/other.toml",
                        "schema = 1\n[[network]]\nid = \"test.other\"\ndecision = \"allow\"\n"
                        "domains = [\"other.test\"]\n");
    const e2e::Run allowed = batch(d + "/out-allowed");
    EXPECT_EQ(allowed.exit_code, 0) << allowed.out;
    EXPECT_NE(http_log().find("GET /svc.git/"), std::string::npos) << http_log();
  }
  kill(redirect, SIGTERM);
  wait_exit(redirect, 10);
  ASSERT_TRUE(up) << read_file(d + "/redirect.log");
}

TEST_F(BatchUrlTest, ACheckoutLargerThanThePolicysNetworkBytesIsRefusedBeforeItIsWritten) {
  // A git bomb: one 64 KiB blob of zeros named by 300 files, a pack of a few KiB that checks
  // out as 19.6 MB on the host (outside any sandbox), under network_bytes = 1MiB.
  const json line = error_under_resources(
      "bomb", "head -c 65536 /dev/zero > z && for i in $(seq 300); do cp z f$i; done",
      "network_bytes = \"1MiB\"");
  EXPECT_NE(line.value("reason", "")
                .find("more than 1048576 bytes (the policy's "
                      "resources.network_bytes)"),
            std::string::npos)
      << line.dump();
  EXPECT_FALSE(fs::exists(dir_.path() + "/out/work/bomb/f1")) << "the bomb was checked out";
}

}  // namespace
}  // namespace moat::e2e

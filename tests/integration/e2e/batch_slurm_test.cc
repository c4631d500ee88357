// tests/integration/e2e/batch_slurm_test.cc: `moat batch --shard` under a real engine: munged,
// slurmctld and slurmd on localhost with a generated slurm.conf, a 4-task job array over a
// manifest of 8 generated repositories (replay files), then `moat batch merge` and the 8
// patches applied. Skips, naming the check that failed, only where the daemons cannot start.
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "agent/batch/results.h"
#include "tests/integration/e2e/e2e_support.h"
#include "tests/support/batch_repos.h"

namespace moat::e2e {
namespace {

namespace fs = std::filesystem;

constexpr int kRepos = 8;
constexpr int kShards = 4;

bool have(const char* program) {
  return run({"sh", "-c", std::string("command -v ") + program}).exit_code == 0;
}

std::string short_hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string h = name;
  return h.substr(0, h.find('.'));
}

class BatchSlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!sandbox_available(&why)) GTEST_SKIP() << why;
    if (::geteuid() != 0) GTEST_SKIP() << "check 'root': slurmd must run as root to start jobs";
    if (!have("slurmctld") || !have("slurmd") || !have("munged") || !have("sbatch")) {
      // The test installs the engine when it is missing (scripts/lib.sh lists it).
      const e2e::Run apt = run({"sh", "-c",
                           "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "
                           "--no-install-recommends slurm-wlm munge"},
                          {}, 600);
      if (!have("slurmctld") || !have("slurmd") || !have("munged") || !have("sbatch"))
        GTEST_SKIP() << "check 'installed': slurm-wlm and munge are missing and apt-get could not "
                        "install them: "
                     << apt.out.substr(apt.out.size() > 400 ? apt.out.size() - 400 : 0);
    }
    conf_ = dir_.path() + "/slurm.conf";
  }

  void TearDown() override {
    for (pid_t pid : daemons_) {  // only the daemons this test started
      ::kill(pid, SIGTERM);
      wait_exit(pid, 10);  // SIGKILL after 10 s
    }
  }

  std::vector<std::string> slurm_env() const { return {"SLURM_CONF=" + conf_}; }

  // munged in the foreground with a fresh key, on a socket of its own; "" or why it failed.
  std::string start_munge() {
    const std::string m = dir_.path() + "/munge";
    fs::create_directories(m);
    fs::permissions(m, fs::perms::owner_all, fs::perm_options::replace);
    run({"sh", "-c",
         "dd if=/dev/urandom of='" + m +
             "/munge.key' bs=1024 count=1 2>/dev/null && "
             "chmod 400 '" +
             m + "/munge.key'"});
    daemons_.push_back(start(
        {"munged", "-F", "--force", "--key-file=" + m + "/munge.key", "--socket=" + m + "/sock",
         "--pid-file=" + m + "/pid", "--log-file=" + m + "/log", "--seed-file=" + m + "/seed"},
        m + "/out"));
    if (eventually([&] { return fs::exists(m + "/sock"); }, std::chrono::seconds(15))) return "";
    return "munged did not create its socket: " + read_file(m + "/out") + read_file(m + "/log");
  }

  void write_conf() {
    const std::string d = dir_.path(), host = short_hostname();
    fs::create_directories(d + "/state");
    fs::create_directories(d + "/spool");
    testing::write_text(
        conf_, "ClusterName=moattest\nSlurmctldHost=" + host + "(127.0.0.1)\nSlurmctldPort=" +
                   std::to_string(free_loopback_port()) +
                   "\nSlurmdPort=" + std::to_string(free_loopback_port()) +
                   "\nAuthType=auth/munge\nAuthInfo=socket=" + d +
                   "/munge/sock\nCredType=cred/munge\nSlurmUser=root\nSlurmdUser=root\n"
                   "StateSaveLocation=" +
                   d + "/state\nSlurmdSpoolDir=" + d +
                   "/spool\n"
                   "SlurmctldPidFile=" +
                   d + "/slurmctld.pid\nSlurmdPidFile=" + d + "/slurmd.pid\nSlurmctldLogFile=" + d +
                   "/slurmctld.log\nSlurmdLogFile=" + d +
                   "/slurmd.log\n"
                   // No cgroups, no accounting: light daemons on a shared 2-core machine.
                   "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                   "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
                   "JobAcctGatherType=jobacct_gather/none\n"
                   "AccountingStorageType=accounting_storage/none\nMpiDefault=none\n"
                   "ReturnToService=2\nSchedulerType=sched/builtin\n"
                   "NodeName=moatnode NodeHostname=" +
                   host +
                   " NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN\n"
                   "PartitionName=moat Nodes=moatnode Default=YES MaxTime=INFINITE State=UP\n");
  }

  // slurmctld and slurmd; "" once the node is idle, else which one failed and its log.
  std::string start_slurm() {
    const std::string d = dir_.path();
    daemons_.push_back(
        start({"slurmctld", "-D", "-c", "-f", conf_}, d + "/slurmctld.out", slurm_env()));
    daemons_.push_back(
        start({"slurmd", "-D", "-N", "moatnode", "-f", conf_}, d + "/slurmd.out", slurm_env()));
    const bool idle = eventually(
        [&] {
          return run({"sinfo", "-h", "-o", "%t"}, slurm_env(), 10).out.find("idle") == 0;
        },
        std::chrono::seconds(60));
    if (idle) return "";
    return "the node never became idle; slurmctld: " + read_file(d + "/slurmctld.out") +
           read_file(d + "/slurmctld.log") + "\nslurmd: " + read_file(d + "/slurmd.out") +
           read_file(d + "/slurmd.log");
  }

  TempDir dir_;
  std::string conf_;
  std::vector<pid_t> daemons_;
};

TEST_F(BatchSlurmTest, AFourTaskJobArrayRunsEightItemsAndTheMergeHasEightPatchesThatApply) {
  if (std::string why = start_munge(); !why.empty()) GTEST_SKIP() << "check 'munged': " << why;
  write_conf();
  if (std::string why = start_slurm(); !why.empty()) GTEST_SKIP() << "check 'slurmd': " << why;

  const std::string d = dir_.path();
  ASSERT_TRUE(testing::make_batch_repos(d, kRepos));
  // The shape of docs/batch.md's sbatch script.
  testing::write_text(d + "/job.sh", "#!/bin/sh\nset -e\nexec '" + moat_bin() +
                                         "' batch batch.toml --jobs 1 --resume --shard "
                                         "\"$SLURM_ARRAY_TASK_ID/" +
                                         std::to_string(kShards) +
                                         "\" --out \"out/shard-$SLURM_ARRAY_TASK_ID\"\n");
  const e2e::Run job =
      run({"sbatch", "--wait", "--array=0-" + std::to_string(kShards - 1), "--cpus-per-task=1",
           "--chdir=" + d, "--output=" + d + "/slurm-%a.log", d + "/job.sh"},
          slurm_env(), 900);
  std::string logs;
  for (int i = 0; i < kShards; ++i) logs += read_file(d + "/slurm-" + std::to_string(i) + ".log");
  ASSERT_EQ(job.exit_code, 0) << job.out << logs;

  std::vector<std::string> merge = {moat_bin(), "batch", "merge", "--out", d + "/merged"};
  for (int i = 0; i < kShards; ++i) merge.push_back(d + "/out/shard-" + std::to_string(i));
  const e2e::Run merged = run(merge);
  ASSERT_EQ(merged.exit_code, 0) << merged.out;
  const auto results = agent::batch::parse_results(read_file(d + "/merged/results.jsonl"));
  ASSERT_EQ(results.size(), static_cast<std::size_t>(kRepos)) << merged.out << logs;
  for (const auto& r : results) {
    const std::string id = r["id"];
    EXPECT_EQ(r.value("status", ""), "passed") << r.dump();
    const e2e::Run a = run({"sh", "-c",
                       "git clone -q '" + d + "/" + id + "' '" + d + "/apply-" + id + "' && cd '" +
                           d + "/apply-" + id + "' && git apply '" + d + "/merged/patches/" + id +
                           ".patch' && sh run_tests.sh"});
    EXPECT_EQ(a.exit_code, 0) << id << ": " << a.out;
  }
  EXPECT_TRUE(fs::exists(d + "/merged/report.html"));
}

}  // namespace
}  // namespace moat::e2e

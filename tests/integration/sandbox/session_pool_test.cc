// tests/integration/sandbox/session_pool_test.cc: moatd's pool of sessions built ahead of their
// hello (sandbox/session_pool.h): a hello is served by a pre-built session, the pool refills,
// nothing of one pooled session reaches the next, a pooled keeper that died is discarded, and
// the pool's end leaves no process or cgroup behind.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sandbox/ns_mount.h"
#include "sandbox/session_pool.h"
#include "sandbox/session_prebuilt.h"
#include "tests/integration/sandbox/test_util.h"
#include "tests/support/proc_tree.h"

namespace moat::sandbox {
namespace {

using namespace std::chrono_literals;
using moat::testing_support::descendants_of;
using moat::testing_support::state_of;
using testing::TempDir;

SessionConfig config_for(const TempDir& ws) {
  SessionConfig c;
  c.workspace = ws.path();
  return c;
}

// The pool's first create() tells it what to build (and is built fresh); then `ready` wait.
#define MOAT_PRIMED_POOL_OR_SKIP(pool, ws, first)                                         \
  auto first##_made = pool.create(config_for(ws));                                        \
  if (!first##_made && first##_made.error().context.find("user_ns") != std::string::npos) \
    GTEST_SKIP() << "no user namespaces here: " << first##_made.error().message();        \
  ASSERT_TRUE(first##_made) << first##_made.error().message();                            \
  auto first = std::move(*first##_made);                                                  \
  ASSERT_TRUE(pool.wait_ready(2, 10s)) << "the pool did not build its sessions"

// This process's children: the session keepers (moatd's, here the test's).
std::set<pid_t> own_children() { return moat::testing_support::children_of(::getpid()); }

pid_t parent_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  pid_t ppid = -1;
  std::istringstream(line.substr(line.rfind(')') + 2)) >> std::skipws >> line >> ppid;
  return ppid;
}

// The pooled keepers: this process's children but the keepers of the sessions in `live`.
std::set<pid_t> pooled_keepers(const std::vector<const Session*>& live) {
  std::set<pid_t> kids = own_children();
  for (const Session* s : live) kids.erase(parent_of(s->init_pid()));
  return kids;
}

// The pooled keepers' inits (moatd as root: a keeper reports ready once its namespaces are
// made and forks its init right after), waiting up to 5 s for `n` of them.
std::set<pid_t> pooled_inits(const std::vector<const Session*>& live, std::size_t n) {
  std::set<pid_t> inits;
  for (auto until = std::chrono::steady_clock::now() + 5s;
       inits.size() < n && std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(2ms)) {
    inits.clear();
    for (pid_t keeper : pooled_keepers(live))
      for (pid_t init : moat::testing_support::children_of(keeper)) inits.insert(init);
  }
  return inits;
}

// The cgroup directories a process is in (v2's one line, or v1's pids and memory).
std::vector<std::string> cgroup_dirs_of(pid_t pid) {
  std::vector<std::string> out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  for (std::string line; std::getline(in, line);) {
    const std::string path = line.substr(line.find(':', line.find(':') + 1) + 1);
    if (path.find("/moat-") == std::string::npos) continue;
    const std::string ctrl = line.substr(line.find(':') + 1, line.rfind(':') - line.find(':') - 1);
    out.push_back("/sys/fs/cgroup" + (ctrl.empty() ? "" : "/" + ctrl) + path);
  }
  return out;
}

std::string ns_ids(Session& s) {
  auto r = testing::sh(s, "for n in user mnt pid net ipc uts cgroup; do readlink /proc/self/ns/$n; done");
  return r ? r->output : r.error().message();
}

TEST(SessionPool, AHelloIsServedByAPrebuiltSessionAndThePoolRefills) {
  TempDir ws0, ws;
  ws.write("in.txt", "pooled\n");
  SessionPool pool(2);
  MOAT_PRIMED_POOL_OR_SKIP(pool, ws0, first);
  EXPECT_FALSE(first->describe().pooled) << "the first hello is built fresh: the pool was empty";
  auto made = pool.create(config_for(ws));
  ASSERT_TRUE(made) << made.error().message();
  Session& s = **made;
  EXPECT_TRUE(s.describe().pooled);
  EXPECT_TRUE(to_json(s.describe()).value("pooled", false));
  EXPECT_EQ(pool.counts().served, 1u);
  // Finished for this hello: its workspace, its view and its layers.
  auto r = testing::sh(s, "cat in.txt && pwd && echo x > out.txt && id -u");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->output, "pooled\n" + ws.path() + "\n0\n");
  EXPECT_EQ(ws.read("out.txt"), "x\n");
  EXPECT_TRUE(s.describe().layers.seccomp.value_or(false));
  ASSERT_TRUE(pool.wait_ready(2, 10s)) << "the pool did not refill";
  EXPECT_GE(pool.counts().built, 3u);
}

TEST(SessionPool, APooledSessionSharesNothingWithTheNext) {
  TempDir ws0, ws1, ws2;
  SessionPool pool(2);
  MOAT_PRIMED_POOL_OR_SKIP(pool, ws0, first);
  SessionConfig c1 = config_for(ws1);
  c1.env["FIRST_SESSIONS_SECRET"] = "s1";
  auto one = pool.create(c1);
  ASSERT_TRUE(one) << one.error().message();
  ASSERT_TRUE((*one)->describe().pooled);
  // The first leaves a file in its /tmp and keeps a process running while the next looks.
  std::thread running([&] {
    (void)testing::sh(**one, "echo left > /tmp/left-behind; touch started; exec sleep 1");
  });
  for (int i = 0; i < 500 && !std::filesystem::exists(ws1.file("started")); ++i)
    std::this_thread::sleep_for(10ms);
  auto two = pool.create(config_for(ws2));
  ASSERT_TRUE(two) << two.error().message();
  EXPECT_TRUE((*two)->describe().pooled);
  auto seen = testing::sh(**two, "ls -A /tmp; cat /proc/[0-9]*/comm; env");
  running.join();
  ASSERT_TRUE(seen) << seen.error().message();
  EXPECT_EQ(seen->output.find("left-behind"), std::string::npos) << seen->output;
  EXPECT_EQ(seen->output.find("sleep"), std::string::npos) << seen->output;
  EXPECT_EQ(seen->output.find("FIRST_SESSIONS_SECRET"), std::string::npos) << seen->output;
  // Seven namespaces each, none shared.
  std::istringstream a(ns_ids(**one)), b(ns_ids(**two));
  std::set<std::string> ids;
  int lines = 0;
  for (std::string l; std::getline(a, l); ++lines) ids.insert(l);
  for (std::string l; std::getline(b, l); ++lines) ids.insert(l);
  EXPECT_EQ(lines, 14);
  EXPECT_EQ(ids.size(), 14u) << ns_ids(**one) << ns_ids(**two);
  EXPECT_NE(parent_of((*one)->init_pid()), parent_of((*two)->init_pid()));
}

TEST(SessionPool, AKeeperThatDiedIsDiscardedNotHandedOut) {
  TempDir ws0, ws;
  SessionPool pool(2);
  MOAT_PRIMED_POOL_OR_SKIP(pool, ws0, first);
  const std::set<pid_t> pooled = pooled_keepers({first.get()});
  ASSERT_EQ(pooled.size(), 2u);
  for (pid_t pid : pooled) ASSERT_EQ(kill(pid, SIGKILL), 0);
  std::this_thread::sleep_for(20ms);  // the kill is delivered; nobody has reaped them yet
  auto made = pool.create(config_for(ws));
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_FALSE((*made)->describe().pooled) << "a dead keeper's session was handed out";
  EXPECT_EQ(pool.counts().discarded, 2u);
  auto r = testing::sh(**made, "echo alive");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->output, "alive\n");
}

TEST(SessionPool, ItsEndKillsThePooledKeepersAndRemovesTheirCgroups) {
  TempDir ws0;
  auto pool = std::make_unique<SessionPool>(2);
  std::set<pid_t> pooled;
  std::vector<std::string> dirs;
  {
    MOAT_PRIMED_POOL_OR_SKIP((*pool), ws0, first);
    pooled = pooled_keepers({first.get()});
  }
  ASSERT_EQ(pooled.size(), 2u);
  for (pid_t pid : pooled)
    for (std::string& d : cgroup_dirs_of(pid)) dirs.push_back(std::move(d));
  for (const std::string& d : dirs) ASSERT_TRUE(std::filesystem::exists(d)) << d;
  pool.reset();
  for (pid_t pid : pooled) EXPECT_EQ(own_children().count(pid), 0u) << "keeper " << pid << " left";
  for (pid_t pid : pooled) EXPECT_TRUE(kill(pid, 0) != 0 && errno == ESRCH) << pid;
  for (const std::string& d : dirs) EXPECT_FALSE(std::filesystem::exists(d)) << d;
  if (dirs.empty()) std::printf("no cgroup here: only the keepers' end was checked\n");
}

// Session::end (what a bye's answer waits for, supervisor.cc) leaves no process of the
// session's pid namespace, the init ended; the keeper's reaping and the cgroup's removal are
// the destructor's, after the answer. A process the session left running is gone at end().
TEST(SessionPool, EndLeavesNoProcessOfTheSessionAndItsDestructionTheKeeperAndCgroup) {
  TempDir ws0, ws;
  SessionPool pool(2);
  MOAT_PRIMED_POOL_OR_SKIP(pool, ws0, first);
  auto made = pool.create(config_for(ws));
  ASSERT_TRUE(made) << made.error().message();
  std::unique_ptr<Session> s = std::move(*made);
  ASSERT_TRUE(s->describe().pooled);
  // A call still running at end(): its shell and sleep are the session's processes.
  std::thread running([&] { (void)testing::sh(*s, "sleep 600 & touch started; wait", 60); });
  for (int i = 0; i < 500 && !std::filesystem::exists(ws.file("started")); ++i)
    std::this_thread::sleep_for(10ms);
  const pid_t init = s->init_pid(), keeper = parent_of(init);
  const std::set<pid_t> inside = descendants_of(init);
  const std::vector<std::string> dirs = cgroup_dirs_of(keeper);
  s->end();
  running.join();  // its call ended with the session's processes
  ASSERT_GE(inside.size(), 2u) << "the running call's shell and sleep were not found";
  for (pid_t pid : inside) EXPECT_EQ(state_of(pid), 0) << "process " << pid << " of the session";
  EXPECT_TRUE(state_of(init) == 0 || state_of(init) == 'Z') << state_of(init);
  EXPECT_EQ(own_children().count(keeper), 1u) << "the keeper was reaped before the destructor";
  for (const std::string& d : dirs) EXPECT_TRUE(std::filesystem::exists(d)) << d;
  s->end();  // a second end does nothing
  s.reset();
  EXPECT_EQ(own_children().count(keeper), 0u) << "keeper " << keeper << " left";
  EXPECT_TRUE(kill(keeper, 0) != 0 && errno == ESRCH) << keeper;
  for (const std::string& d : dirs) EXPECT_FALSE(std::filesystem::exists(d)) << d;
  if (dirs.empty()) std::printf("no cgroup here: only the processes were checked\n");
}

// A pooled session's idmap user namespace (moatd as root) is made with it, ahead of its hello,
// for the owner it is given: a hello then only clones and idmaps its workspace. Each pooled
// session has its own, never another's.
TEST(SessionPool, APooledSessionsIdmapNamespaceIsMadeAheadAndIsItsOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "rootless: no idmapped trees (the keeper clones them)";
  TempDir ws;
  ws.write("in.txt", "x\n");
  const IdOwner owner{0, 0};
  auto a = prebuild_session(config_for(ws), owner);
  if (!a && a.error().context.find("user_ns") != std::string::npos)
    GTEST_SKIP() << "no user namespaces here: " << a.error().message();
  ASSERT_TRUE(a) << a.error().message();
  auto b = prebuild_session(config_for(ws), owner);
  ASSERT_TRUE(b) << b.error().message();
  ASSERT_TRUE((*a)->userns.fd.valid()) << "no idmap namespace made ahead";
  ASSERT_TRUE((*b)->userns.fd.valid());
  EXPECT_TRUE((*a)->userns.owner == owner);
  struct stat sa {}, sb {};
  ASSERT_EQ(fstat((*a)->userns.fd.get(), &sa), 0);
  ASSERT_EQ(fstat((*b)->userns.fd.get(), &sb), 0);
  EXPECT_NE(sa.st_ino, sb.st_ino) << "two pooled sessions share one idmap namespace";
  auto made = finish_session(std::move(*a), config_for(ws));
  ASSERT_TRUE(made) << made.error().message();
  auto r = testing::sh(**made, "stat -c %u:%g in.txt && touch out.txt");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->output, "0:0\n");
  struct stat out {};
  ASSERT_EQ(stat(ws.file("out.txt").c_str(), &out), 0);
  EXPECT_EQ(out.st_uid, 0u) << "what the sandbox writes lands as the workspace's owner";
}

// The namespace made ahead maps the last hello's workspace owner: a hello whose workspace has
// another owner gets one made for its own, and its files appear as the sandbox's root, never as
// the overflow id a borrowed mapping would show.
TEST(SessionPool, AHelloWhoseWorkspaceHasAnotherOwnerGetsAnIdmapForIt) {
  if (geteuid() != 0) GTEST_SKIP() << "rootless: no idmapped trees (the keeper clones them)";
  TempDir ws0, ws;
  ws.write("in.txt", "x\n");
  ASSERT_EQ(chown(ws.path().c_str(), 4321, 4321), 0);
  ASSERT_EQ(chown(ws.file("in.txt").c_str(), 4321, 4321), 0);
  SessionPool pool(2);
  MOAT_PRIMED_POOL_OR_SKIP(pool, ws0, first);  // the pool's next sessions: for ws0's owner, root
  auto made = pool.create(config_for(ws));
  ASSERT_TRUE(made) << made.error().message();
  EXPECT_TRUE((*made)->describe().pooled);
  EXPECT_TRUE((*made)->describe().idmap);
  auto r = testing::sh(**made, "stat -c %u:%g in.txt && touch out.txt");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->output, "0:0\n") << "the workspace's owner is not the sandbox's root";
  struct stat out {};
  ASSERT_EQ(stat(ws.file("out.txt").c_str(), &out), 0);
  EXPECT_EQ(out.st_uid, 4321u);
  EXPECT_EQ(out.st_gid, 4321u);
}

// Another shape than config_for's: the cgroup layer left out (so rootless runs build it too),
// the pids ceiling `pids`; as a second user's hellos, or another policy's limits, would differ.
SessionConfig other_shape(const TempDir& ws, std::uint64_t pids) {
  SessionConfig c = config_for(ws);
  c.allow_without = {"cgroup"};
  c.limits.pids = pids;
  return c;
}

double median_ms(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Two shapes whose hellos alternate (two users on a system moatd) each find theirs: the pool
// used to keep one shape and drop its sessions at every hello of the other, so neither was
// ever served from it and each hello built its session fresh.
TEST(SessionPool, HellosOfTwoShapesThatAlternateAreEachServedFromThePool) {
  TempDir ws0, ws;
  SessionPool pool(2);
  MOAT_PRIMED_POOL_OR_SKIP(pool, ws0, first);
  first.reset();
  const SessionConfig shapes[] = {config_for(ws), other_shape(ws, 512)};
  std::vector<double> took;
  for (int i = 0; i < 12; ++i) {
    (void)pool.wait_ready(4, 300ms);  // an idle moment between two hellos: the refill runs
    const auto began = std::chrono::steady_clock::now();
    auto made = pool.create(shapes[i % 2]);
    took.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                             began).count());
    ASSERT_TRUE(made) << made.error().message();
    EXPECT_EQ((*made)->describe().pooled, i != 1) << "hello " << i << " (1: its shape is new)";
  }
  std::printf("alternating shapes: a hello's session in %.2f ms (median of %zu)\n",
              median_ms(std::vector<double>(took.begin() + 2, took.end())), took.size() - 2);
  EXPECT_EQ(pool.counts().served, 11u);
}

// A client cycling through more shapes than the pool keeps cannot make moatd hold more than
// kPoolShapes x size sessions (nor keepers); the most recent shapes are the ones kept.
TEST(SessionPool, AClientCyclingShapesCannotMakeItHoldMoreThanItsBound) {
  TempDir ws;
  SessionPool pool(2);
  constexpr std::size_t kBound = 2 * kPoolShapes;
  constexpr std::uint64_t kShapes = kPoolShapes + 6;
  for (std::uint64_t i = 0; i < kShapes; ++i) {
    auto made = pool.create(other_shape(ws, 100 + i));
    if (!made && made.error().context.find("user_ns") != std::string::npos)
      GTEST_SKIP() << "no user namespaces here: " << made.error().message();
    ASSERT_TRUE(made) << made.error().message();
    made->reset();
    (void)pool.wait_ready(kBound, 200ms);
    EXPECT_LE(pool.counts().ready, kBound) << "after shape " << i;
    EXPECT_LE(pooled_keepers({}).size(), kBound) << "after shape " << i;
  }
  ASSERT_TRUE(pool.wait_ready(kBound, 10s)) << "the pool did not fill its shapes";
  EXPECT_EQ(pooled_keepers({}).size(), kBound);
  for (std::uint64_t i = kShapes - kPoolShapes; i < kShapes; ++i) {
    auto made = pool.create(other_shape(ws, 100 + i));
    ASSERT_TRUE(made) << made.error().message();
    EXPECT_TRUE((*made)->describe().pooled) << "a recent shape (" << i << ") was dropped";
  }
  auto old = pool.create(other_shape(ws, 100));
  ASSERT_TRUE(old) << old.error().message();
  EXPECT_FALSE((*old)->describe().pooled) << "the least recently used shape was kept";
}


// moatd as root: a pooled session's init is forked with its keeper, before any hello, and has
// built the view's system part (sandbox/ns_mount.h stage_view_in_init). Each hello gets one of
// those inits, a different one each time, never one that served a hello before: what the
// first session wrote to its /tmp is not in the second's.
TEST(SessionPool, APooledSessionsInitIsBuiltAheadAndServesOneHelloOnly) {
  if (geteuid() != 0) GTEST_SKIP() << "rootless: the pooled keeper forks its init at the hello";
  TempDir ws0, ws1, ws2;
  SessionPool pool(2);
  MOAT_PRIMED_POOL_OR_SKIP(pool, ws0, first);
  // The pooled keepers' inits, forked before any hello for them.
  const std::set<pid_t> ahead = pooled_inits({first.get()}, 2);
  ASSERT_EQ(ahead.size(), 2u) << "each pooled keeper has its init before its hello";
  auto one = pool.create(config_for(ws1));
  ASSERT_TRUE(one) << one.error().message();
  ASSERT_TRUE((*one)->describe().pooled);
  EXPECT_EQ(ahead.count((*one)->init_pid()), 1u) << "not an init built ahead";
  auto wrote =
      testing::sh(**one, "echo one > /tmp/left && tr -d '\\0' < /proc/1/cmdline; echo; hostname");
  ASSERT_TRUE(wrote) << wrote.error().message();
  EXPECT_EQ(wrote->output, "moat-init\nmoat\n");
  auto two = pool.create(config_for(ws2));
  ASSERT_TRUE(two) << two.error().message();
  ASSERT_TRUE((*two)->describe().pooled);
  EXPECT_EQ(ahead.count((*two)->init_pid()), 1u) << "not an init built ahead";
  EXPECT_NE((*one)->init_pid(), (*two)->init_pid());
  auto seen = testing::sh(**two, "ls -A /tmp; pwd; touch here");
  ASSERT_TRUE(seen) << seen.error().message();
  // Its /tmp holds only the mount point of its own workspace (a TempDir lies in /tmp).
  const std::string own = std::filesystem::path(ws2.path()).filename().string();
  EXPECT_EQ(seen->output, own + "\n" + ws2.path() + "\n") << "it saw the first's /tmp";
  EXPECT_TRUE(std::filesystem::exists(ws2.file("here")));
  EXPECT_FALSE(std::filesystem::exists(ws1.file("here")));
}

// The view an init built ahead holds was made for its shape's read_only, tmp_size and
// hostname: a hello that differs in any of them is not served by it (it gets a session of its
// own shape, built fresh the first time), and gets the view it asked for.
TEST(SessionPool, AHelloOfAnotherViewIsNotServedByAnInitBuiltForAnother) {
  TempDir ws0, ws;
  SessionPool pool(2);
  MOAT_PRIMED_POOL_OR_SKIP(pool, ws0, first);
  SessionConfig tmp = config_for(ws);
  tmp.limits.tmp_size = 3u << 20;
  SessionConfig host = config_for(ws);
  host.hostname = "other-host";
  SessionConfig ro = config_for(ws);
  ro.read_only = {"/usr", "/bin", "/lib", "/lib64", "/etc"};  // no /sbin
  for (const SessionConfig& c : {tmp, host, ro}) {
    auto made = pool.create(c);
    ASSERT_TRUE(made) << made.error().message();
    EXPECT_FALSE((*made)->describe().pooled) << "served by a view built for another shape";
    auto r = testing::sh(
        **made, "df -k /tmp | tail -1 | awk '{print $2}'; hostname; test -e /sbin && echo sbin");
    ASSERT_TRUE(r) << r.error().message();
    const std::string want_sbin = c.read_only.empty() ? "sbin\n" : "";
    EXPECT_EQ(r->output, std::to_string(c.limits.tmp_size >> 10) + "\n" + c.hostname + "\n" +
                             want_sbin);
  }
  auto same = pool.create(config_for(ws));
  ASSERT_TRUE(same) << same.error().message();
  EXPECT_TRUE((*same)->describe().pooled) << "the first shape's sessions were still there";
}

std::string mountinfo_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/mountinfo");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Waits (up to 5 s each) until both pooled inits' staged views hold `path`: their mountinfo
// names it.
void wait_until_staged(const Session* first, const std::string& path) {
  for (pid_t init : pooled_inits({first}, 2))
    for (int i = 0; i < 500 && mountinfo_of(init).find(path) == std::string::npos; ++i)
      std::this_thread::sleep_for(10ms);
}

// An init built ahead bound its read-only host paths at the pool's refill; the hello may come
// much later. A path the host moved away (and replaced) or created since is shown as it is at
// the hello, as a session built fresh would: never the directory that no longer lies at the
// path the policy names (A2, attack on b2a5c37).
TEST(SessionPool, AReadOnlyPathTheHostChangedAfterTheRefillIsShownAsAtTheHello) {
  if (geteuid() != 0) GTEST_SKIP() << "rootless: the pooled keeper builds its view at the hello";
  TempDir ws0, ws, host;
  ASSERT_EQ(::chmod(host.path().c_str(), 0755), 0);  // the sandbox's uid searches it
  host.write("tools/f", "old\n");
  SessionConfig c0 = config_for(ws0), c = config_for(ws);
  c0.read_only = default_read_only_paths();
  c0.read_only.push_back(host.file("tools"));
  c0.read_only.push_back(host.file("later"));  // absent at the refill
  c.read_only = c0.read_only;
  SessionPool pool(2);
  auto first_made = pool.create(c0);
  ASSERT_TRUE(first_made) << first_made.error().message();
  ASSERT_TRUE(pool.wait_ready(2, 10s)) << "the pool did not build its sessions";
  wait_until_staged(first_made->get(), host.file("tools"));
  std::filesystem::rename(host.file("tools"), host.file("tools.moved"));
  host.write("tools/f", "new\n");
  host.write("later/f", "made\n");
  auto made = pool.create(c);
  ASSERT_TRUE(made) << made.error().message();
  auto r = testing::sh(**made, "cat " + host.file("tools/f") + " " + host.file("later/f"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->output, "new\nmade\n") << "a view of the host as it was at the refill";
}

// The same for a mount under a read-only path: one the host removed after the refill is not in
// the hello's view (moatd notes any change of its mount table since it built the session).
TEST(SessionPool, AMountTheHostRemovedUnderAReadOnlyPathAfterTheRefillIsNotShown) {
  if (geteuid() != 0) GTEST_SKIP() << "rootless: the pooled keeper builds its view at the hello";
  TempDir ws0, ws, host;
  ASSERT_EQ(::chmod(host.path().c_str(), 0755), 0);
  host.write("tools/secrets/.keep", "");
  ASSERT_EQ(::mount("tmpfs", host.file("tools/secrets").c_str(), "tmpfs", 0, "mode=0755"), 0)
      << std::strerror(errno);
  host.write("tools/secrets/key", "mounted\n");
  SessionConfig c0 = config_for(ws0), c = config_for(ws);
  c0.read_only = default_read_only_paths();
  c0.read_only.push_back(host.file("tools"));
  c.read_only = c0.read_only;
  SessionPool pool(2);
  auto first_made = pool.create(c0);
  ASSERT_TRUE(first_made) << first_made.error().message();
  ASSERT_TRUE(pool.wait_ready(2, 10s)) << "the pool did not build its sessions";
  wait_until_staged(first_made->get(), host.file("tools/secrets"));
  ASSERT_EQ(::umount(host.file("tools/secrets").c_str()), 0) << std::strerror(errno);
  auto made = pool.create(c);
  ASSERT_TRUE(made) << made.error().message();
  auto r = testing::sh(**made, "ls -A " + host.file("tools/secrets"));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->output, ".keep\n") << "a mount the host removed after the refill";
}

// Before its hello an init built ahead has no filter and no landlock: a host process of the
// sandbox's own uid (the unprivileged uid every session runs as) may not reach into it: no
// ptrace, no /proc view of its root, memory or environment (it is not dumpable).
TEST(SessionPool, AnInitBuiltAheadIsOutOfReachOfAHostProcessOfTheSandboxsUid) {
  if (geteuid() != 0) GTEST_SKIP() << "rootless: the pooled keeper forks its init at the hello";
  TempDir ws0;
  SessionPool pool(2);
  MOAT_PRIMED_POOL_OR_SKIP(pool, ws0, first);
  const std::set<pid_t> inits = pooled_inits({first.get()}, 2);
  ASSERT_EQ(inits.size(), 2u);
  auto as_sandbox_uid = [] {
    return setresgid(kUnprivilegedGid, kUnprivilegedGid, kUnprivilegedGid) == 0 &&
           setresuid(kUnprivilegedUid, kUnprivilegedUid, kUnprivilegedUid) == 0;
  };
  // What a process of the sandbox's uid reaches of `pid`: 1 a /proc file, 2 ptrace, 10 no uid.
  auto reach = [&](pid_t pid) {
    const pid_t child = fork();
    if (child == 0) {
      if (!as_sandbox_uid()) _exit(10);
      const std::string proc = "/proc/" + std::to_string(pid);
      int reached = 0;
      for (const char* f : {"/root/", "/mem", "/environ", "/ns/user", "/ns/mnt", "/cwd/"})
        if (::open((proc + f).c_str(), O_RDONLY) >= 0) reached |= 1;
      if (::ptrace(PTRACE_ATTACH, pid, nullptr, nullptr) == 0) reached |= 2;
      _exit(reached);
    }
    int status = 0;
    return waitpid(child, &status, 0) == child && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  // The probe reaches a plain (dumpable) process of that uid.
  const pid_t plain = fork();
  if (plain == 0) {
    if (as_sandbox_uid() && ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0) ::pause();
    _exit(1);
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(reach(plain), 3) << "the probe reaches nothing: it shows nothing";
  ::kill(plain, SIGKILL);
  ::waitpid(plain, nullptr, 0);
  for (pid_t init : inits)
    EXPECT_EQ(reach(init), 0) << "1: a /proc file of the init opened; 2: ptrace attached";
}

// Two hellos served by inits built ahead: what the first leaves in every writable place of the
// staged view (/tmp, /dev/shm, /run) is not in the second's, whatever the first could write.
TEST(SessionPool, WhatAnInitBuiltAheadsSessionLeftInItsStagedViewIsNotInTheNext) {
  if (geteuid() != 0) GTEST_SKIP() << "rootless: the pooled keeper builds its view at the hello";
  TempDir ws0, ws1, ws2;
  SessionPool pool(2);
  MOAT_PRIMED_POOL_OR_SKIP(pool, ws0, first);
  auto one = pool.create(config_for(ws1));
  ASSERT_TRUE(one) << one.error().message();
  ASSERT_TRUE((*one)->describe().pooled);
  auto wrote = testing::sh(**one,
                           "for d in /tmp /dev/shm /run /run/moat; do (echo x > $d/left-$$) "
                           "2>/dev/null && echo $d; done");
  ASSERT_TRUE(wrote) << wrote.error().message();
  EXPECT_NE(wrote->output.find("/tmp\n"), std::string::npos) << wrote->output;
  EXPECT_NE(wrote->output.find("/dev/shm\n"), std::string::npos) << wrote->output;
  auto two = pool.create(config_for(ws2));
  ASSERT_TRUE(two) << two.error().message();
  ASSERT_TRUE((*two)->describe().pooled);
  auto seen = testing::sh(**two, "ls -A /tmp /dev/shm /run /run/moat");
  ASSERT_TRUE(seen) << seen.error().message();
  EXPECT_EQ(seen->output.find("left-"), std::string::npos) << seen->output;
}

}  // namespace
}  // namespace moat::sandbox

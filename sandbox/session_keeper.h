// sandbox/session_keeper.h: the session's keeper: moatd's child in the session's new
// namespaces (but the host pid namespace), which forks the init (pid 1 of the new pid
// namespace) and then only waits. Each link has PR_SET_PDEATHSIG=SIGKILL, so the keeper's end
// kills the init, and the kernel kills every process of a pid namespace whose init dies.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "base/result.h"
#include "sandbox/session_config.h"

namespace moat::sandbox {

struct NamespaceLayer {
  int flag;
  const char* name;
};
// The session's namespaces, in the order the keeper unshares them. The user namespace comes
// first: it is what lets an unprivileged moatd create the others, and every later namespace is
// owned by it.
extern const NamespaceLayer kNamespaces[7];

// What the keeper is started with: all of it valid in the forked child only (fds borrowed
// from Session::create, which closes its copies once the keeper exists).
struct KeeperStart {
  const SessionConfig* config = nullptr;
  int ctl = -1;        // the child's end of the control socket
  int tree = -1;       // the detached workspace tree, or -1: the keeper clones it
  int workspace = -1;  // the workspace moatd checked; the keeper's cwd
  pid_t moatd = -1;
  // A pooled keeper (session_prebuilt.h): started before the workspace is known, it unshares
  // every namespace but the mount namespace, becomes root in its user namespace and waits for
  // kFinish (the config as session_pool_config.h encodes it, with the workspace, its tree and
  // the binds' fds attached); then goes on as any keeper. `config` holds only the ids and
  // allow_without until then; `workspace` and `tree` are -1.
  bool pooled = false;
  // A pooled keeper of moatd as root: it unshares the mount namespace too and forks the init
  // at once, which builds the view's workspace-independent part and itself waits for kFinish
  // (session_init.h run_session_init_ahead); `config` then also holds the view's shape
  // (read_only, hostname, limits.tmp_size).
  bool init_ahead = false;
};

// The keeper and the thread it was forked from, held by the session. PR_SET_PDEATHSIG fires
// when the parent *thread* exits, not the parent process: forking from a thread this object
// owns ties the keeper to the session's lifetime, not to that of whichever (per-connection)
// thread asked for it, and the thread ends with the session.
class Keeper {
 public:
  // Forks the keeper from a new thread; the child runs run_keeper_in_child(start).
  static Result<std::unique_ptr<Keeper>> start(const KeeperStart& start);
  Keeper(const Keeper&) = delete;
  Keeper& operator=(const Keeper&) = delete;
  ~Keeper() { end(); }

  pid_t pid() const { return pid_; }
  // Kills and reaps the keeper (the init follows through its parent-death signal), then ends
  // the thread. Once only; later calls do nothing.
  void end();

 private:
  Keeper() = default;
  void forking_thread(std::stop_token stop, const KeeperStart& start);

  std::mutex mu_;
  std::condition_variable_any cv_;
  bool forked_ = false;  // under mu_: pid_ is set
  pid_t pid_ = -1;       // -errno when the fork failed
  std::jthread thread_;  // declared last: it uses the members above
};

}  // namespace moat::sandbox

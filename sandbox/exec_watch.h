// sandbox/exec_watch.h: moatd's side of the exec watch. Every execve and execveat a call's
// processes make waits (seccomp user notification, seccomp_policy.h) while moatd reads what
// is about to run from the caller's memory, resolves it in the sandbox's view and has it
// judged; exit_group gives the program's exit code. One watch per exec call, on a thread of
// its own, so a fork-and-exec storm in one call holds back no other call or session.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "sandbox/exec_memory.h"
#include "sandbox/exec_resolve.h"

namespace moat::sandbox {

// What an exec is about to run, as read from the caller before the kernel runs it.
struct ExecRequest {
  pid_t pid = -1;           // host pid (thread group) of the caller
  std::string exec_id;      // this watch's number for it: "1", "2", ... in exec order
  std::string parent_exec;  // the exec_id of the program that started it; "" for the first
  bool first = false;       // the call's own program (the worker's exec), judged with the call
  std::vector<std::string> argv;
  std::string path;         // as execve was given it
  std::string exe;          // the file it names, resolved in the sandbox's view
  std::string interpreter;  // a #! script's interpreter, as its first line names it
  std::string cwd;          // the caller's working directory
  // How far the check holds against a rewrite of the caller's memory (exec_memory.h).
  ExecMemory memory = ExecMemory::kExclusive;
  bool argv_truncated = false;  // larger than moat reads: such an exec is refused
  // What makes the dynamic loader load code into it: the new environment's variables that
  // policy/code_env.h reads at exec (LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH, GCONV_PATH), then
  // the loader's own options (--preload, ...) when the exec runs the loader as a program.
  std::vector<LoaderInput> loads;
  bool unnamed = false;  // no name on disk (memfd, O_TMPFILE, deleted): see Resolved
  std::string sha256;    // of an unnamed program's bytes
  // What the kernel runs besides `exe` (a #! script's interpreters, the program the dynamic
  // loader loads): each is judged too, and the strictest verdict stands.
  std::vector<ExecTarget> also;
  std::string refusal;  // why the watch itself refuses it ("" when it does not)
};

struct ExecAnswer {
  bool allow = true;
  int error = EPERM;  // the errno the exec fails with when not allowed
};

// How a program ended: exit code, signal, or neither when it was replaced by another exec or
// the watch stopped before it ended.
struct ExecEnd {
  std::string exec_id;
  std::optional<int> code;
  std::optional<int> signal;
  long long duration_ms = 0;
  std::string note;  // "replaced by exec 7", "killed: ran another program than the one checked"
};

class ExecObserver {
 public:
  virtual ~ExecObserver() = default;
  // Judges (and records) one exec before it runs. Called on the watch's thread, one at a time.
  virtual ExecAnswer on_exec(const ExecRequest& request) = 0;
  virtual void on_end(const ExecEnd& end) = 0;
};

struct ExecWatchStats {
  std::uint64_t notifications = 0;
  std::uint64_t execs = 0;    // programs that were let run
  std::uint64_t refused = 0;  // refused by the observer or by the watch's own checks
};

class ExecWatch {
 public:
  // Serves `listener` until every process under it has ended (the listener hangs up) or
  // finish() gives up. A null observer lets every exec run and records nothing (sessions
  // used without a policy: the sandbox tests).
  // `gate`: the end of a socket pair the worker holds the other end of until its exec
  // succeeds (worker.cc). While it is open, a notification is the worker's own exec (moatd's
  // code) and is let through unread; when it closes, the worker's program is recorded as the
  // call's first. Without a gate, the first exec read is the call's first.
  ExecWatch(UniqueFd listener, ExecObserver* observer, UniqueFd gate = UniqueFd());
  // Starts the thread now and serves the listener attach() hands it later: a call starts its
  // watch before it asks for a worker, so the worker's own exec, which waits on the watch,
  // does not also wait for a thread to be created.
  // `cpu_budget_s`: the moatd CPU time its thread may spend on this call (the call's own
  // cpu_time, exec_budget.h); 0: none.
  // `before_program` (ExecSpec::before_program): called once, on the watch's thread, with the
  // worker's host pid at its own first exec attempt, which waits meanwhile: the worker has
  // forked nothing and its program has not run. An error refuses that exec and every later
  // attempt of the worker's (EPERM), so the call fails before anything of it ran.
  using BeforeProgram = std::function<Result<void>(pid_t)>;
  explicit ExecWatch(ExecObserver* observer, double cpu_budget_s = 0,
                     BeforeProgram before_program = nullptr);
  ~ExecWatch();
  ExecWatch(const ExecWatch&) = delete;
  ExecWatch& operator=(const ExecWatch&) = delete;

  // The call is over: waits up to `grace` for the last processes to go (the init kills them),
  // then stops; programs still without an end get one with neither code nor signal.
  // A watch never attached stops at once.
  ExecWatchStats finish(std::chrono::milliseconds grace);

  // The listener and gate a worker sent (see the first constructor); once only.
  void attach(UniqueFd listener, UniqueFd gate);

  // Why the call must end because checking its execs cost moatd more than its budget
  // (exec_budget.h), or "" while it has not. Once set, every exec of the call is refused
  // unread; the caller ends the call.
  std::string over_budget() const;

  // Written once by the watch's thread (why first, then the flag), read by the call's.
  struct OverBudget {
    std::atomic<bool> flag{false};
    std::string why;
  };

 private:
  void serve();

  UniqueFd listener_;
  UniqueFd gate_;
  UniqueFd wake_;  // eventfd: finish() was called
  ExecObserver* observer_;
  double cpu_budget_s_ = 0;
  BeforeProgram before_program_;
  OverBudget over_;
  std::atomic<bool> stopping_{false};
  // Guards attached_ and done_; finish() waits on it rather than polling, since a call's
  // result waits for the watch's end.
  std::mutex mu_;
  std::condition_variable cv_;
  bool attached_ = false;
  bool done_ = false;  // the thread has finished serving
  ExecWatchStats stats_;
  std::thread thread_;
};

}  // namespace moat::sandbox

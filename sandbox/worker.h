// sandbox/worker.h: the pre-exec sequence of a worker (one per call), forked from the session
// init. The order is the content; see run_worker_in_child.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "sandbox/init_contract.h"
#include "sandbox/rlimits.h"
#include "sandbox/seccomp_programs.h"
#include "sandbox/session_config.h"

namespace moat::sandbox {

// Each checked step of the worker, in order. The numbers travel on the status pipe.
enum class Step : std::int32_t {
  kNone = 0,
  kSignals = 1,   // default dispositions and an empty mask (init blocks SIGCHLD)
  kSetsid = 2,    // new session and group (no controlling tty: TIOCSTI; group kill), and
                  // the call's subreaper: what leaves the group still ends with the call
  kCloseFds = 3,  // only the call's pipes survive
  kRlimits = 4,
  kCaps = 5,        // every set emptied, securebits locked, verified
  kNoNewPrivs = 6,  // exec cannot gain privileges (setuid files, file caps)
  kLandlock = 7,
  kChdir = 8,    // after the restrictions: the directory is reached as the code would
  kSeccomp = 9,  // last: the steps above need syscalls it denies
  kExec = 10,
  kHandler = 11,
  // Before kSeccomp (whose filter refuses a listener): execve, execveat and exit_group wait
  // for moatd's answer; the listener goes to moatd on the status socket, then is closed.
  kExecWatch = 12,
  // After kCloseFds, with passed stdio that holds a terminal: TIOCSCTTY makes it the new
  // session's controlling tty (a pty moat's client made: docs/security.md, "sandbox exec").
  kTerminal = 13,
  kLast = kTerminal,  // keep equal to the last step: worker.cc's kStepNames is checked against it
};
const char* step_name(Step step);
Step step_from_name(const char* name);  // kNone for an unknown name

// Everything the child needs, prepared by the init before fork so the child allocates nothing.
struct WorkerPlan {
  WorkerKind kind = WorkerKind::kExec;
  char* const* argv = nullptr;     // kExec
  char* const* envp = nullptr;     // kExec
  const char* path_env = nullptr;  // PATH used to resolve argv[0]
  const char* cwd = "/";
  const char* create_path = nullptr;  // kCreateFile
  WorkerHandler handler = nullptr;    // kHandler
  int io_fd = -1;                     // kExec: stdout+stderr pipe; otherwise the data socket
  // kExec: the command's own fds 0-2 (moat sandbox exec), in place of /dev/null and io_fd.
  int stdio[3] = {-1, -1, -1};
  bool terminal = false;  // with stdio: the first tty among them becomes the controlling tty
  int status_fd = -1;
  int landlock_fd = -1;                // -1 = Landlock not applied (allowed without)
  // The session's filter and (kExec only) the exec watch, both of seccomp_programs.h: never
  // null, the init sets them (session_init.cc setup_filters).
  const BpfProgram* filter = nullptr;
  // Its listener is sent on the status socket as StatusRecord{kExecWatch, 0} with the fd.
  const BpfProgram* exec_watch = nullptr;
  RlimitPlan rlimits;
  Step skip = Step::kNone;  // tests only: prove each step matters by leaving it out
};

// Starts the worker for plan in a child of the calling (single-threaded) init and returns
// its pid, or -1 with errno. See worker.cc for why an exec worker shares the init's memory.
pid_t start_worker(const WorkerPlan& plan);

// Runs in the forked child; never returns. Layout after kCloseFds: 0 = /dev/null,
// 1 and 2 = output (exec) or /dev/null (0-2 = WorkerPlan::stdio when passed), 3 = status
// (close-on-exec), 4 = data socket.
[[noreturn]] void run_worker_in_child(const WorkerPlan& plan);

}  // namespace moat::sandbox

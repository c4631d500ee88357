// sandbox/session_linux.h: the moatd side of a session (see session.h): LinuxSession talks
// to the session's init per call (init_contract.h). Built by Session::create (session_create.cc);
// its calls are in session_call.cc, the exec loop in session_exec.cc.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/sys.h"
#include "base/unique_fd.h"
#include "sandbox/cgroup.h"
#include "sandbox/init_contract.h"
#include "sandbox/session.h"
#include "sandbox/session_keeper.h"

namespace moat::sandbox {

class ExecWatch;

using SessionClock = std::chrono::steady_clock;

// The call's fds on moatd's side.
struct CallFds {
  UniqueFd channel;
  UniqueFd status;
  UniqueFd io;
  pid_t host_pid = -1;
};

// Everything Session::create built, handed to the session whole.
struct SessionParts {
  SessionConfig config;
  UniqueFd workspace;  // the directory the session was built from; placeholders are removed in it
  std::vector<UniqueFd> bind_dirs;  // each bind's source as checked
  ScopedCgroup cgroup;
  std::unique_ptr<Keeper> keeper;
  pid_t init = -1;        // the init's host pid
  UniqueFd ctl;           // moatd's end of the control socket
  UniqueFd net_listener;  // kReady's, when config.net_proxy_port is set
  SessionDescription describe;
  // Taken before the fork, so it is earlier than the init's own session timer: when the init
  // ends the session for its wall time, moatd's clock agrees that the time is up.
  SessionClock::time_point created;
};

class LinuxSession final : public Session {
 public:
  explicit LinuxSession(SessionParts parts);
  ~LinuxSession() override;  // end(), then the keeper reaped and the cgroup removed
  void end() override;

  Result<tools::ExecStatus> exec(const ExecSpec& spec,
                                 const std::function<void(std::string_view)>& on_output,
                                 StopFlags stop) override;
  Result<std::string> run_handler(std::string_view request) override;
  Result<UniqueFd> create_file(const std::string& sandbox_path) override;
  const SessionDescription& describe() const override { return parts_.describe; }
  pid_t init_pid() const override { return parts_.init; }
  UniqueFd take_net_listener() override { return std::move(parts_.net_listener); }

 private:
  // Sends the request, waits until the worker reached its exec or handler (check_status:
  // an exec worker's own exec waits on the watch, which must be served first), then reads
  // the init's start record.
  // With stdio, the worker's fds 0-2 are those instead of /dev/null and an output pipe.
  // spec.durable runs as ExecSpec says (a failure returns before the watch is served).
  Result<CallFds> start(CallRequest request, std::unique_ptr<ExecWatch>* watch = nullptr,
                        const ExecSpec* spec = nullptr);
  // Every exec worker of this session waits at its exec for the watch's answer: the exec
  // watch is a layer it may not run without, and no test leaves it out.
  bool exec_waits_for_the_watch() const;
  // EOF without a record: the worker reached exec (or its handler). A record names the
  // step that failed. An exec worker first sends the exec watch's listener: it is served
  // from then on (into *watch), since the worker's own exec already waits on it.
  Result<void> check_status(int status_fd, std::unique_ptr<ExecWatch>* watch = nullptr);
  Result<void> send_request(sys::FdPair& channel, sys::FdPair& status, sys::FdPair& io,
                            const int* stdio, const CallRequest& request);
  Result<CallFds> read_start_record(sys::FdPair& channel);
  Result<int> wait_exit(int channel, SessionClock::time_point deadline);
  double session_seconds_left() const;

  SessionParts parts_;   // its keeper declared after its cgroup: reaped before it is removed
  UniqueFd init_pidfd_;  // readable once the init has exited
};

}  // namespace moat::sandbox

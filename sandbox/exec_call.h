// sandbox/exec_call.h: how an `exec` frame's command ended, as the result frame's details
// (docs/protocol.md, "exec"), from which `moat sandbox exec` takes its exit status.
#pragma once

#include <string>

#include "tools/runner.h"
#include "tools/tool.h"

namespace moat::sandbox {

// Why an exec did not run, in details.failed:
//   "policy"  the policy (or the person) refused the command: the text names the rule;
//   "exec"    the worker could not exec it (details.errno: ENOENT = no such command);
//   "sandbox" anything else of moat's (a bad frame, fds, cwd, a sandbox step, the audit log).
inline constexpr const char* kExecFailedPolicy = "policy";
inline constexpr const char* kExecFailedExec = "exec";
inline constexpr const char* kExecFailedSandbox = "sandbox";

// An error result: `why` is the one line `moat sandbox exec` prints on stderr.
tools::ToolResult exec_not_run(const std::string& why, const char* failed, int err = 0);

// The command ran: details {exitCode | signal, timedOut, durationMs}, no text (the command's
// output went to its own fds). CallGate::run_exec adds {refusedExecs, flaggedExecs} and, when
// either is not 0, a text block naming those programs and their rules (ExecGate).
tools::ToolResult exec_ended(const tools::ExecStatus& status);

}  // namespace moat::sandbox

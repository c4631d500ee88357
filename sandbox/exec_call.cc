// sandbox/exec_call.cc: an `exec` frame through the call gate (CallGate::run_exec) and the
// result it ends with (see exec_call.h).
#include "sandbox/exec_call.h"

#include <chrono>
#include <cstring>
#include <set>

#include "base/shell_words.h"
#include "sandbox/audit_records.h"
#include "sandbox/call_gate.h"
#include "sandbox/exec_gate.h"
#include "sandbox/files_changed.h"
#include "sandbox/worker.h"
#include "tools/registry.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

// The line the policy judges: the variables the command gets, then its words, each quoted, so
// the judged line means exactly what runs (a code-loading variable asks as it would in bash).
std::string judged_line(const ExecMsg& m) {
  std::string line;
  for (const auto& [name, value] : m.env) line += name + "=" + shell_quote(value) + " ";
  return line + shell_join(m.argv);
}

// Lexically inside the workspace (or it): absolute, no `.` or `..` component, no `//`. The
// worker changes into it inside the sandbox's view, where only what is bound exists.
bool inside_workspace(const std::string& dir, const std::string& workspace) {
  if (dir != workspace && dir.rfind(workspace + "/", 0) != 0) return false;
  if (dir.find("//") != std::string::npos || dir.back() == '/') return false;
  for (const char* bad : {"/./", "/../"})
    if ((dir + "/").find(bad) != std::string::npos) return false;
  return true;
}

// A worker that did not reach its program: its exec step names why (ENOENT: no such
// command, as a shell's 127); any other step is moat's own failure.
tools::ToolResult not_started(const Error& e, const std::string& program) {
  if (e.context == std::string("worker step ") + step_name(Step::kExec)) {
    const std::string why = e.code == ENOENT ? "command not found" : std::strerror(e.code);
    return exec_not_run(shell_quote(program) + ": " + why, kExecFailedExec, e.code);
  }
  return exec_not_run(e.message(), kExecFailedSandbox, e.code);
}

// What the programs the command started met, for `moat sandbox exec` to tell the person (the
// command's own output went to its fds): the refusals and the flagged programs as text, and
// their counts in details (refusedExecs, flaggedExecs).
void add_exec_notes(tools::ToolResult& result, const ExecGate& execs) {
  for (const std::string& note : {execs.refusals_text(), execs.flagged_text()})
    if (!note.empty()) result.content.push_back({{"type", "text"}, {"text", note}});
  if (!result.details.is_object()) result.details = json::object();
  result.details["refusedExecs"] = execs.refused();
  result.details["flaggedExecs"] = execs.flagged();
}

}  // namespace

tools::ToolResult exec_not_run(const std::string& why, const char* failed, int err) {
  tools::ToolResult r = tools::ToolResult::error(why);
  r.details = {{"failed", failed}};
  if (err != 0) r.details["errno"] = err;
  return r;
}

tools::ToolResult exec_ended(const tools::ExecStatus& s) {
  tools::ToolResult r;
  if (s.signal > 0) r.details["signal"] = s.signal;
  else r.details["exitCode"] = s.exit_code;
  r.details["timedOut"] = s.timed_out;
  if (!s.limit.empty()) r.details["limit"] = s.limit;
  r.details["durationMs"] = s.duration.count();
  return r;
}

tools::ToolResult CallGate::run_exec(const ExecMsg& m, ExecSpec spec,
                                     std::shared_ptr<const CallCancel> cancel) {
  const std::string cwd = m.cwd.empty() ? session_.workspace : m.cwd;
  if (!inside_workspace(cwd, session_.workspace))
    return exec_not_run("exec: the directory " + moat::quoted(cwd) +
                            " is not inside the workspace " + moat::quoted(session_.workspace) +
                            " (give --cwd a directory in it)",
                        kExecFailedSandbox);
  const tools::CommandCall judged = tools::command_call(judged_line(m), 0);
  GateCall call{m.id, judged.tool, judged.arguments, cancel, nullptr, nullptr};
  call.typed = session_.typed_exec;  // moatd's own option, never the frame's
  call.cwd = cwd;  // `./run_tests.sh` with --cwd sub is sub's, as the worker runs it
  std::set<std::string> approved;
  bool by_policy = false;
  json decided;
  DurableFn durable;
  auto decision_id = admit(call, &approved, &decided, &by_policy, &durable);
  if (!decision_id)
    return exec_not_run(decision_id.error().message(),
                        by_policy ? kExecFailedPolicy : kExecFailedSandbox);
  ExecGate execs(session_, asks_, m.id, *decision_id, *cancel, std::move(approved));
  spec.argv = m.argv;
  spec.cwd = cwd;
  spec.timeout_s = m.timeout_s;
  spec.env = m.env;
  spec.observer = &execs;
  spec.durable = std::move(durable);  // the decision's sync overlaps the worker's start
  const StopFlags stop(cancel.get(), nullptr, cancel->wake_fd());  // a cancel wakes the loop
  auto status = session_.session ? session_.session->exec(spec, nullptr, stop)
                                 : Result<tools::ExecStatus>(fail("no sandbox session"));
  tools::ToolResult result = status ? exec_ended(*status) : not_started(status.error(), m.argv[0]);
  // Before the result goes out: the person's git never sees a `.git` the command left.
  const json removed = remove_nested_git(session_);
  record_exec(call, *decision_id, cwd, status ? &*status : nullptr, execs, removed);
  add_exec_notes(result, execs);
  if (std::string note = nested_git_note(removed); !note.empty()) {
    result.content.push_back({{"type", "text"}, {"text", note}});
    result.details["nestedGitRemoved"] = removed;
  }
  return result;
}

void CallGate::record_exec(const GateCall& call, const std::string& decision_id,
                           const std::string& cwd, const tools::ExecStatus* status,
                           const ExecGate& execs, const json& nested_git_removed) {
  audit::Call rec;
  rec.decision_id = decision_id;
  rec.call_id = call.id;
  rec.tool = call.tool;
  rec.command = call.args.value("command", "");
  rec.cwd = cwd;
  rec.execs = execs.execs();
  rec.refused_execs = execs.refused();
  rec.flagged_execs = execs.flagged();
  // The command wrote to the caller's own fds: moatd never saw its output.
  rec.output = "passed through (moat sandbox exec): not counted";
  rec.output_bytes = nullptr;
  if (status != nullptr) {
    rec.duration_ms = status->duration.count();
    rec.exit_code = status->signal > 0 ? json(nullptr) : json(status->exit_code);
    rec.signal = status->signal > 0 ? json(status->signal) : json(nullptr);
    rec.timed_out = status->timed_out;
  }
  if (execs.flagged() > 0) rec.flagged = execs.flagged_json();
  if (session_.call_ends->was_cancelled_by_person(call.id)) rec.cancelled = "person";
  rec.is_error = status == nullptr;
  if (!nested_git_removed.empty()) {
    rec.nested_git_removed = nested_git_removed;
    rec.nested_git_reason = kNestedGitReason;
  }
  rec.set_files_changed(files_changed_fields(session_));
  (void)session_.record(std::string(audit::Call::kType), rec.to_json(),
                        sessions::AuditLog::Sync::kWithNext);
}

}  // namespace moat::sandbox

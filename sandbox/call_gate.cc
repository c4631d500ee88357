// sandbox/call_gate.cc: decide -> ask -> write-ahead audit -> run -> exec record.
#include "sandbox/call_gate.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <set>
#include <string_view>

#include "base/random.h"
#include "base/log.h"
#include "sandbox/audit_records.h"
#include "sandbox/auditing_runner.h"
#include "sandbox/files_changed.h"
#include "sandbox/mcp_host.h"
#include "sandbox/refusal_hint.h"
#include "sandbox/exec_gate.h"
#include "sandbox/session_runner.h"
#include "sessions/digest.h"
#include "tools/schema.h"

namespace moat::sandbox {
namespace {

// Whether `word` is `'X'` with X one or more characters no shell treats specially.
bool is_quoted_plain_word(std::string_view word) {
  static constexpr std::string_view kPlain =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=,+@%-";
  return word.size() > 2 && word.front() == '\'' && word.back() == '\'' &&
         word.substr(1, word.size() - 2).find_first_not_of(kPlain) == std::string_view::npos;
}

// A typed line as the person would write it: the exec frame's words arrive shell-quoted one by
// one (`'curl' '--version'`); a word that needs no quotes is shown bare. Anything still quoted,
// or holding a control, is shown by quoted() as it is. A loop over the space-separated words,
// not std::regex: libstdc++'s matcher recurses once per character, and a 100 KB word (an exec
// frame holds up to kMaxCommandBytes) overflowed the call thread's stack, ending moatd.
std::string shown_line(const std::string& line) {
  std::string plain;
  for (std::size_t at = 0;;) {
    const std::size_t space = line.find(' ', at);
    const std::string_view word = std::string_view(line).substr(at, space - at);
    plain += is_quoted_plain_word(word) ? word.substr(1, word.size() - 2) : word;
    if (space == std::string::npos) break;
    plain += ' ';
    at = space + 1;
  }
  if (moat::quoted(plain) == "'" + plain + "'") return "`" + plain + "`";
  return moat::quoted(line);
}

using nlohmann::json;

// The files a call changed as the agent is told: path and operation (the hashes stay in the
// audit record). null when they are not known.
json changed_paths(const json& changes) {
  if (!changes.is_array()) return nullptr;
  json out = json::array();
  for (const json& c : changes) {
    json item = {{"path", c.value("path", "")}, {"op", c.value("op", "")}};
    if (c.contains("from")) item["from"] = c["from"];
    out.push_back(std::move(item));
  }
  return out;
}

// What the call record copies from the tool's result details, when the tool set them.
void copy_result_details(const json& details, audit::Call& rec) {
  if (!details.is_object()) return;
  auto take = [&details](const char* key, std::optional<json>& to) {
    if (details.contains(key)) to = details[key];
  };
  take("filesMutated", rec.files_mutated);
  take("path", rec.path);
  take("fullOutputPath", rec.full_output_path);
  take("timedOut", rec.timed_out);
  take("nestedGitRemoved", rec.nested_git_removed);
  if (rec.nested_git_removed) rec.nested_git_reason = kNestedGitReason;
}

}  // namespace

// The tool's own rule: an MCP server's tool is judged as mcp:SERVER:TOOL with its arguments
// and its annotations' hints (policy/mcp_servers.h).
policy::Decision CallGate::decide_tool(const GateCall& call) const {
  auto ref = tools::mcp::parse_tool_name(call.tool);
  if (!ref || !tools::mcp::is_model_tool_name(call.tool) || !session_.mcp)
    return session_.policy->decide_tool(call.tool);
  return session_.policy->decide_tool(tools::mcp::policy_tool_name(ref->server, ref->tool),
                                      call.args, session_.mcp->hints(*ref));
}

namespace {

Result<std::string> audit_unwritable(const Error& e) {
  return fail("refused: the audit log could not be written (" + e.message() + ")");
}

}  // namespace

tools::ToolResult CallGate::run(const GateCall& call) {
  if (auto ref = tools::mcp::parse_tool_name(call.tool);
      ref && tools::mcp::is_model_tool_name(call.tool))
    return run_mcp(call, *ref);
  // The rules the call's own line met: what it runs under them was approved with it.
  std::set<std::string> approved;
  json facts = json::object();  // for the agent's events (docs/events.md, tool_call_end)
  DurableFn durable;
  auto decision_id = admit(call, &approved, &facts, nullptr, &durable);
  if (!decision_id) {
    tools::ToolResult refused = tools::ToolResult::error(decision_id.error().message());
    refused.details = std::move(facts);
    return refused;
  }
  if (call.decided) call.decided(facts);
  static const std::atomic<bool> kNeverCancelled{false};
  ExecGate execs(session_, asks_, call.id, *decision_id,
                 call.cancel ? static_cast<const std::atomic<bool>&>(*call.cancel) : kNeverCancelled,
                 std::move(approved));
  // Every program the call starts goes through `execs`; a session-less runner (the unit
  // tests' fake) has no programs to watch.
  std::optional<SessionRunner> watched;
  if (session_.session) {
    watched.emplace(*session_.session, &execs, std::move(durable));
  } else if (auto synced = durable(); !synced) {  // a session-less runner acts at once
    return tools::ToolResult::error(synced.error().message());
  }
  AuditingRunner auditing(watched ? static_cast<tools::SandboxRunner&>(*watched)
                                  : *session_.runner);
  tools::CallContext ctx = context_for(call, auditing);
  const auto t0 = std::chrono::system_clock::now();
  tools::ToolResult result = tools::execute(call.tool, call.args, ctx);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now() - t0)
          .count();
  // The model learns which program was refused and why: without it, a script's "Operation
  // not permitted" reads like a bug to fix.
  if (std::string refused = execs.refusals_text(); !refused.empty())
    result.content.push_back({{"type", "text"}, {"text", refused}});
  // And which programs ran although a rule asks about them (headless): the model may have
  // fetched or run what the person would have been asked about, and should say so.
  if (std::string flagged = execs.flagged_text(); !flagged.empty())
    result.content.push_back({{"type", "text"}, {"text", flagged}});
  // Before the result goes out: the person's git never sees a `.git` the call left.
  const json removed = remove_nested_git(session_);
  if (std::string note = nested_git_note(removed); !note.empty()) {
    result.content.push_back({{"type", "text"}, {"text", note}});
    if (!result.details.is_object()) result.details = json::object();
    result.details["nestedGitRemoved"] = removed;
  }
  facts.update(record_call(call, *decision_id, result, ms, auditing.processes(), execs));
  if (!result.details.is_object()) result.details = json::object();
  result.details.update(facts);
  return result;
}

Result<std::string> CallGate::admit(const GateCall& call, std::set<std::string>* approved,
                                    json* decided, bool* by_policy, DurableFn* durable) {
  // Only announced tools may be called; an unknown name is the model's mistake, answered
  // as an error result it can read, and audited as a refusal.
  if (session_.granted.count(call.tool) == 0) {
    if (by_policy != nullptr) *by_policy = true;
    return refuse_unknown_tool(call);
  }
  // Before the policy sees them: a path or command cut at a NUL by the kernel or argv is not
  // the one that would be judged (`server.pem\0` is not `*.pem`, the file opened is).
  if (auto field = tools::field_with_nul(call.args))
    return fail("refused: argument " + moat::quoted(*field) +
                " holds a NUL byte, which no path, command or pattern may");
  const policy::Policy& pol = *session_.policy;
  policy::Decision d = decide_tool(call);
  json input = {{"tool", call.tool}};
  std::string what = "the tool " + call.tool;
  // A tool that runs a command line is judged by it too; the strictest verdict wins.
  if (auto line = tools::command_to_judge(call.tool, call.args)) {
    // A line the person typed (an exec frame of moatd --typed-exec) is their decision: only
    // the organisation's and a --policy file's rules bind it, and the tool's rule, which is
    // about what the model may call, does not apply.
    const std::string& cwd = call.cwd.empty() ? session_.workspace : call.cwd;
    policy::Decision cd =
        call.typed ? pol.decide_typed(*line, cwd) : pol.decide_command(*line, cwd);
    for (const auto& m : cd.matched) approved->insert(m.id);
    if (cd.verdict >= d.verdict || call.typed) d = cd;
    input["script_sha256"] = "sha256:" + sessions::sha256_hex(*line);
    input["command"] = *line;
    input["cwd"] = cwd;
    what = "the command " + moat::quoted(*line);
  }
  json answer;
  d = asks_.ask(std::move(d), call.id, what, *call.cancel, answer);
  if (!answer.is_null()) input["user"] = answer;
  *decided = {{"decision", policy::verdict_name(d.verdict)},
              {"rule", rule_json(d.deciding)},
              {"decided_by", std::string(policy::decided_by_name(d.decided_by))}};
  const bool allowed = d.verdict == policy::Verdict::kAllow;
  std::uint64_t pending = 0;
  auto decision_id =
      audit_decision(d, call, std::move(input), allowed && durable != nullptr ? &pending : nullptr);
  if (!decision_id) return audit_unwritable(decision_id.error());
  if (!allowed) {
    if (by_policy != nullptr) *by_policy = true;
    // What the person typed is named by its line; the model knows which call it made.
    const std::string refused =
        call.typed ? "the command " + shown_line(call.args.value("command", "")) + " was"
                   : "this call was";
    return fail(refusal_text(d, refused, session_.user_policy_dir));
  }
  if (durable != nullptr)
    *durable = [audit = session_.audit.get(), pending]() -> Result<void> {
      if (auto synced = audit->make_durable(pending); !synced)
        return fail(Error{synced.error().code, audit_unwritable(synced.error()).error().message()});
      return {};
    };
  return decision_id;
}

Result<std::string> CallGate::refuse_unknown_tool(const GateCall& call) {
  policy::Decision d = session_.policy->decide_tool(call.tool);
  if (tools::find_tool(call.tool) == nullptr) d.reason = "no such tool";
  d.verdict = policy::Verdict::kDeny;
  (void)audit_decision(d, call, {{"tool", call.tool}});
  std::string names;
  for (const auto& g : session_.granted) names += (names.empty() ? "" : ", ") + g;
  return fail("unknown or refused tool " + moat::quoted(call.tool) +
              "; the tools of this session are: " + names);
}

std::optional<std::string> CallGate::authorize_path(const GateCall& call, const std::string& path,
                                                    tools::PathAccess access) {
  const bool write = access == tools::PathAccess::kWrite;
  policy::Decision d =
      session_.policy->decide_path(path, write ? policy::Access::kWrite : policy::Access::kRead);
  json answer;
  d = asks_.ask(std::move(d), call.id,
                std::string(write ? "writing " : "reading ") + moat::quoted(path), *call.cancel,
                answer);
  json input = {{"path", path}, {"access", write ? "write" : "read"}};
  if (!answer.is_null()) input["user"] = answer;
  auto decision_id = audit_decision(d, call, std::move(input));
  if (!decision_id) return audit_unwritable(decision_id.error()).error().message();
  if (d.verdict != policy::Verdict::kAllow)
    return refusal_text(d, std::string("access to ") + moat::quoted(path) + " was",
                        session_.user_policy_dir, "[[path]]");
  return std::nullopt;
}

Result<std::string> CallGate::audit_decision(const policy::Decision& d, const GateCall& call,
                                             json input, std::uint64_t* pending) {
  // No id, no record: the action is refused like any other that cannot be audited.
  MOAT_ASSIGN_OR_RETURN(const std::string decision_id, random_hex(16));
  audit::Decision rec{decision_id,        call.tool,
                      call.id,            std::move(input),
                      d.verdict,          rule_json(d.deciding),
                      {},                 d.decided_by,
                      !session_.headless, session_.policy->policy_hash(),
                      std::nullopt};
  for (const auto& m : d.matched) rec.matched.push_back(m.id);
  if (json units = d.detail(); !units.is_null()) rec.units = std::move(units);
  // Nothing runs without its decision on disk, whatever audit_required says: an exec record
  // must never name a decision the log lacks (`moat audit verify` fails on one).
  if (!session_.audit) return fail(std::string("audit log is not open"));
  Result<void> r{};
  if (pending == nullptr) {
    r = session_.audit->append(rec, sessions::AuditLog::Sync::kNow);
  } else if (auto seq = session_.audit->append_pending(std::string(audit::Decision::kType),
                                                       rec.to_json())) {
    *pending = *seq;
  } else {
    r = fail(seq.error());
  }
  if (!r) {
    MOAT_LOG_ERROR("audit append decision: %s", r.error().message().c_str());
    return fail(r.error());
  }
  return decision_id;
}

tools::CallContext CallGate::context_for(const GateCall& call, tools::SandboxRunner& runner) {
  tools::CallContext ctx;
  ctx.runner = &runner;
  ctx.mutations = &mutations_;
  ctx.mutation_ticket = call.ticket;
  ctx.workspace = session_.workspace;
  ctx.cancel = call.cancel.get();  // the context lives within the call
  ctx.cancel_wake = call.cancel ? call.cancel->wake_fd() : -1;
  ctx.limits = session_.tool_limits;
  ctx.progress = call.progress;
  ctx.authorize = [this, &call](const std::string& path, tools::PathAccess access) {
    return authorize_path(call, path, access);
  };
  return ctx;
}

json CallGate::record_call(const GateCall& call, const std::string& decision_id,
                           const tools::ToolResult& result, long long duration_ms, json processes,
                           const ExecGate& execs) {
  audit::Call rec;
  rec.decision_id = decision_id;
  rec.call_id = call.id;
  rec.tool = call.tool;
  rec.cwd = session_.workspace;
  rec.duration_ms = duration_ms;
  rec.is_error = result.is_error;
  rec.execs = execs.execs();
  rec.refused_execs = execs.refused();
  rec.flagged_execs = execs.flagged();
  if (execs.flagged() > 0) rec.flagged = execs.flagged_json();
  rec.command = tools::command_to_judge(call.tool, call.args);
  // The call's own process (the last one a tool ran): its exit is the call's.
  if (!processes.empty()) {
    const json& last = processes.back();
    const json exit = last.value("exit", json::object());
    rec.exit_code = exit.value("code", json(nullptr));
    rec.signal = exit.value("signal", json(nullptr));
    rec.output_bytes = last.value("output_bytes", 0);
  }
  rec.processes = std::move(processes);
  copy_result_details(result.details, rec);
  if (session_.call_ends->was_cancelled_by_person(call.id)) rec.cancelled = "person";
  rec.set_files_changed(files_changed_fields(session_));  // under the index's lock: first wins
  json told = {{"exit_code", rec.exit_code.value_or(nullptr)},
               {"signal", rec.signal.value_or(nullptr)},
               {"files_changed", changed_paths(rec.files_changed)}};
  if (rec.files_changed_truncated.value_or(false)) told["files_changed_truncated"] = true;
  if (execs.flagged() > 0) told["flagged_execs"] = execs.flagged();
  // The action already ran; its record reaches the disk with the next synced one (the next
  // call's decision, or session.end), which saves an fdatasync per call.
  (void)session_.record(std::string(audit::Call::kType), rec.to_json(),
                        sessions::AuditLog::Sync::kWithNext);
  return told;
}

}  // namespace moat::sandbox

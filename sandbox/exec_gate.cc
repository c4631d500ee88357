// sandbox/exec_gate.cc: judge, ask and record each program a call starts (see exec_gate.h).
#include "sandbox/exec_gate.h"

#include <algorithm>

#include "base/log.h"
#include "sandbox/audit_records.h"
#include "sandbox/auditing_runner.h"
#include "sandbox/refusal_hint.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

constexpr std::size_t kRefusalsShown = 5;    // the model reads the first few; the log has all
constexpr std::size_t kFlagsShown = 5;       // likewise for programs that ran flagged
constexpr std::size_t kFlagArgvShown = 120;  // bytes of a flagged program's line shown

// The program's line as the model and the report read it: the audit record's words (a word
// longer than any exec takes is cut there), one line, cut at kFlagArgvShown bytes.
std::string shown_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const json& w : argv_for_audit(argv))
    line += (line.empty() ? "" : " ") + (w.is_string() ? w.get<std::string>() : w.dump());
  for (char& c : line)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  if (line.size() > kFlagArgvShown) line = line.substr(0, kFlagArgvShown) + "...";
  return line;
}

// Why the watch itself refuses an exec, whatever the policy says; empty when it does not.
std::string watch_refusal(const ExecRequest& r) {
  if (r.memory == ExecMemory::kChanged)
    return "its path or argv changed while moat was checking it (another thread rewrote them)";
  if (r.argv_truncated) return "its argv is larger than moat reads (4 MiB, 65536 words)";
  return r.refusal;
}

policy::ExecFacts facts_of(const std::vector<std::string>& argv, const std::string& path,
                           const std::string& exe, const std::string& cwd, bool unnamed,
                           const std::vector<LoaderInput>& loads = {}) {
  policy::ExecFacts f{argv, absolute_path(path, cwd), exe, cwd, unnamed, {}};
  for (const LoaderInput& l : loads)
    f.loads.push_back({l.name, l.value,
                       l.given == "environment" ? "in its environment"
                                                : "the dynamic loader's option " + l.given});
  return f;
}

std::optional<std::string> non_empty(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

policy::Decision moat_refusal(std::string reason) {
  static const policy::RuleRef kMoat{"exec-watch", "builtin", "", 0};
  policy::Decision d;
  d.verdict = policy::Verdict::kDeny;
  d.deciding = kMoat;
  d.decided_by = policy::DecidedBy::kMoat;
  d.reason = std::move(reason);
  return d;
}

// The call's own program was judged with the call (its decision record): recorded, not
// judged again. Named so that its record reads that way.
policy::Decision judged_with_call() {
  static const policy::RuleRef kCall{"call", "builtin", "", 0};
  policy::Decision d;
  d.verdict = policy::Verdict::kAllow;
  d.deciding = kCall;
  d.decided_by = policy::DecidedBy::kCall;
  return d;
}

// An ask by a rule the call's own line met, which the person (or the policy) allowed when
// the call was admitted: the program runs, named as decided with the call.
policy::Decision approved_with_call(policy::Decision d) {
  d.verdict = policy::Verdict::kAllow;
  d.decided_by = policy::DecidedBy::kCall;
  const std::string rule = d.flagged.empty() ? d.deciding.id : d.flagged;
  d.reason = "approved with the call (its command line met rule " + rule + ")";
  d.headless_downgraded = false;
  d.flagged.clear();
  return d;
}

// What the model and the person read of one refused program (issue 27 item 11): the rule, its
// file:line and what would allow it (refusal_text). The watch's own refusal was no rule's: it
// says so, and its reason says what the program did that moat cannot check.
std::string refused_text(const policy::Decision& d, const std::string& name, bool written,
                         const std::string& user_policy_dir) {
  const std::string running = "running " + moat::quoted(name) + " was refused";
  if (!written) return running + ": the audit log could not be written";
  if (d.decided_by == policy::DecidedBy::kMoat)
    return running + " by moat's exec watch, whatever the policy says (no rule or option allows "
                     "it): " + d.reason + ".";
  return refusal_text(d, "running " + moat::quoted(name) + " was", user_policy_dir);
}

}  // namespace

ExecAnswer ExecGate::on_exec(const ExecRequest& r) {
  policy::Decision d;
  json answer;
  if (std::string why = watch_refusal(r); !why.empty()) {
    d = moat_refusal(std::move(why));
  } else if (r.first) {
    d = judged_with_call();
  } else {
    d = decided(r);
    // An ask the call's own line already met was decided with it; so was one that headless
    // let run flagged ([exec] headless_ask): the person (or the policy) saw that rule then.
    const bool asked =
        d.verdict == policy::Verdict::kAsk || d.headless_downgraded || !d.flagged.empty();
    const std::string& asked_rule = d.flagged.empty() ? d.deciding.id : d.flagged;
    if (asked && approved_.count(asked_rule) != 0) d = approved_with_call(std::move(d));
    std::string what = "the program " + moat::quoted(r.exe) + " (started by the call)";
    d = asks_.ask(std::move(d), call_id_, what, cancel_, answer);
  }
  const bool written = record_exec(r, d, answer);
  const bool allow = d.verdict == policy::Verdict::kAllow && written;
  std::lock_guard<std::mutex> lock(mu_);
  if (allow) {
    ++execs_;
    if (!d.flagged.empty() && ++flagged_ <= static_cast<int>(kFlagsShown))
      flags_.push_back({{"argv", shown_line(r.argv)}, {"rule", d.flagged}});
    if (session_.programs) session_.programs->started(r.pid, call_id_, call_id_ + "." + r.exec_id);
    return ExecAnswer{true, 0};
  }
  ++refused_;
  const std::string name = r.exe.empty() ? r.path : r.exe;
  std::string text = refused_text(d, name, written, session_.user_policy_dir);
  auto same = std::find_if(refusals_.begin(), refusals_.end(),
                           [&text](const Refusal& f) { return f.text == text; });
  if (same != refusals_.end()) ++same->times;
  else if (refusals_.size() < kRefusalsShown) refusals_.push_back({std::move(text)});
  else ++unlisted_;
  return ExecAnswer{false, EPERM};
}

// The program named, and what it makes the kernel run besides (an interpreter, a program the
// loader loads): the strictest verdict stands, naming the program it is about.
policy::Decision ExecGate::decided(const ExecRequest& r) const {
  policy::Decision d =
      session_.policy->decide_exec(facts_of(r.argv, r.path, r.exe, r.cwd, r.unnamed, r.loads));
  for (const ExecTarget& t : r.also) {
    policy::Decision more =
        session_.policy->decide_exec(facts_of(t.argv, t.path, t.exe, r.cwd, t.unnamed));
    if (more.verdict <= d.verdict) continue;
    more.reason =
        "it runs " + moat::quoted(t.exe) + (more.reason.empty() ? "" : ": ") + more.reason;
    d = std::move(more);
  }
  return d;
}

bool ExecGate::record_exec(const ExecRequest& r, const policy::Decision& d, const json& answer) {
  // Observed with no rule gating it, or the call's own program: no rule to name. A flagged
  // program names the ask rule it met.
  const policy::DecidedBy by = d.decided_by;
  const bool names_no_rule =
      (by == policy::DecidedBy::kObserved && d.flagged.empty()) || d.deciding.id == "call";
  audit::Exec rec;
  rec.call_id = call_id_;
  rec.decision_id = decision_id_;
  rec.exec_id = call_id_ + "." + r.exec_id;
  if (!r.parent_exec.empty()) rec.parent_exec = call_id_ + "." + r.parent_exec;
  rec.pid = r.pid;
  rec.argv = argv_for_audit(r.argv);
  rec.path = r.path;
  rec.exe = r.exe;
  rec.cwd = r.cwd;
  rec.memory = r.memory;
  rec.result = d.verdict;
  rec.decided_by = by;
  if (!names_no_rule) rec.rule = rule_json(d.deciding);
  // Ran although a rule asks about it, because nobody could be asked ([exec] headless_ask).
  rec.flagged = non_empty(d.flagged);
  rec.interpreter = non_empty(r.interpreter);
  if (!r.also.empty()) {
    rec.runs.emplace();  // interpreters, or the program the loader loads
    for (const ExecTarget& t : r.also) rec.runs->push_back(t.exe);
  }
  if (!r.loads.empty()) {
    // What the dynamic loader is told to load: the variable, or the loader's option, by name
    // (values are in the reason when a rule judged them; an environment is not logged).
    rec.loads.emplace();
    for (const LoaderInput& l : r.loads)
      rec.loads->push_back(l.given == "environment" ? l.name : l.given);
  }
  rec.unnamed = r.unnamed;
  rec.sha256 = non_empty(r.sha256);
  rec.reason = non_empty(d.reason);
  if (!answer.is_null()) rec.user = answer;
  // Written before the program runs, not synced: a storm of execs must not wait on the disk
  // for each one; the next synced record (the call's end at the latest) covers them all.
  return static_cast<bool>(session_.record(std::string(audit::Exec::kType), rec.to_json(),
                                           sessions::AuditLog::Sync::kWithNext));
}

void ExecGate::on_end(const ExecEnd& end) {
  if (session_.programs) session_.programs->ended(call_id_ + "." + end.exec_id);
  const audit::ExecEnd rec{call_id_,   call_id_ + "." + end.exec_id, end.code, end.signal,
                           end.duration_ms, non_empty(end.note)};
  (void)session_.record(std::string(audit::ExecEnd::kType), rec.to_json(),
                        sessions::AuditLog::Sync::kWithNext);
}

std::string ExecGate::refusals_text() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (refusals_.empty()) return "";
  // Programs: the distinct ones listed, and each exec past them (not told apart).
  const int programs = static_cast<int>(refusals_.size()) + unlisted_;
  std::string out = "\n[moat refused " + std::to_string(programs) + " program" +
                    (programs == 1 ? "" : "s") + " this command started (the exec failed with " +
                    "EPERM inside the sandbox):";
  for (const Refusal& f : refusals_)
    out += "\n- " + f.text + (f.times > 1 ? " (" + std::to_string(f.times) + " execs)" : "");
  if (unlisted_ > 0)
    out += "\n- ... and " + std::to_string(unlisted_) + " more (see the audit log)";
  return out + "]";
}

std::string ExecGate::flagged_text() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (flagged_ == 0) return "";
  const bool one = flagged_ == 1;
  std::string out = "\n[moat let " + std::to_string(flagged_) + (one ? " program" : " programs") +
                    " this command started run without asking (headless) although a rule asks " +
                    (one ? "about it" : "about them") + " (recorded in the audit log):";
  for (const json& f : flags_)
    out += "\n- `" + f.value("argv", "") + "` (rule " + f.value("rule", "") + ")";
  if (flagged_ > static_cast<int>(flags_.size()))
    out += "\n- ... and " + std::to_string(flagged_ - static_cast<int>(flags_.size())) +
           " more (see the audit log)";
  return out + "]";
}

int ExecGate::flagged() const {
  std::lock_guard<std::mutex> lock(mu_);
  return flagged_;
}

json ExecGate::flagged_json() const {
  std::lock_guard<std::mutex> lock(mu_);
  return flags_;
}

int ExecGate::execs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return execs_;
}

int ExecGate::refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_;
}

}  // namespace moat::sandbox

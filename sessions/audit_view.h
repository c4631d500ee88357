// sessions/audit_view.h: one session's audit records read as tool calls: each call with the
// decisions made for it, the programs it started as a tree, and how each of them ended.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace moat::sessions {

// One program a call started: its "exec" record and, once it ended, its "exec.end". In a log
// written before exec records per program existed, `exec` is an entry of the per-call
// record's "processes" array (argv, exit, duration_ms) and `end` stays null.
struct ExecNode {
  const nlohmann::json* exec = nullptr;
  const nlohmann::json* end = nullptr;
  std::vector<size_t> children;  // indices into CallView::execs, in log order
};

// One tool call. `call` is its "call" record (or an old log's per-call "exec"); it is null for
// a call that was refused before it ran (only its decision was written) or is still running.
struct CallView {
  const nlohmann::json* call = nullptr;
  const nlohmann::json* decision = nullptr;      // the decision the call record names
  std::vector<const nlohmann::json*> decisions;  // every decision with its call_id, in order
  std::vector<ExecNode> execs;                   // in log order
  std::vector<size_t> roots;  // execs whose parent is not among this call's execs
  std::vector<const nlohmann::json*> nets;  // its programs' connections ("net"), in order
};

// Indexes `records` (one session's log, in file order; they must outlive the view). Records
// are matched to a call by call_id; a call id used again after its call record was written
// starts a new call, so a reused id does not merge two calls.
class AuditView {
 public:
  explicit AuditView(const std::vector<nlohmann::json>& records);
  const std::vector<CallView>& calls() const { return calls_; }  // in order of first record
  // The call a "call", "decision", "exec", "exec.end" or "net" record belongs to; null for
  // others. A connection belongs to the call of the program it names (exec_id), else to the
  // latest call with its call_id (a connection can end after its call did).
  const CallView* call_of(const nlohmann::json& record) const;
  const nlohmann::json* decision(const std::string& decision_id) const;
  // The "exec" record an "exec.end" names, or null.
  const nlohmann::json* exec_of(const nlohmann::json& end) const;

 private:
  void add(const nlohmann::json& record);
  void add_net(const nlohmann::json& record, const std::string& call_id);
  size_t open_call(const std::string& call_id);
  void link_tree(CallView& call);

  std::vector<CallView> calls_;
  std::map<std::string, size_t> open_;                      // call_id -> its call before its record
  std::map<std::string, size_t> latest_;                    // call_id -> its latest call
  std::map<const nlohmann::json*, size_t> call_of_;         // record -> index into calls_
  std::map<std::string, const nlohmann::json*> decisions_;  // by decision_id
  std::map<std::string, std::pair<size_t, size_t>> execs_;  // exec_id -> (call, node)
};

}  // namespace moat::sessions

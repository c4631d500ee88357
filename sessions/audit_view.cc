// sessions/audit_view.cc: grouping an audit log's records by tool call, programs as a tree.
#include "sessions/audit_view.h"

#include "sessions/json_util.h"

namespace moat::sessions {

using nlohmann::json;

AuditView::AuditView(const std::vector<json>& records) {
  for (const json& r : records) add(r);
  for (CallView& c : calls_) link_tree(c);
}

size_t AuditView::open_call(const std::string& call_id) {
  if (auto it = open_.find(call_id); it != open_.end()) return it->second;
  calls_.emplace_back();
  open_[call_id] = calls_.size() - 1;
  latest_[call_id] = calls_.size() - 1;
  return calls_.size() - 1;
}

void AuditView::add(const json& r) {
  const std::string type = str_field(r, "type");
  const std::string call_id = str_field(r, "call_id");
  if (type == "decision") {
    decisions_[str_field(r, "decision_id")] = &r;
    if (call_id.empty()) return;
    const size_t i = open_call(call_id);
    calls_[i].decisions.push_back(&r);
    call_of_[&r] = i;
  } else if (type == "exec" && r.contains("exec_id")) {
    const size_t i = open_call(call_id);
    execs_[str_field(r, "exec_id")] = {i, calls_[i].execs.size()};
    calls_[i].execs.push_back({&r, nullptr, {}});
    call_of_[&r] = i;
  } else if (type == "exec.end") {
    auto it = execs_.find(str_field(r, "exec_id"));
    if (it == execs_.end()) return;
    calls_[it->second.first].execs[it->second.second].end = &r;
    call_of_[&r] = it->second.first;
  } else if (type == "call" || type == "exec") {
    // "exec" without exec_id: the per-call record of a log written before issue 14, whose
    // programs are the entries of its "processes" array.
    const size_t i = open_call(call_id);
    CallView& c = calls_[i];
    c.call = &r;
    c.decision = decision(str_field(r, "decision_id"));
    if (type == "exec" && r.contains("processes") && r["processes"].is_array())
      for (const json& p : r["processes"]) c.execs.push_back({&p, nullptr, {}});
    call_of_[&r] = i;
    open_.erase(call_id);  // the call ended: a later record with this id is another call
  } else if (type == "net") {
    add_net(r, call_id);
  }
}

void AuditView::add_net(const json& r, const std::string& call_id) {
  size_t i = calls_.size();
  if (auto e = execs_.find(str_field(r, "exec_id")); e != execs_.end()) i = e->second.first;
  else if (auto c = latest_.find(call_id); c != latest_.end()) i = c->second;
  if (i == calls_.size()) return;  // no call: the session's end refused it, or no program held it
  calls_[i].nets.push_back(&r);
  call_of_[&r] = i;
}

void AuditView::link_tree(CallView& c) {
  for (size_t n = 0; n < c.execs.size(); ++n) {
    auto it = execs_.find(str_field(*c.execs[n].exec, "parent_exec"));
    // A parent is started, and so recorded, before its child: taking only earlier records
    // as parents keeps the tree a tree whatever a record names.
    const bool parent_here =
        it != execs_.end() && &calls_[it->second.first] == &c && it->second.second < n;
    if (parent_here) c.execs[it->second.second].children.push_back(n);
    else c.roots.push_back(n);
  }
}

const CallView* AuditView::call_of(const json& record) const {
  auto it = call_of_.find(&record);
  return it == call_of_.end() ? nullptr : &calls_[it->second];
}

const json* AuditView::decision(const std::string& decision_id) const {
  auto it = decisions_.find(decision_id);
  return it == decisions_.end() ? nullptr : it->second;
}

const json* AuditView::exec_of(const json& end) const {
  auto it = execs_.find(str_field(end, "exec_id"));
  return it == execs_.end() ? nullptr : calls_[it->second.first].execs[it->second.second].exec;
}

}  // namespace moat::sessions

// agent/batch/item_result.cc: an item's results line to and from JSON. The encoder writes what
// item.cc always wrote, key for key (nlohmann sorts an object's keys, so the bytes follow).
#include "agent/batch/item_result.h"

#include <utility>

#include "base/json_field.h"

namespace moat::agent::batch {
namespace {

using nlohmann::json;

template <typename T>
void put(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

json run_json(const RunEnd& e) {
  json j = {{"exit", e.exit}, {"seconds", e.seconds}};
  if (e.signal != 0) j["signal"] = e.signal;
  if (e.timed_out) j["timedOut"] = true;
  return j;
}

void put_audit(json& j, const AuditSide& a) {
  put(j, "auditLog", a.audit_log);
  put(j, "flaggedExecs", a.flagged_execs);
  if (a.flagged.empty()) return;
  json listed = json::array();
  for (const FlaggedExec& f : a.flagged) listed.push_back({{"argv", f.argv}, {"rule", f.rule}});
  j["flagged"] = std::move(listed);
}

json check_json(const CheckEnd& c) {
  json j = run_json(c.run);
  j["command"] = c.command;
  j["passed"] = c.passed;
  put_audit(j, c.audit);
  return j;
}

// --- decoding: each reader names the field it refuses ---

constexpr std::string_view kWhat = "results line";

Error bad(const std::string& field, const char* type) { return field_error(kWhat, field, type); }

template <typename T>
Result<std::optional<T>> opt(const json& j, const char* key, bool (json::*is)() const,
                             const char* type) {
  return optional_field<T>(j, key, is, type, kWhat);
}

Result<std::optional<std::string>> opt_string(const json& j, const char* key) {
  return opt<std::string>(j, key, &json::is_string, "a string");
}

// A member that is a string, else "" (what a hand-edited line holds there is not trusted).
std::string string_or_empty(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<std::optional<std::vector<std::string>>> opt_strings(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::optional<std::vector<std::string>>();
  std::vector<std::string> out;
  if (!it->is_array()) return fail(bad(key, "an array of strings"));
  for (const json& s : *it) {
    if (!s.is_string()) return fail(bad(key, "an array of strings"));
    out.push_back(s.get<std::string>());
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

Result<RunEnd> run_from(const json& j, const char* field) {
  if (!j.is_object()) return fail(bad(field, "an object"));
  RunEnd e;
  MOAT_ASSIGN_OR_RETURN(auto exit, (opt<int>(j, "exit", &json::is_number_integer, "an integer")));
  MOAT_ASSIGN_OR_RETURN(auto secs, (opt<double>(j, "seconds", &json::is_number, "a number")));
  MOAT_ASSIGN_OR_RETURN(auto sig, (opt<int>(j, "signal", &json::is_number_integer, "an integer")));
  MOAT_ASSIGN_OR_RETURN(auto tout, (opt<bool>(j, "timedOut", &json::is_boolean, "a boolean")));
  e.exit = exit.value_or(-1);
  e.seconds = secs.value_or(0);
  e.signal = sig.value_or(0);
  e.timed_out = tout.value_or(false);
  return e;
}

Result<AuditSide> audit_from(const json& j) {
  AuditSide a;
  MOAT_ASSIGN_OR_RETURN(a.audit_log, opt_string(j, "auditLog"));
  MOAT_ASSIGN_OR_RETURN(a.flagged_execs,
                        (opt<int>(j, "flaggedExecs", &json::is_number, "a number")));
  auto it = j.find("flagged");
  if (it == j.end()) return a;
  if (!it->is_array()) return fail(bad("flagged", "an array"));
  for (const json& f : *it)
    if (f.is_object()) a.flagged.push_back({string_or_empty(f, "argv"), string_or_empty(f, "rule")});
  return a;
}

Result<std::optional<CheckEnd>> check_from(const json& j) {
  auto it = j.find("check");
  if (it == j.end()) return std::optional<CheckEnd>();
  CheckEnd c;
  MOAT_ASSIGN_OR_RETURN(c.run, run_from(*it, "check"));
  MOAT_ASSIGN_OR_RETURN(auto command, opt_string(*it, "command"));
  MOAT_ASSIGN_OR_RETURN(auto passed, (opt<bool>(*it, "passed", &json::is_boolean, "a boolean")));
  MOAT_ASSIGN_OR_RETURN(c.audit, audit_from(*it));
  c.command = command.value_or("");
  c.passed = passed.value_or(false);
  return std::optional<CheckEnd>(std::move(c));
}

}  // namespace

json to_json(const ItemResult& r) {
  json j = {{"id", r.id}, {"repo", r.repo}, {"model", r.model}};
  put(j, "url", r.url);
  put(j, "ref", r.ref);
  if (r.clone)
    j["clone"] = {{"bundle", r.clone->bundle}, {"log", r.clone->log}, {"cached", r.clone->cached}};
  put(j, "status", r.status);
  put(j, "reason", r.reason);
  put(j, "exit", r.exit);
  if (r.agent) j["agent"] = run_json(*r.agent);
  if (r.check) j["check"] = check_json(*r.check);
  put(j, "session", r.session);
  put(j, "sessionFile", r.session_file);
  put(j, "turns", r.turns);
  put(j, "usage", r.usage);
  put(j, "cost", r.cost);
  put_audit(j, r.audit);
  put(j, "startCommit", r.start_commit);
  put(j, "patch", r.patch);
  put(j, "patchBytes", r.patch_bytes);
  put(j, "wallSeconds", r.wall_seconds);
  if (r.host_executed && !r.host_executed->empty()) j["hostExecuted"] = *r.host_executed;
  if (!r.steps.empty()) j["steps"] = r.steps;
  return j;
}

int flagged_count(const ItemResult& r) {
  return r.audit.flagged_execs.value_or(0) +
         (r.check ? r.check->audit.flagged_execs.value_or(0) : 0);
}

bool check_passed(const ItemResult& r) { return r.check && r.check->passed; }

Result<ItemResult> item_result_from_json(const json& j) {
  if (!j.is_object()) return fail(Error{0, "results line: not a JSON object"});
  ItemResult r;
  MOAT_ASSIGN_OR_RETURN(auto id, opt_string(j, "id"));
  if (!id) return fail(bad("id", "a string"));
  r.id = *id;
  MOAT_ASSIGN_OR_RETURN(auto repo, opt_string(j, "repo"));
  MOAT_ASSIGN_OR_RETURN(auto model, opt_string(j, "model"));
  r.repo = repo.value_or("");
  r.model = model.value_or("");
  MOAT_ASSIGN_OR_RETURN(r.url, opt_string(j, "url"));
  MOAT_ASSIGN_OR_RETURN(r.ref, opt_string(j, "ref"));
  MOAT_ASSIGN_OR_RETURN(r.status, opt_string(j, "status"));
  MOAT_ASSIGN_OR_RETURN(r.reason, opt_string(j, "reason"));
  MOAT_ASSIGN_OR_RETURN(r.exit, (opt<int>(j, "exit", &json::is_number_integer, "an integer")));
  if (j.contains("agent")) {
    MOAT_ASSIGN_OR_RETURN(r.agent, run_from(j["agent"], "agent"));
  }
  MOAT_ASSIGN_OR_RETURN(r.check, check_from(j));
  if (auto c = j.find("clone"); c != j.end() && c->is_object())
    r.clone = CloneUsed{string_or_empty(*c, "bundle"), string_or_empty(*c, "log"),
                        c->contains("cached") && (*c)["cached"].is_boolean() &&
                            (*c)["cached"].get<bool>()};
  MOAT_ASSIGN_OR_RETURN(r.session, opt_string(j, "session"));
  MOAT_ASSIGN_OR_RETURN(r.session_file, opt_string(j, "sessionFile"));
  MOAT_ASSIGN_OR_RETURN(r.turns, (opt<int>(j, "turns", &json::is_number, "a number")));
  if (j.contains("usage")) r.usage = j["usage"];
  MOAT_ASSIGN_OR_RETURN(r.cost, (opt<double>(j, "cost", &json::is_number, "a number")));
  MOAT_ASSIGN_OR_RETURN(r.audit, audit_from(j));
  MOAT_ASSIGN_OR_RETURN(r.start_commit, opt_string(j, "startCommit"));
  MOAT_ASSIGN_OR_RETURN(r.patch, opt_string(j, "patch"));
  MOAT_ASSIGN_OR_RETURN(r.patch_bytes,
                        (opt<std::uint64_t>(j, "patchBytes", &json::is_number, "a number")));
  MOAT_ASSIGN_OR_RETURN(r.wall_seconds,
                        (opt<double>(j, "wallSeconds", &json::is_number, "a number")));
  MOAT_ASSIGN_OR_RETURN(r.host_executed, opt_strings(j, "hostExecuted"));
  if (auto s = j.find("steps"); s != j.end() && s->is_object())
    for (const auto& [name, secs] : s->items())
      if (secs.is_number()) r.steps[name] = secs.get<double>();
  return r;
}

}  // namespace moat::agent::batch

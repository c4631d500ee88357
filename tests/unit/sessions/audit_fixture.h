// tests/unit/sessions/audit_fixture.h: a synthetic session's audit log in the issue 14 record
// shapes (call, exec, exec.end), written with AuditLog so it chains and verifies: one bash
// call a person allowed, whose script started sh, which started a refused curl and a cp that
// changed files; one write call; one refused call.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "sessions/audit.h"
#include "sessions/audit_key.h"

namespace moat::sessions::testing {

inline nlohmann::json fixture_exec(const std::string& id, const nlohmann::json& parent,
                                   nlohmann::json argv, const std::string& decided_by) {
  return {{"call_id", "c1"},
          {"decision_id", "d1"},
          {"exec_id", id},
          {"parent_exec", parent},
          {"pid", 100},
          {"argv", std::move(argv)},
          {"path", "/bin/x"},
          {"exe", "/usr/bin/x"},
          {"cwd", "/w"},
          {"result", "allow"},
          {"decided_by", decided_by},
          {"rule", nullptr}};
}

inline nlohmann::json fixture_end(const std::string& id, int code, int ms) {
  return {{"call_id", "c1"},
          {"exec_id", id},
          {"exit", {{"code", code}, {"signal", nullptr}}},
          {"duration_ms", ms}};
}

inline nlohmann::json fixture_file(const std::string& path, const std::string& op, int before,
                                   int after) {
  auto side = [](int size) -> nlohmann::json {
    if (size < 0) return nullptr;
    return {{"sha256", std::string(64, 'a')}, {"size", size}};
  };
  return {{"path", path}, {"op", op}, {"before", side(before)}, {"after", side(after)}};
}

// Writes the session (ending with session.end) into `dir`; returns the log's path, or "".
inline std::string write_fixture_audit(const std::string& dir) {
  using nlohmann::json;
  // Signed, as moatd's logs are: the first record names the key, checkpoints follow.
  auto key = AuditKey::load_or_create(dir + "/audit-key");
  if (!key) return "";
  auto log = AuditLog::open(dir, "01900000-0000-7000-8000-0000000000aa", "sha256:p",
                            std::shared_ptr<const AuditKey>(std::move(*key)));
  if (!log) return "";
  AuditLog& a = **log;
  const json rule = {
      {"id", "org.ask-tests"}, {"layer", "org"}, {"file", "/etc/moat/org.toml"}, {"line", 3}};
  bool ok = a.append("session.start",
                     {{"moat_version", "0.1.0"},
                      {"workspace", "/w"},
                      {"layers",
                       {{{"layer", "org"},
                         {"name", "acme"},
                         {"revision", "7"},
                         {"file", "/etc/moat/org.toml"},
                         {"sha256", "ab12"}}}},
                      {"sandbox", {{"user", true}, {"net", true}, {"seccomp", "filter"}}},
                      {"audit_signing", "ed25519"}})
                .has_value();
  ok = ok && a.append("decision", {{"decision_id", "d1"},
                                   {"tool", "bash"},
                                   {"call_id", "c1"},
                                   {"input",
                                    {{"tool", "bash"},
                                     {"command", "sh run_tests.sh"},
                                     {"user",
                                      {{"answer", "allow"},
                                       {"scope", "once"},
                                       {"channel", "console"},
                                       {"latency_ms", 4500}}}}},
                                   {"result", "allow"},
                                   {"deciding_rule", rule},
                                   {"decided_by", "user"}});
  json curl = fixture_exec("e3", "e2", {"curl", "x.example"}, "policy");
  curl["result"] = "deny";
  curl["rule"] = {{"id", "org.no-curl"}, {"layer", "org"}, {"file", "org.toml"}, {"line", 9}};
  curl["reason"] = "no network tools";
  ok = ok &&
       a.append("exec", fixture_exec("e1", nullptr, {"bash", "-c", "sh run_tests.sh"}, "call"));
  ok = ok && a.append("exec", fixture_exec("e2", "e1", {"sh", "run_tests.sh"}, "observed"));
  ok = ok && a.append("exec", curl);
  ok = ok && a.append("exec", fixture_exec("e4", "e2", {"cp", "a.txt", "b.txt"}, "observed"));
  ok = ok && a.append("exec.end", fixture_end("e4", 0, 2));
  ok = ok && a.append("exec.end", fixture_end("e2", 1, 38));
  ok = ok && a.append("exec.end", fixture_end("e1", 1, 40));
  ok = ok && a.append("call", {{"decision_id", "d1"},
                               {"call_id", "c1"},
                               {"tool", "bash"},
                               {"cwd", "/w"},
                               {"command", "sh run_tests.sh"},
                               {"exit_code", 1},
                               {"signal", nullptr},
                               {"duration_ms", 47},
                               {"output_bytes", 120},
                               {"is_error", true},
                               {"files_changed",
                                {fixture_file("/w/b.txt", "create", -1, 14),
                                 fixture_file("/w/a.txt", "modify", 10, 14)}},
                               {"files_changed_truncated", false},
                               {"execs", 4},
                               {"refused_execs", 1}});
  ok = ok && a.append("decision", {{"decision_id", "d2"},
                                   {"tool", "write"},
                                   {"call_id", "c2"},
                                   {"input", {{"path", "/w/notes.md"}, {"access", "write"}}},
                                   {"result", "allow"},
                                   {"deciding_rule", {{"id", "default.ws"}}},
                                   {"decided_by", "policy"}});
  ok = ok && a.append("call", {{"decision_id", "d2"},
                               {"call_id", "c2"},
                               {"tool", "write"},
                               {"path", "/w/notes.md"},
                               {"exit_code", nullptr},
                               {"signal", nullptr},
                               {"duration_ms", 1},
                               {"is_error", false},
                               {"files_changed", {fixture_file("/w/notes.md", "create", -1, 5)}},
                               {"execs", 0},
                               {"refused_execs", 0}});
  ok = ok && a.append("decision", {{"decision_id", "d3"},
                                   {"tool", "bash"},
                                   {"call_id", "c3"},
                                   {"input", {{"tool", "bash"}, {"command", "git push -f"}}},
                                   {"result", "deny"},
                                   {"deciding_rule", {{"id", "org.no-force-push"}}},
                                   {"decided_by", "policy"}});
  ok = ok && a.append("session.end", json::object());
  return ok ? a.path() : "";
}

}  // namespace moat::sessions::testing

// tests/unit/sessions/audit_samples.h: one record of every audit record type moatd writes
// (docs/sessions.md, "Record types"), each with every field the docs give it, and the words a
// person must find for it in `moat audit show` and in the HTML page (issue 27 item 9).
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sessions/audit.h"

namespace moat::sessions::testing {

struct RecordSample {
  std::string type;
  nlohmann::json fields;
  std::vector<std::string> shows;  // each must appear in the record's line and in the page
};

inline std::vector<RecordSample> record_samples() {
  using nlohmann::json;
  const json peer = {{"uid", 1000}, {"gid", 1001}, {"pid", 4242}, {"user", "alice"}};
  const json rule = {{"id", "org.ask-net"},
                     {"layer", "system"},
                     {"file", "/etc/moat/policy.d/00.toml"},
                     {"line", 12}};
  return {
      {"session.start",
       {{"moat_version", "0.1.0"},
        {"peer", peer},
        {"host", "build-7"},
        {"workspace", "/w"},
        {"interactive", false},
        {"console", "none"},
        {"layers",
         {{{"layer", "system"},
           {"name", "acme"},
           {"revision", "7"},
           {"file", "/etc/moat/policy.d/00.toml"},
           {"sha256", "ab12cd"}}}},
        {"sandbox", {{"seccomp", "filter-v3"}}},
        {"tools", {"bash", "read"}},
        {"audit_signing", "ed25519"},
        {"exec_typed_by", "agent"},
        {"file_index", {{"files", 12}, {"ms", 3}}},
        {"binds", {{{"source", "/srv/data"}, {"target", "/data"}, {"writable", false}}}},
        {"project_policy", {{"loaded", false}, {"why", "unpinned"}}}},
       {"moat 0.1.0 /w", "user alice (uid 1000, gid 1001), pid 4242", "on host build-7",
        "headless", "console none", "exec lines typed by agent", "signing ed25519",
        "policy system acme rev 7 /etc/moat/policy.d/00.toml sha256 ab12cd", "filter-v3",
        "tools", "read", "file index", "/srv/data", "unpinned"}},
      {"session.refused",
       {{"reason", "--bind /etc is not allowed by the policy"}, {"peer", peer}},
       {"refused: --bind /etc is not allowed by the policy",
        "user alice (uid 1000, gid 1001), pid 4242"}},
      {"decision",
       {{"decision_id", "d1"},
        {"tool", "bash"},
        {"call_id", "c1"},
        {"input",
         {{"command", "curl x.example"},
          {"user", {{"answer", "allow"}, {"scope", "once"}, {"latency_ms", 4500}}}}},
        {"result", "allow"},
        {"deciding_rule", rule},
        {"matched", {"org.ask-net", "default.bash"}},
        {"decided_by", "user"},
        {"channel", "console"},
        {"mode", "ask"}},
       {"allow  bash curl x.example", "org.ask-net (system layer, /etc/moat/policy.d/00.toml:12)",
        "allowed by the user, once, after 4.5 s", "default.bash", "channel console"}},
      {"exec",
       {{"call_id", "c1"},
        {"decision_id", "d1"},
        {"exec_id", "c1.2"},
        {"parent_exec", "c1.1"},
        {"pid", 41234},
        {"argv", {"curl", "x.example"}},
        {"path", "/usr/bin/curl"},
        {"exe", "/usr/bin/curl"},
        {"cwd", "/w/src"},
        {"memory", "exclusive"},
        {"result", "allow"},
        {"decided_by", "observed"},
        {"flagged", "default.network-tools"},
        {"rule", {{"id", "default.network-tools"}, {"layer", "builtin"}}},
        {"runs", {"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"}},
        {"loads", {"LD_PRELOAD"}}},
       {"curl x.example  allowed (observed, rule default.network-tools)", "id c1.2",
        "parent c1.1", "pid 41234", "exe /usr/bin/curl", "cwd /w/src", "ld-linux-x86-64.so.2",
        "LD_PRELOAD", "flagged by default.network-tools", "memory exclusive"}},
      {"exec.end",
       {{"call_id", "c1"},
        {"exec_id", "c1.2"},
        {"exit", {{"code", nullptr}, {"signal", 9}}},
        {"duration_ms", 41},
        {"note", "still running when the call ended"}},
       {"curl x.example  signal 9, 41 ms, still running when the call ended"}},
      {"net",
       {{"host", "pypi.org"},
        {"port", 443},
        {"method", "CONNECT"},
        {"address", "151.101.0.223"},
        {"decision", "allow"},
        {"rule", "org.pypi"},
        {"layer", "system"},
        {"bytes_up", 1843},
        {"bytes_down", 91022},
        {"duration_ms", 412.5},
        {"call_id", "c1"},
        {"exec_id", "c1.2"},
        {"pid", 41290},
        {"count", 500},
        {"first_ts", "2026-03-04T10:15:02.118233140Z"},
        {"last_ts", "2026-03-04T10:15:03.117001873Z"},
        {"errors", 2},
        {"error", "reset by peer"},
        {"user", {{"answer", "allow"}, {"scope", "session"}, {"latency_ms", 1200}}}},
       {"CONNECT pypi.org:443 -> 151.101.0.223  allow (org.pypi (system layer)",
        "allowed by the user, for this session, after 1.2 s", "up 1843 B", "down 91022 B",
        "412.5 ms", "error: reset by peer",
        "500 connections from 2026-03-04T10:15:02.118233140Z to 2026-03-04T10:15:03.117001873Z, "
        "2 with errors",
        "by call c1, program c1.2 curl x.example, pid 41290"}},
      {"net",
       {{"host", "evil.example"},
        {"port", 80},
        {"method", "GET"},
        {"address", nullptr},
        {"decision", "deny"},
        {"rule", "resources.network_rate"},
        {"layer", "system"},
        {"bytes_up", 0},
        {"bytes_down", 0},
        {"duration_ms", 0.5},
        {"error", "the session opened connections too fast"},
        {"call_id", "c1"},
        {"exec_id", nullptr},
        {"program_error", "no process of the session holds the socket"}},
       {"GET evil.example:80 -> ?  deny (resources.network_rate (system layer))",
        "error: the session opened connections too fast",
        "program not known: no process of the session holds the socket"}},
      {"call",
       {{"decision_id", "d1"},
        {"call_id", "c1"},
        {"tool", "bash"},
        {"cwd", "/w"},
        {"command", "curl x.example"},
        {"exit_code", nullptr},
        {"signal", 9},
        {"cancelled", "person"},
        {"duration_ms", 3000},
        {"output_bytes", 120},
        {"is_error", true},
        {"execs", 2},
        {"refused_execs", 1},
        {"flagged_execs", 1},
        {"flagged", {{{"argv", {"curl", "x.example"}}, {"rule", "default.network-tools"}}}},
        {"files_changed",
         {{{"path", "/w/a.txt"},
           {"op", "modify"},
           {"before", {{"sha256", std::string(64, 'a')}, {"size", 10}}},
           {"after", {{"sha256", std::string(64, 'b')}, {"size", 14}}}}}},
        {"files_changed_truncated", false},
        {"nested_git_removed",
         {{{"path", "/w/docs/.git"}, {"type", "directory"}, {"removed", true}}}},
        {"nested_git_reason", "a nested .git could run hooks"}},
       {"bash curl x.example  signal 9, 3000 ms, 2 programs (1 refused, 1 ran flagged)",
        "120 bytes out", "cancelled by the person", "modify /w/a.txt  10 -> 14 bytes (+4)",
        "ran flagged curl x.example (rule default.network-tools)",
        "removed directory /w/docs/.git", "a nested .git could run hooks"}},
      {"checkpoint",
       {{"head", "sha256:0badc0de"},
        {"count", 64},
        {"key_id", "ed25519:0123456789abcdef"},
        {"sig", "c2ln"}},
       {"signs seq 1-64 (head sha256:0badc0de) with ed25519:0123456789abcdef"}},
      {"session.end",
       {{"calls", 3},
        {"duration_s", 12.5},
        {"nested_git_removed",
         {{{"path", "/w/x/.git"}, {"type", "file"}, {"removed", false}, {"error", "EBUSY"}}}},
        {"nested_git_reason", "a nested .git could run hooks"}},
       {"calls 3, 12.5 s", "could not remove file /w/x/.git: EBUSY"}},
  };
}

// The types docs/sessions.md lists on its "Record types:" line (backquoted), in order.
inline std::vector<std::string> documented_record_types() {
  std::ifstream in(std::string(MOAT_SOURCE_ROOT) + "/docs/sessions.md");
  std::string line;
  std::vector<std::string> out;
  bool in_list = false;  // the paragraph that starts "Record types", to its blank line
  while (std::getline(in, line)) {
    in_list = line.rfind("Record types", 0) == 0 || (in_list && !line.empty());
    if (!in_list) continue;
    for (size_t a = line.find('`'); a != std::string::npos; a = line.find('`', a + 1)) {
      const size_t b = line.find('`', a + 1);
      if (b == std::string::npos) break;
      out.push_back(line.substr(a + 1, b - a - 1));
      a = b;
    }
  }
  return out;
}

// Writes every sample, chained, into a log under `dir`; returns its path, or "".
inline std::string write_sample_audit(const std::string& dir) {
  auto log = AuditLog::open(dir, "01900000-0000-7000-8000-0000000000bb", "sha256:p");
  if (!log) return "";
  for (const RecordSample& s : record_samples())
    if (!(*log)->append(s.type, s.fields)) return "";
  return (*log)->path();
}

}  // namespace moat::sessions::testing

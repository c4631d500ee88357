// agent/batch/item_result.h: one item's line of OUT/results.jsonl as a typed record, with its
// one encoder and one decoder (docs/batch.md "Outputs" lists every field; a test holds the
// list to kItemResultFields). A field absent from the line is an unset optional here: a line
// says only what its item got as far as (an error line stops at the failed step).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace moat::agent::batch {

// How a process of the item ended: the agent's `moat run`, or the check.
struct RunEnd {
  int exit = 0;
  double seconds = 0;
  int signal = 0;          // written only when not 0
  bool timed_out = false;  // "timedOut", written only when true
};

// A program that ran flagged: its argv as one line and the rule that asks about it.
struct FlaggedExec {
  std::string argv;
  std::string rule;  // the audit record's "flagged": the rule that asks
};

// The audit log of one side (the agent's or the check's) and its flagged programs.
struct AuditSide {
  std::optional<std::string> audit_log;  // "auditLog"
  std::optional<int> flagged_execs;      // "flaggedExecs"
  std::vector<FlaggedExec> flagged;      // "flagged": the first ten, written when any ran
};

struct CheckEnd {
  RunEnd run;
  std::string command;
  bool passed = false;
  AuditSide audit;
};

struct CloneUsed {
  std::string bundle;  // relative to OUT
  std::string log;     // relative to OUT
  bool cached = false;
};

struct ItemResult {
  std::string id, repo, model;
  std::optional<std::string> url, ref;
  std::optional<CloneUsed> clone;
  std::optional<std::string> status;  // passed, failed, error
  std::optional<std::string> reason;
  std::optional<int> exit;  // of `moat run`
  std::optional<RunEnd> agent;
  std::optional<CheckEnd> check;
  std::optional<std::string> session, session_file;
  std::optional<int> turns;
  std::optional<nlohmann::json> usage;  // providers::Usage::to_json()
  std::optional<double> cost;           // USD
  AuditSide audit;
  std::optional<std::string> start_commit;
  std::optional<std::string> patch;  // relative to OUT
  std::optional<std::uint64_t> patch_bytes;
  std::optional<double> wall_seconds;
  std::optional<std::vector<std::string>> host_executed;  // written only when not empty
  std::map<std::string, double> steps;                    // seconds per step
};

// The top-level fields of a line, in docs/batch.md's order.
inline constexpr const char* kItemResultFields[] = {
    "id",      "repo",        "url",      "ref",        "clone",      "model",
    "status",  "reason",      "exit",     "agent",      "check",      "session",
    "sessionFile", "auditLog", "turns",   "usage",      "cost",       "startCommit",
    "patch",   "patchBytes",  "wallSeconds", "flaggedExecs", "flagged", "hostExecuted",
    "steps"};

nlohmann::json to_json(const ItemResult& r);
// Programs the item's agent and its check ran flagged (headless: a rule asks about them).
int flagged_count(const ItemResult& r);
// Whether the check ran and passed.
bool check_passed(const ItemResult& r);
// The line back; an error names the field that is missing or of another type.
Result<ItemResult> item_result_from_json(const nlohmann::json& j);

}  // namespace moat::agent::batch

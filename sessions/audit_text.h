// sessions/audit_text.h: the words a person reads for one audit record or program: what ran,
// who decided and by which rule, how it ended, what it changed. Shared by `moat audit show`
// and the HTML page, so both say the same thing.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "sessions/audit_view.h"

namespace moat::sessions {

// Argv, else the command or path (a call record's, or a decision's input): what a reviewer
// recognises the action by. Bytes that are not UTF-8 are shown as \xNN.
std::string action_of(const nlohmann::json& record);

// The deciding rule's id (decision: deciding_rule; exec: rule), or "".
std::string rule_of(const nlohmann::json& record);

// "exit 2", "signal 9, killed by wall_time limit", "ok"/"error" (old exec records): from the
// nested exit:{code,signal,limit}, the flat exitCode/exit_code/signal, or is_error.
std::string exit_text(const nlohmann::json& record);

// "47 ms", or "" without duration_ms.
std::string duration_text(const nlohmann::json& record);

// Who decided, in words: "allowed by the user, once, after 4.5 s", "denied by the user",
// "allowed by the user (remembered for this session)", "denied by policy", "allowed by
// default"; "" when the record says nothing of it.
std::string decided_text(const nlohmann::json& decision);

// One program of a call: "curl x.example  REFUSED (policy, rule org.no-curl): reason" or
// "sh run_tests.sh  allowed (observed)  exit 1, 38 ms".
std::string exec_text(const ExecNode& node);

// The files a call record reports: files_changed entries ("modify /w/a.txt 120 -> 140 bytes
// (+20)", "rename /w/a -> /w/b"), or, in a record without files_changed, its
// filesMutated/files_mutated paths (a record with both lists each file once).
std::vector<std::string> files_touched(const nlohmann::json& record);

// The exec tree of a call, one line per program, drawn with |- and `- under `indent`.
std::vector<std::string> exec_tree_lines(const CallView& call, const std::string& indent);

}  // namespace moat::sessions

// sessions/context.h: the model's context rebuilt from a root-to-leaf path (storage is
// never rewritten; only this view of it changes after a compaction).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "sessions/message_list.h"
#include "sessions/store.h"

namespace moat::sessions {

struct SessionContext {
  std::string summary;                  // the newest compaction's summary on the path
  std::vector<std::string> read_files;  // that compaction's file lists
  std::vector<std::string> modified_files;
  // What the provider is sent: the summary as a user message when compacted (then
  // live_begin is 1), then the live messages (retained tail + later messages). They refer
  // to the entries they come from (no copy): valid while those entries live.
  MessageList messages;
  size_t live_begin = 0;
  std::string provider;  // from the newest model_change ("" if none)
  std::string model;
  size_t compactions = 0;  // compaction entries on the path
  std::string workspace;   // the session header's (build_context(store) only)

  const MessageList& for_provider() const { return messages; }
  MessageList live_messages() const { return messages.tail(live_begin); }
};

// Walks `path` (root to leaf): message entries become messages, a branch_summary becomes a
// user message, and a compaction replaces everything before it with its summary and its
// copy of the retained tail. The messages refer to the entries of `path`.
SessionContext build_context(const std::vector<const Entry*>& path);
// The same, owning copies of the messages (`path` may go away).
SessionContext build_context(const std::vector<Entry>& path);
// The context of the store's current leaf: only the entries it needs are parsed (those
// from the newest compaction on, and model changes), and nothing is copied.
SessionContext build_context(const SessionStore& store);

// The user message that carries a compaction summary and its file lists.
Message summary_message(const std::string& summary, const std::vector<std::string>& read_files,
                        const std::vector<std::string>& modified_files);

// Tool calls on the path that have no toolResult (the process died mid-call). On resume the
// loop appends an error result for each, in this order, before anything else, so the
// context is valid for the provider again.
struct DanglingCall {
  std::string id;
  std::string name;
};
std::vector<DanglingCall> dangling_tool_calls(const std::vector<Entry>& path);
std::vector<DanglingCall> dangling_tool_calls(const SessionStore& store);

// Why a call has no result on the path: moat died during it (a plain resume), or the run
// branched or forked from an entry before its result (the call may well have finished in
// the source; saying moat stopped would be false).
enum class Unanswered { kInterrupted, kBranched };

// The toolResult message that answers a dangling call: isError, saying why it has none.
Message interrupted_result(const DanglingCall& call, Unanswered why = Unanswered::kInterrupted);

// On resume: appends interrupted_result for every dangling call on the store's current path
// (in call order) and syncs; returns how many were answered (0: nothing to do).
Result<size_t> answer_dangling_calls(SessionStore& store,
                                     Unanswered why = Unanswered::kInterrupted);

}  // namespace moat::sessions

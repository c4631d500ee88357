// agent/compaction.h: slot 5's compaction: when to compact, where to cut, what to ask the
// model, and the compaction entry that the loop appends (the session file is never rewritten;
// sessions::build_context reads the entry back as summary + retained tail).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include "base/result.h"
#include "sessions/context.h"
#include "sessions/message.h"
#include "sessions/store.h"

namespace moat::agent {

class Provider;
using sessions::Message;  // its home: sessions/message.h

struct CompactionSettings {
  int64_t reserve_tokens = 16384;      // room kept for the next answer and the summary
  int64_t keep_recent_tokens = 20000;  // newest context kept verbatim after a compaction
  std::string instructions;            // a person's `/compact TEXT`: what the summary keeps
};

// True when `used` (the last call's input + output tokens) leaves less than `reserve` of
// `window`: used > window - reserve. A window <= 0 (unknown) never compacts.
bool should_compact(int64_t used, int64_t window, int64_t reserve);

// A provider-independent estimate: characters / 4, rounded up; an image counts 1200.
int64_t estimate_tokens(const Message& message);
int64_t estimate_tokens(const std::vector<Message>& messages);
int64_t estimate_tokens(const sessions::MessageList& messages);

// Where the live messages are cut: [0, turn_start) is summarised with the previous summary,
// [turn_start, first_kept) is the prefix of a turn the cut splits (summarised on its own),
// [first_kept, end) is retained verbatim. The cut is at a user or assistant message, never at
// a toolResult, so a call and its result are never separated. first_kept == 0: nothing to cut.
// When no user message precedes the cut (the turn began before an earlier compaction),
// turn_start == first_kept: the earlier part only updates the previous summary.
struct CutPoint {
  size_t first_kept = 0;
  size_t turn_start = 0;
  bool splits_turn() const { return turn_start < first_kept; }
};
CutPoint find_cut_point(const std::vector<Message>& messages, int64_t keep_recent_tokens);

// Files read (read tool) and modified (edit and write tools, and moatd's mutation records in
// a toolResult's details.filesMutated) in `messages`, merged with `previous`; sorted, unique;
// a file that was modified is listed as modified only. A relative path argument is made
// absolute against `workspace` (when given) and normalised, so it is one entry with moatd's
// canonical mutation record of the same file.
struct FileLists {
  std::vector<std::string> read;
  std::vector<std::string> modified;
};
FileLists collect_files(const std::vector<Message>& messages, const FileLists& previous,
                        const std::string& workspace = "");

// One summarisation call: the loop (or a test) turns it into a model call.
struct SummaryRequest {
  std::string system;
  std::string prompt;  // a single user message
  int max_tokens = 8192;
};
using Summarizer = std::function<Result<std::string>(const SummaryRequest&)>;

// The conversation as plain text for the summariser, tool results cut to 2000 characters.
std::string serialize_conversation(const std::vector<Message>& messages);
// The structured summary (goal, constraints, progress done / in progress / blocked,
// decisions, next steps, critical context); with a previous summary, an update of it.
SummaryRequest history_summary_request(const std::vector<Message>& messages,
                                       const std::string& previous_summary, int max_tokens);
// The summary of the early part of a turn the cut splits.
SummaryRequest turn_prefix_request(const std::vector<Message>& prefix, int max_tokens);

// Builds the compaction entry for `context` (sessions::build_context of the current path;
// the cut is chosen among its live messages):
// {"type":"compaction","summary","retained":[messages],"tokensBefore","readFiles",
//  "modifiedFiles","splitTurn","summarizedMessages"}. The loop appends it with
// SessionStore::append and rebuilds the context. Fails when there is nothing to summarise
// (the context is already within keep_recent_tokens) or when `summarize` fails.
// tokensBefore is `tokens_before` (the provider's count of the last prompt + answer) when
// known (> 0), else the chars/4 estimate of the context.
Result<sessions::Entry> compact(const sessions::SessionContext& context,
                                const CompactionSettings& settings, const Summarizer& summarize,
                                int64_t tokens_before = 0);

// The loop's step after a turn's results are persisted: when should_compact(used, window,
// reserve), builds the compaction for the store's current path, appends it and syncs.
// Returns whether it compacted; the loop then sends sessions::build_context(store).
Result<bool> compact_if_needed(sessions::SessionStore& store, int64_t used, int64_t window,
                               const CompactionSettings& settings, const Summarizer& summarize);
// The same without the threshold: after a provider's context-overflow error (then retry once).
Result<void> compact_now(sessions::SessionStore& store, const CompactionSettings& settings,
                         const Summarizer& summarize, int64_t tokens_before = 0);

// A Summarizer that asks `provider` (no tools offered); a stop of `cancel` ends its request.
Summarizer summarizer_for(Provider& provider, std::stop_token cancel);

// Whether a provider error means the request did not fit the context window (HTTP 413, or
// the providers' wordings): the loop then compacts once and retries once.
bool is_context_overflow(const Error& error);

}  // namespace moat::agent

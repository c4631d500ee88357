// sessions/store.h: the append-only JSONL session tree (one file per session).
//
// File format (kSessionFormatVersion = 1): a header line
//   {"type":"session","version":1,"id":<uuidv7>,"timestamp":..,"workspace":..,"parentSession":..}
// then one entry per line: {"type","id","parentId","timestamp", ...type fields}, types
//   message         {"message": <agent/provider.h message>}
//   model_change    {"provider","model"}
//   tools_change    {"tools":[names...]}       the announced tool set changed (breaks the prefix)
//   compaction      {"summary","retained":[messages],"tokensBefore","readFiles","modifiedFiles"}
//   branch_summary  {"fromId","summary"}
//   label           {"targetId","label"}
//   session_info    {"name"}
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "sessions/message.h"

namespace moat::sessions {

// An entry: {"type":..., "id":..., "parentId":..., "timestamp":..., ...type fields}.
using Entry = nlohmann::json;

inline constexpr int kSessionFormatVersion = 1;

// True for the entry types listed above; append refuses any other.
bool is_entry_type(const std::string& type);

class SessionStore : public MessageSource {
 public:
  // Creates <dir>/<workspace slug>/<time>_<id>.jsonl with its header line.
  static Result<std::unique_ptr<SessionStore>> create(const std::string& sessions_dir,
                                                      const std::string& workspace,
                                                      const std::string& parent_session = "");
  // A session that is never written to disk (`moat run --ephemeral`): the same store over an
  // anonymous memory file, gone when the process ends. path() is "".
  static Result<std::unique_ptr<SessionStore>> create_in_memory(const std::string& workspace);
  // Opens an existing file; a torn last line is dropped; a newer format version is refused.
  // Opening for writing truncates a torn last line away (it was never acknowledged) and
  // takes an exclusive flock: a second writer gets EWOULDBLOCK.
  static Result<std::unique_ptr<SessionStore>> open(const std::string& path);
  // Loads a file without modifying or locking it (for `moat sessions`); append fails EBADF.
  static Result<std::unique_ptr<SessionStore>> open_read_only(const std::string& path);

  virtual const std::string& id() const = 0;
  virtual const std::string& path() const = 0;
  virtual const Entry& header() const = 0;  // the header line as loaded or written
  // Appends an entry (type and type fields given; id, parentId = current leaf, timestamp
  // are filled in), moves the leaf to it, and returns its id. One write() per line.
  virtual Result<std::string> append(Entry entry) = 0;
  // Appends a copy of an entry from another session (fork): its id and timestamp are kept,
  // parentId becomes the current leaf. EEXIST if the id is already in this file.
  virtual Result<void> append_copy(const Entry& entry) = 0;
  virtual Result<void> sync() = 0;  // fdatasync: called at the end of every turn
  // The newest entry on the current branch; "" before the first entry.
  virtual const std::string& leaf() const = 0;
  // Branch: the next append continues from `entry_id` ("" = from the root). ENOENT if unknown.
  virtual Result<void> set_leaf(const std::string& entry_id) = 0;
  // The entries from the root to the leaf, in order.
  virtual std::vector<Entry> path_to_leaf() const = 0;
  // The entries from the root to `entry_id`, in order (empty if unknown).
  virtual std::vector<Entry> path_to(const std::string& entry_id) const = 0;
  // The same path without copying: pointers to the entries, which stay where they are for
  // the store's life (an append never moves them).
  virtual std::vector<const Entry*> path_refs(const std::string& entry_id) const = 0;
  // The same path as entry indices (nothing is parsed).
  virtual std::vector<size_t> path_indices(const std::string& entry_id) const = 0;

  // Entries in file order. An entry is kept as its line's bytes (loaded or appended) and
  // parsed the first time it is read; its type and id are known without parsing it.
  virtual size_t entry_count() const = 0;
  virtual const Entry& entry(size_t index) const = 0;
  virtual const std::string& entry_type(size_t index) const = 0;
  virtual const std::string& entry_id(size_t index) const = 0;
  // The `message` member of entry `index` (null if it has none), without parsing the rest
  // of the entry.
  const Entry* entry_message(size_t index) const override = 0;
  // Whether entry `index` has a `message` member (known without parsing it).
  virtual bool entry_has_message(size_t index) const = 0;
  // Entry `index`'s line as the file holds it (no newline), followed in memory by at least
  // simdjson's padding (sessions/message_dom.h parses it in place); valid for the store's
  // life. What a context is made of: a request body is built from these bytes.
  std::string_view entry_text(size_t index) const override = 0;
  // Entry `index`'s message's tool calls or the call it answers; null when neither.
  const ToolCallRole* entry_tool_calls(size_t index) const override = 0;
  class EntryView;
  EntryView entries() const;
  virtual const Entry* find(const std::string& entry_id) const = 0;
  // Bytes of a torn last line that open() dropped (0 for a clean file).
  virtual size_t dropped_torn_bytes() const = 0;
};

// Every entry of a store, in file order, as a read-only sequence of `const Entry&`.
class SessionStore::EntryView {
 public:
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Entry;
    using difference_type = std::ptrdiff_t;
    using pointer = const Entry*;
    using reference = const Entry&;
    Iterator(const SessionStore* store, size_t index) : store_(store), index_(index) {}
    const Entry& operator*() const { return store_->entry(index_); }
    Iterator& operator++() { return ++index_, *this; }
    bool operator==(const Iterator& o) const { return index_ == o.index_; }
    bool operator!=(const Iterator& o) const { return index_ != o.index_; }

   private:
    const SessionStore* store_;
    size_t index_;
  };
  explicit EntryView(const SessionStore* store) : store_(store) {}
  size_t size() const { return store_->entry_count(); }
  bool empty() const { return size() == 0; }
  const Entry& operator[](size_t i) const { return store_->entry(i); }
  const Entry& back() const { return store_->entry(size() - 1); }
  Iterator begin() const { return {store_, 0}; }
  Iterator end() const { return {store_, size()}; }
  operator std::vector<Entry>() const { return {begin(), end()}; }  // NOLINT: a deep copy

 private:
  const SessionStore* store_;
};

inline SessionStore::EntryView SessionStore::entries() const { return EntryView(this); }

// $XDG_STATE_HOME/moat/sessions (or ~/.local/state/moat/sessions), or $MOAT_SESSIONS_DIR.
std::string default_sessions_dir();

// The directory name of a workspace under the sessions dir: the path with '/' turned into
// '-' (readable), plus 8 hex of its SHA-256 (so "a/b" and "a-b" never share a folder).
std::string workspace_slug(const std::string& workspace);

// --- the tree across files: list, continue, resume, fork (sessions/tree.cc) ---

struct SessionInfo {
  std::string path;
  std::string id;
  std::string workspace;
  std::string created;         // header timestamp
  std::string parent_session;  // "" unless forked
  std::string name;            // newest session_info name, if any
  std::string first_message;   // first user text, for listings (up to 80 bytes)
  size_t entries = 0;
  int64_t modified_ns = 0;  // file mtime
};

// Every readable session file under `sessions_dir` (only `workspace`'s when non-empty),
// newest modification first. Files that fail to load are skipped with a warning.
Result<std::vector<SessionInfo>> list_sessions(const std::string& sessions_dir,
                                               const std::string& workspace = "");

// `moat run --continue`: the path of the most recently modified session of `workspace`;
// ENOENT when it has none.
Result<std::string> find_latest_session(const std::string& sessions_dir,
                                        const std::string& workspace);

// `moat run --continue`: the most recently modified session of `workspace` that opens, opened
// for writing (each file is loaded once); ENOENT when it has none, EWOULDBLOCK when another
// moat is writing to it.
Result<std::unique_ptr<SessionStore>> continue_session(const std::string& sessions_dir,
                                                       const std::string& workspace);

// "ID[@ENTRY]": ID is a session id, a unique prefix of one, or a path to a session file;
// ENTRY is an entry id, a unique prefix of one, or a label. entry_id is "" without @ENTRY.
struct SessionRef {
  std::string path;
  std::string session_id;
  std::string entry_id;
};
// Without @ENTRY only the file's header line is read.
Result<SessionRef> resolve_session_ref(const std::string& sessions_dir, const std::string& ref);

// The workspace a session file's header names (only the header line is read).
Result<std::string> session_workspace(const std::string& path);

// `--resume ID[@ENTRY]`: opens the session for writing, its leaf at ENTRY (else the newest
// entry), so the next append branches there. The file is loaded once.
Result<std::unique_ptr<SessionStore>> resume_session(const std::string& sessions_dir,
                                                     const std::string& ref);

// `--fork ID[@ENTRY]`: a new session file (in `workspace`'s folder, header parentSession =
// the source id) holding a copy of the source's root-to-ENTRY path (ids kept), synced;
// its leaf is ENTRY's copy.
Result<std::unique_ptr<SessionStore>> fork_session(const std::string& sessions_dir,
                                                   const std::string& ref,
                                                   const std::string& workspace);

// The entry a label or entry-id prefix names in `store`; ENOENT if none; when several match,
// the error lists them.
Result<std::string> resolve_entry(const SessionStore& store, const std::string& name);

// Labels in effect: entry id -> newest label given to it ("" label removes it).
std::vector<std::pair<std::string, std::string>> labels_of(const SessionStore& store);

}  // namespace moat::sessions

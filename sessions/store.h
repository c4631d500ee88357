// sessions/store.h: the append-only JSONL session tree (one file per session).
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"

namespace moat::sessions {

// An entry: {"type":..., "id":..., "parentId":..., "timestamp":..., ...type fields}.
using Entry = nlohmann::json;

class SessionStore {
 public:
  virtual ~SessionStore() = default;
  // Creates <dir>/<workspace slug>/<time>_<id>.jsonl with its header line.
  static Result<std::unique_ptr<SessionStore>> create(const std::string& sessions_dir,
                                                      const std::string& workspace,
                                                      const std::string& parent_session = "");
  // Opens an existing file; a torn last line is dropped; a newer format version is refused.
  static Result<std::unique_ptr<SessionStore>> open(const std::string& path);

  virtual const std::string& id() const = 0;
  virtual const std::string& path() const = 0;
  // Appends an entry (type and type fields given; id, parentId = current leaf, timestamp
  // are filled in), moves the leaf to it, and returns its id. One write() per line.
  virtual Result<std::string> append(Entry entry) = 0;
  virtual Result<void> sync() = 0;  // fdatasync: called at the end of every turn
  virtual const std::string& leaf() const = 0;
  virtual Result<void> set_leaf(const std::string& entry_id) = 0;  // branch
  // The entries from the root to the leaf, in order.
  virtual std::vector<Entry> path_to_leaf() const = 0;
  virtual const std::vector<Entry>& entries() const = 0;
};

// $XDG_STATE_HOME/moat/sessions (or ~/.local/state/moat/sessions), or $MOAT_SESSIONS_DIR.
std::string default_sessions_dir();

}  // namespace moat::sessions

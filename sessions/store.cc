// sessions/store.cc: SessionStore over one JSONL file: load with torn-tail recovery, append.
#include "sessions/store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>

#include <absl/container/flat_hash_set.h>

#include "base/check.h"
#include "base/sys.h"
#include "base/timestamps.h"
#include "base/unique_fd.h"
#include "sessions/digest.h"
#include "sessions/ids.h"
#include "sessions/json_util.h"
#include "sessions/jsonl.h"
#include "sessions/simd_lines.h"

namespace moat::sessions {
namespace {

// Session files hold the user's conversation (code, maybe secrets the model saw): owner only.
constexpr mode_t kFileMode = 0600;
constexpr mode_t kDirMode = 0700;

constexpr size_t kNoParent = static_cast<size_t>(-1);

// One entry of the file, in file order. An entry keeps only what an open needs (its id,
// type and parent) and its line's bytes (in the loaded text, or the arena of appended
// lines); it is parsed the first time it is read, and then never moves: a context refers
// to it in place. Appended entries are kept as bytes too: a request body is made from the
// bytes, and the parsed form of every message of a long session held the most memory.
struct Slot {
  std::string id;
  std::string type;
  size_t parent = kNoParent;
  bool has_message = false;
  std::unique_ptr<const ToolCallRole> tool_calls;  // null when the message has none
  std::string_view text;                           // the line, padded (PaddedText or PaddedArena)
  mutable std::unique_ptr<const Entry> parsed;  // null until read
  // entry_message(): into `parsed`, or into `message_alone` when only it was parsed.
  mutable bool message_known = false;
  mutable const Entry* message = nullptr;
  mutable std::unique_ptr<const Entry> message_alone;
};

// The id table: slot numbers, hashed and compared by their slot's id, 4 bytes an entry.
// Keyed by id strings (std::unordered_map, then absl's map of strings) it was megabytes of
// random writes for 100,000 entries, a fifth of an open (issue 19); this fits in a cache.
class IdIndex {
 public:
  explicit IdIndex(const std::vector<Slot>* slots) : set_(0, Hash{slots}, Eq{slots}) {}
  void reserve(size_t n) { set_.reserve(n); }
  // The slot whose id is `id`, or kNoParent.
  size_t find(std::string_view id) const {
    auto it = set_.find(id);
    return it == set_.end() ? kNoParent : *it;
  }
  // Indexes slot `i`, already among the slots; false when its id is taken.
  bool insert(size_t i) { return set_.insert(static_cast<uint32_t>(i)).second; }

 private:
  struct Hash {
    using is_transparent = void;
    const std::vector<Slot>* slots;
    size_t operator()(std::string_view id) const { return std::hash<std::string_view>()(id); }
    size_t operator()(uint32_t i) const { return (*this)(std::string_view((*slots)[i].id)); }
  };
  struct Eq {
    using is_transparent = void;
    const std::vector<Slot>* slots;
    std::string_view id(uint32_t i) const { return (*slots)[i].id; }
    std::string_view id(std::string_view s) const { return s; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return id(a) == id(b);
    }
  };
  absl::flat_hash_set<uint32_t, Hash, Eq> set_;
};

class JsonlSessionStore final : public SessionStore {
 public:
  JsonlSessionStore(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}

  const std::string& id() const override { return id_; }
  const std::string& path() const override { return path_; }
  const Entry& header() const override { return header_; }
  const std::string& leaf() const override { return leaf_; }
  size_t dropped_torn_bytes() const override { return torn_bytes_; }
  size_t entry_count() const override { return slots_.size(); }
  const std::string& entry_type(size_t i) const override { return slots_[i].type; }
  const std::string& entry_id(size_t i) const override { return slots_[i].id; }
  const Entry& entry(size_t i) const override;
  const Entry* entry_message(size_t i) const override;
  bool entry_has_message(size_t i) const override { return slots_[i].has_message; }
  std::string_view entry_text(size_t i) const override { return slots_[i].text; }
  const ToolCallRole* entry_tool_calls(size_t i) const override {
    return slots_[i].tool_calls.get();
  }

  const Entry* find(const std::string& entry_id) const override {
    const size_t i = index_.find(entry_id);
    return i == kNoParent ? nullptr : &entry(i);
  }

  Result<std::string> append(Entry entry) override;
  Result<void> append_copy(const Entry& entry) override;
  Result<void> sync() override;
  Result<void> set_leaf(const std::string& entry_id) override;
  std::vector<Entry> path_to_leaf() const override { return path_to(leaf_); }
  std::vector<Entry> path_to(const std::string& entry_id) const override;
  std::vector<const Entry*> path_refs(const std::string& entry_id) const override;
  std::vector<size_t> path_indices(const std::string& entry_id) const override;

  Result<void> write_header(const std::string& workspace, const std::string& parent);
  Result<void> load(PaddedText text);
  void set_id(std::string id) { id_ = std::move(id); }
  // The torn bytes were never acknowledged (append returns after the whole write), and the
  // next append must start on a fresh line, so they go.
  Result<void> drop_torn_tail() {
    if (torn_bytes_ == 0 || !fd_.valid()) return {};
    if (::ftruncate(fd_.get(), size_) != 0)
      return fail(Error::from_errno("ftruncate torn tail", errno, path_));
    return {};
  }

 private:
  std::string new_entry_id() const;
  Result<void> write_entry(Entry entry);
  Result<void> load_header(const Line& line);
  Result<void> load_entry(const Line& line, size_t line_no);
  void add_slot(Slot slot);

  std::string path_;
  UniqueFd fd_;  // invalid when opened read-only
  std::string id_;
  Entry header_;
  PaddedText text_;  // the file as loaded; loaded entries are parsed from it
  PaddedArena appended_;  // the lines appended since
  std::vector<Slot> slots_;
  IdIndex index_{&slots_};
  std::string leaf_;
  off_t size_ = 0;
  size_t torn_bytes_ = 0;
  // Reading an entry parses it: a const read that writes, so readers on two threads
  // take turns (the parser's buffers are shared too).
  mutable std::mutex parse_mu_;
  mutable LineParser parser_;
};

// A loaded line was validated by the same parser at open, so parsing it again cannot fail
// but for memory, which is fatal anyway.
const Entry& JsonlSessionStore::entry(size_t i) const {
  const Slot& slot = slots_[i];
  std::lock_guard<std::mutex> lock(parse_mu_);
  if (!slot.parsed) {
    auto parsed = parser_.parse(slot.text);
    MOAT_CHECK(parsed.has_value());
    slot.parsed = std::make_unique<const Entry>(std::move(*parsed));
  }
  return *slot.parsed;
}

const Entry* JsonlSessionStore::entry_message(size_t i) const {
  const Slot& slot = slots_[i];
  std::lock_guard<std::mutex> lock(parse_mu_);
  if (slot.message_known) return slot.message;
  if (slot.parsed) {
    auto m = slot.parsed->find("message");
    slot.message = m == slot.parsed->end() ? nullptr : &*m;
  } else {
    auto m = parser_.parse_member(slot.text, "message");
    MOAT_CHECK(m.has_value());
    if (m->has_value()) slot.message_alone = std::make_unique<const Entry>(std::move(**m));
    slot.message = slot.message_alone.get();
  }
  slot.message_known = true;
  return slot.message;
}

// The caller indexes the slot's id next.
void JsonlSessionStore::add_slot(Slot slot) {
  leaf_ = slot.id;
  slots_.push_back(std::move(slot));
}

std::string JsonlSessionStore::new_entry_id() const {
  for (;;) {
    std::string candidate = short_id();
    if (index_.find(candidate) == kNoParent) return candidate;
  }
}

Result<std::string> JsonlSessionStore::append(Entry entry) {
  if (!fd_.valid()) return fail(Error::from_errno("append", EBADF, path_));
  if (!entry.is_object()) return fail(Error::msg("session entry must be a JSON object"));
  const std::string type = str_field(entry, "type");
  if (!is_entry_type(type)) return fail(Error::msg("unknown session entry type " + type));
  const std::string entry_id = new_entry_id();
  entry["id"] = entry_id;
  entry["timestamp"] = now_rfc3339_ms();
  MOAT_TRY(write_entry(std::move(entry)));
  return entry_id;
}

Result<void> JsonlSessionStore::append_copy(const Entry& entry) {
  if (!fd_.valid()) return fail(Error::from_errno("append", EBADF, path_));
  const std::string entry_id = str_field(entry, "id");
  if (entry_id.empty() || !is_entry_type(str_field(entry, "type")))
    return fail(Error::msg("append_copy: not a session entry"));
  if (index_.find(entry_id) != kNoParent)
    return fail(Error::from_errno("append_copy", EEXIST, entry_id));
  return write_entry(entry);
}

// Sets parentId to the leaf, writes the line, then indexes the entry: memory follows disk.
// The line's bytes are kept first (the only step that can fail for memory), so an entry
// on disk is always in memory too.
Result<void> JsonlSessionStore::write_entry(Entry entry) {
  entry["parentId"] = leaf_.empty() ? Entry(nullptr) : Entry(leaf_);
  const std::string line = dump_json(entry) + "\n";
  Slot slot;
  MOAT_ASSIGN_OR_RETURN(slot.text,
                        appended_.add(std::string_view(line).substr(0, line.size() - 1)));
  MOAT_TRY(append_line(fd_.get(), line, size_));
  size_ += static_cast<off_t>(line.size());
  slot.id = str_field(entry, "id");
  slot.type = str_field(entry, "type");
  {
    // The same scan as an open's, so an appended entry is known as a loaded one is.
    std::lock_guard<std::mutex> lock(parse_mu_);
    auto keys = parser_.scan(slot.text);
    MOAT_CHECK(keys.has_value());  // nlohmann wrote it: valid JSON, an object
    slot.has_message = keys->has_message;
    slot.tool_calls = std::move(keys->tool_calls);
  }
  if (!leaf_.empty()) slot.parent = index_.find(leaf_);
  add_slot(std::move(slot));
  MOAT_CHECK(index_.insert(slots_.size() - 1));  // new_entry_id, append_copy checked it
  return {};
}

Result<void> JsonlSessionStore::sync() {
  if (!fd_.valid()) return fail(Error::from_errno("fdatasync", EBADF, path_));
  if (::fdatasync(fd_.get()) != 0) return fail(Error::from_errno("fdatasync", errno, path_));
  return {};
}

Result<void> JsonlSessionStore::set_leaf(const std::string& entry_id) {
  if (!entry_id.empty() && index_.find(entry_id) == kNoParent)
    return fail(Error::from_errno("set_leaf", ENOENT, entry_id));
  leaf_ = entry_id;
  return {};
}

std::vector<size_t> JsonlSessionStore::path_indices(const std::string& entry_id) const {
  std::vector<size_t> path;
  // A parent is always an earlier entry (the loader refuses any other), so this walk ends.
  for (size_t i = index_.find(entry_id); i != kNoParent; i = slots_[i].parent) path.push_back(i);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<const Entry*> JsonlSessionStore::path_refs(const std::string& entry_id) const {
  std::vector<const Entry*> path;
  for (size_t i : path_indices(entry_id)) path.push_back(&entry(i));
  return path;
}

std::vector<Entry> JsonlSessionStore::path_to(const std::string& entry_id) const {
  std::vector<Entry> path;
  for (size_t i : path_indices(entry_id)) path.push_back(entry(i));
  return path;
}

Result<void> JsonlSessionStore::write_header(const std::string& workspace,
                                             const std::string& parent) {
  header_ = {{"type", "session"},
             {"version", kSessionFormatVersion},
             {"id", id_},
             {"timestamp", now_rfc3339_ms()},
             {"workspace", workspace},
             {"parentSession", parent.empty() ? Entry(nullptr) : Entry(parent)}};
  const std::string line = dump_json(header_) + "\n";
  MOAT_TRY(append_line(fd_.get(), line, 0));
  size_ = static_cast<off_t>(line.size());
  return {};
}

// Every line is validated here, so a damaged file is refused at open, naming the line; only
// the keys the tree needs are taken.
Result<void> JsonlSessionStore::load_entry(const Line& line, size_t line_no) {
  auto where = [&] {
    return path_ + ":" + std::to_string(line_no) + " (byte " + std::to_string(line.offset) + ")";
  };
  auto keys = parser_.scan(line.text);
  if (!keys) return fail(Error::msg(where() + ": " + keys.error().message()));
  if (keys->id.empty()) return fail(Error::msg(where() + ": entry without an id"));
  Slot slot;
  slot.id = std::string(keys->id);
  // Usually the parent is the line before (a branch is the exception): no lookup then.
  if (!slots_.empty() && keys->parent_id == slots_.back().id) {
    slot.parent = slots_.size() - 1;
  } else if (!keys->parent_id.empty()) {
    slot.parent = index_.find(keys->parent_id);
    if (slot.parent == kNoParent)
      return fail(Error::msg(where() + ": parent " + std::string(keys->parent_id) +
                             " is not an earlier entry"));
  }
  slot.type = std::string(keys->type);
  slot.has_message = keys->has_message;
  slot.tool_calls = std::move(keys->tool_calls);
  slot.text = line.text;
  add_slot(std::move(slot));
  // After the parent's lookup, so an entry cannot name itself as its parent.
  if (!index_.insert(slots_.size() - 1))
    return fail(Error::msg(where() + ": duplicate id " + slots_.back().id));
  return {};
}

Result<void> JsonlSessionStore::load_header(const Line& line) {
  header_ = parse_json(line.text);
  if (header_.is_discarded() || str_field(header_, "type") != "session")
    return fail(Error::msg(path_ + ": first line is not a session header"));
  const int64_t version = int_field(header_, "version", -1);
  if (version > kSessionFormatVersion)
    return fail(Error::msg(path_ + ": session format version " + std::to_string(version) +
                           " is newer than this moat reads (" +
                           std::to_string(kSessionFormatVersion) +
                           "); upgrade moat (the file was left untouched)"));
  if (version < 1) return fail(Error::msg(path_ + ": session header has no valid version"));
  id_ = str_field(header_, "id");
  if (id_.empty()) return fail(Error::msg(path_ + ": session header has no id"));
  return {};
}

Result<void> JsonlSessionStore::load(PaddedText text) {
  text_ = std::move(text);
  const std::vector<Line> lines = whole_lines(text_.view(), &torn_bytes_);
  if (lines.empty()) return fail(Error::msg(path_ + ": no session header (empty or torn file)"));
  MOAT_TRY(load_header(lines[0]));
  slots_.reserve(lines.size() - 1);
  index_.reserve(lines.size() - 1);
  for (size_t i = 1; i < lines.size(); ++i) MOAT_TRY(load_entry(lines[i], i + 1));
  size_ = static_cast<off_t>(text_.size - torn_bytes_);
  return {};
}

Result<std::unique_ptr<SessionStore>> open_impl(const std::string& path, bool writable) {
  // O_APPEND: every write lands at the end, also after drop_torn_tail() shrinks the file.
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(path, writable ? O_RDWR | O_APPEND : O_RDONLY));
  // Two moat processes appending to one session would interleave two branches' leaves.
  if (writable && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    return fail(Error::from_errno("flock (session in use by another moat?)", errno, path));
  auto text = read_padded(fd.get());
  if (!text) return fail(text.error().with_context(path));
  auto store = std::make_unique<JsonlSessionStore>(path, writable ? std::move(fd) : UniqueFd());
  MOAT_TRY(store->load(std::move(*text)));
  MOAT_TRY(store->drop_torn_tail());
  return std::unique_ptr<SessionStore>(std::move(store));
}

}  // namespace

bool is_entry_type(const std::string& type) {
  static const char* const kTypes[] = {"message",     "model_change",   "tools_change",
                                       "compaction",  "branch_summary", "label",
                                       "session_info"};
  for (const char* t : kTypes)
    if (type == t) return true;
  return false;
}

std::string workspace_slug(const std::string& workspace) {
  std::string slug;
  for (char c : workspace) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '.' || c == '_';
    slug += plain ? c : '-';
  }
  while (!slug.empty() && slug.front() == '-') slug.erase(slug.begin());
  if (slug.size() > 80) slug.erase(0, slug.size() - 80);  // keep the informative tail
  if (slug.empty() || slug[0] == '.') slug.insert(slug.begin(), 'w');
  return slug + "-" + sha256_hex(workspace).substr(0, 8);
}

Result<std::unique_ptr<SessionStore>> SessionStore::create(const std::string& sessions_dir,
                                                           const std::string& workspace,
                                                           const std::string& parent_session) {
  const std::string dir = sessions_dir + "/" + workspace_slug(workspace);
  MOAT_TRY(make_dirs(dir, kDirMode));
  const std::string session_id = uuid_v7();
  std::string stamp = now_rfc3339_ms();
  std::replace(stamp.begin(), stamp.end(), ':', '-');  // ':' upsets some tools and filesystems
  const std::string path = dir + "/" + stamp + "_" + session_id + ".jsonl";
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, open_for_append(path, /*create=*/true, kFileMode));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    return fail(Error::from_errno("flock", errno, path));
  auto store = std::make_unique<JsonlSessionStore>(path, std::move(fd));
  store->set_id(session_id);
  MOAT_TRY(store->write_header(workspace, parent_session));
  MOAT_TRY(store->sync());
  MOAT_TRY(fsync_dir(dir));  // the new name must survive a crash along with its contents
  return std::unique_ptr<SessionStore>(std::move(store));
}

Result<std::unique_ptr<SessionStore>> SessionStore::create_in_memory(const std::string& workspace) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::memfd("moat-session"));
  auto store = std::make_unique<JsonlSessionStore>("", std::move(fd));
  store->set_id(uuid_v7());
  MOAT_TRY(store->write_header(workspace, ""));
  return std::unique_ptr<SessionStore>(std::move(store));
}

Result<std::unique_ptr<SessionStore>> SessionStore::open(const std::string& path) {
  return open_impl(path, /*writable=*/true);
}

Result<std::unique_ptr<SessionStore>> SessionStore::open_read_only(const std::string& path) {
  return open_impl(path, /*writable=*/false);
}

}  // namespace moat::sessions

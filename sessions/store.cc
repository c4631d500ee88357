// sessions/store.cc: SessionStore over one JSONL file: load with torn-tail recovery, append.
#include "sessions/store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <unordered_map>

#include "base/sys.h"
#include "base/timestamps.h"
#include "base/unique_fd.h"
#include "sessions/digest.h"
#include "sessions/ids.h"
#include "sessions/json_util.h"
#include "sessions/jsonl.h"

namespace moat::sessions {
namespace {

// Session files hold the user's conversation (code, maybe secrets the model saw): owner only.
constexpr mode_t kFileMode = 0600;
constexpr mode_t kDirMode = 0700;

class JsonlSessionStore final : public SessionStore {
 public:
  JsonlSessionStore(std::string path, UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}

  const std::string& id() const override { return id_; }
  const std::string& path() const override { return path_; }
  const Entry& header() const override { return header_; }
  const std::string& leaf() const override { return leaf_; }
  const std::vector<Entry>& entries() const override { return entries_; }
  size_t dropped_torn_bytes() const override { return torn_bytes_; }

  const Entry* find(const std::string& entry_id) const override {
    auto it = index_.find(entry_id);
    return it == index_.end() ? nullptr : &entries_[it->second];
  }

  Result<std::string> append(Entry entry) override;
  Result<void> append_copy(const Entry& entry) override;
  Result<void> sync() override;
  Result<void> set_leaf(const std::string& entry_id) override;
  std::vector<Entry> path_to_leaf() const override { return path_to(leaf_); }
  std::vector<Entry> path_to(const std::string& entry_id) const override;
  std::vector<const Entry*> path_refs(const std::string& entry_id) const override;

  Result<void> write_header(const std::string& workspace, const std::string& parent);
  Result<void> load(std::string_view data);
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
  Result<void> load_entry(const Line& line, size_t line_no);

  std::string path_;
  UniqueFd fd_;  // invalid when opened read-only
  std::string id_;
  Entry header_;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> index_;
  std::string leaf_;
  off_t size_ = 0;
  size_t torn_bytes_ = 0;
};

std::string JsonlSessionStore::new_entry_id() const {
  for (;;) {
    std::string candidate = short_id();
    if (index_.find(candidate) == index_.end()) return candidate;
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
  if (index_.count(entry_id) != 0) return fail(Error::from_errno("append_copy", EEXIST, entry_id));
  return write_entry(entry);
}

// Sets parentId to the leaf, writes the line, then indexes the entry: memory follows disk.
Result<void> JsonlSessionStore::write_entry(Entry entry) {
  const std::string entry_id = str_field(entry, "id");
  entry["parentId"] = leaf_.empty() ? Entry(nullptr) : Entry(leaf_);
  const std::string line = dump_json(entry) + "\n";
  MOAT_TRY(append_line(fd_.get(), line, size_));
  size_ += static_cast<off_t>(line.size());
  index_.emplace(entry_id, entries_.size());
  entries_.push_back(std::move(entry));
  leaf_ = entry_id;
  return {};
}

Result<void> JsonlSessionStore::sync() {
  if (!fd_.valid()) return fail(Error::from_errno("fdatasync", EBADF, path_));
  if (::fdatasync(fd_.get()) != 0) return fail(Error::from_errno("fdatasync", errno, path_));
  return {};
}

Result<void> JsonlSessionStore::set_leaf(const std::string& entry_id) {
  if (!entry_id.empty() && index_.find(entry_id) == index_.end())
    return fail(Error::from_errno("set_leaf", ENOENT, entry_id));
  leaf_ = entry_id;
  return {};
}

std::vector<const Entry*> JsonlSessionStore::path_refs(const std::string& entry_id) const {
  std::vector<const Entry*> path;
  auto it = index_.find(entry_id);
  // The loader only accepts parents that appear earlier in the file, so this walk ends;
  // the size bound is a second guard.
  while (it != index_.end() && path.size() <= entries_.size()) {
    const Entry& e = entries_[it->second];
    path.push_back(&e);
    auto parent = e.find("parentId");
    if (parent == e.end() || !parent->is_string()) break;
    it = index_.find(parent->get_ref<const std::string&>());
  }
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<Entry> JsonlSessionStore::path_to(const std::string& entry_id) const {
  std::vector<Entry> path;
  for (const Entry* e : path_refs(entry_id)) path.push_back(*e);
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

Result<void> JsonlSessionStore::load_entry(const Line& line, size_t line_no) {
  auto where = [&] {
    return path_ + ":" + std::to_string(line_no) + " (byte " + std::to_string(line.offset) + ")";
  };
  Entry e = parse_json(line.text);
  if (e.is_discarded() || !e.is_object()) return fail(Error::msg(where() + ": not a JSON object"));
  const std::string entry_id = str_field(e, "id");
  if (entry_id.empty()) return fail(Error::msg(where() + ": entry without an id"));
  if (index_.count(entry_id) != 0) return fail(Error::msg(where() + ": duplicate id " + entry_id));
  const std::string parent = str_field(e, "parentId");
  if (!parent.empty() && index_.count(parent) == 0)
    return fail(Error::msg(where() + ": parent " + parent + " is not an earlier entry"));
  index_.emplace(entry_id, entries_.size());
  entries_.push_back(std::move(e));
  leaf_ = entry_id;
  return {};
}

Result<void> JsonlSessionStore::load(std::string_view data) {
  const std::vector<Line> lines = whole_lines(data, &torn_bytes_);
  if (lines.empty()) return fail(Error::msg(path_ + ": no session header (empty or torn file)"));
  header_ = parse_json(lines[0].text);
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
  entries_.reserve(lines.size() - 1);
  index_.reserve(lines.size() - 1);
  for (size_t i = 1; i < lines.size(); ++i) MOAT_TRY(load_entry(lines[i], i + 1));
  size_ = static_cast<off_t>(data.size() - torn_bytes_);
  return {};
}

Result<std::unique_ptr<SessionStore>> open_impl(const std::string& path, bool writable) {
  // O_APPEND: every write lands at the end, also after drop_torn_tail() shrinks the file.
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(path, writable ? O_RDWR | O_APPEND : O_RDONLY));
  // Two moat processes appending to one session would interleave two branches' leaves.
  if (writable && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    return fail(Error::from_errno("flock (session in use by another moat?)", errno, path));
  MOAT_ASSIGN_OR_RETURN(std::string data, sys::read_to_end(fd.get()));
  auto store = std::make_unique<JsonlSessionStore>(path, writable ? std::move(fd) : UniqueFd());
  MOAT_TRY(store->load(data));
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

// sandbox/workspace_index.cc: the stat walk (openat/fstatat beneath the workspace fd, O_NOFOLLOW
// at every step), the hashing of what changed, and the pairing of deletes and creates into
// renames.
#include "sandbox/workspace_index.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <map>

#include "base/check.h"
#include "base/hex.h"
#include "base/sys.h"

namespace moat::sandbox {
namespace {

using Entry = WorkspaceIndex::Entry;

// A file whose ctime is this close to the walk's start may be written again within the same
// timestamp tick (the kernel stamps files from a coarse clock, a jiffy of up to 10 ms) and
// keep every stat field: it is re-hashed on the next diff instead of trusted (git's "racily
// clean" entries).
constexpr std::int64_t kRacySlackNs = 100 * 1000 * 1000;

std::int64_t ns_of(const timespec& t) {
  return static_cast<std::int64_t>(t.tv_sec) * (1000 * 1000 * 1000) + t.tv_nsec;
}

bool same_stat(const Entry& e, const struct stat& st) {
  return e.dev == st.st_dev && e.ino == st.st_ino && e.version.size == std::uint64_t(st.st_size) &&
         e.version.mode == st.st_mode && e.mtime_ns == ns_of(st.st_mtim) &&
         e.ctime_ns == ns_of(st.st_ctim);
}

Entry entry_of(const struct stat& st, std::int64_t walk_start_ns) {
  Entry e;
  e.dev = st.st_dev;
  e.ino = st.st_ino;
  e.mtime_ns = ns_of(st.st_mtim);
  e.ctime_ns = ns_of(st.st_ctim);
  e.racy = e.ctime_ns + kRacySlackNs >= walk_start_ns || e.mtime_ns + kRacySlackNs >= walk_start_ns;
  e.version.size = static_cast<std::uint64_t>(st.st_size);
  e.version.mode = st.st_mode;
  return e;
}

struct DigestCtx {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  DigestCtx() { MOAT_CHECK(ctx != nullptr && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1); }
  ~DigestCtx() { EVP_MD_CTX_free(ctx); }
  void update(const void* p, std::size_t n) { MOAT_CHECK(EVP_DigestUpdate(ctx, p, n) == 1); }
  std::string hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    MOAT_CHECK(EVP_DigestFinal_ex(ctx, md, &len) == 1);
    return hex_encode(md, len);
  }
};

// Hashes the regular file `name` in `dirfd`; `e` is refreshed from the opened file's own fstat,
// so the hash and the stat describe the same inode. O_NONBLOCK: a FIFO swapped in after the
// walk's fstatat must not block moatd (and is refused as not regular).
void hash_regular(int dirfd, const char* name, std::uint64_t cap, std::int64_t walk_start_ns,
                  Entry* e) {
  if (e->version.size > cap) {
    e->version.unhashed = "larger than the hash cap";
    return;
  }
  UniqueFd fd(::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  struct stat st {};
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      std::uint64_t(st.st_size) > cap) {
    e->version.unhashed = "unreadable";
    return;
  }
  *e = entry_of(st, walk_start_ns);
  DigestCtx digest;
  char buf[1 << 16];
  for (std::uint64_t total = 0;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (total += std::uint64_t(n)) > cap) {
      e->version.unhashed = "unreadable";
      return;
    }
    if (n == 0) break;
    digest.update(buf, std::size_t(n));
  }
  e->version.sha256 = digest.hex();
}

// A symlink's content is its target: hashed as bytes, never followed.
void hash_symlink(int dirfd, const char* name, Entry* e) {
  std::string target(e->version.size + 1, '\0');
  const ssize_t n = ::readlinkat(dirfd, name, target.data(), target.size());
  if (n < 0 || std::size_t(n) > e->version.size) {
    e->version.unhashed = "unreadable";
    return;
  }
  target.resize(std::size_t(n));
  DigestCtx digest;
  digest.update(target.data(), target.size());
  e->version.sha256 = digest.hex();
}

// A change as the walk finds it, with the inode that pairs a delete and a create into a rename.
struct Found {
  FileChange change;
  dev_t dev = 0;
  ino_t ino = 0;
};

bool same_content(const FileVersion& a, const FileVersion& b) {
  if (a.sha256.empty() || b.sha256.empty()) return false;  // unhashed: only the stat can tell
  return a.sha256 == b.sha256 && a.size == b.size && a.mode == b.mode;
}

bool changed(const Entry& before, const Entry& after) {
  if (before.version.sha256.empty() || after.version.sha256.empty())
    return before.dev != after.dev || before.ino != after.ino ||
           before.version.size != after.version.size || before.version.mode != after.version.mode ||
           before.mtime_ns != after.mtime_ns || before.ctime_ns != after.ctime_ns;
  return !same_content(before.version, after.version);
}

// One walk, updating the index in place: an entry whose stat is unchanged is only marked seen
// (no copy, no hash), so a diff of an unchanged tree costs the stat walk and one lookup per
// file. What changed is appended to `found`.
class Walker {
 public:
  Walker(std::unordered_map<std::string, Entry>& entries, const IndexLimits& limits,
         std::uint64_t generation, std::vector<Found>* found)
      : entries_(entries), limits_(limits), generation_(generation), found_(found) {
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    start_ns_ = ns_of(now);
  }

  // Every entry below the directory `fd` (owned here), named `rel` ("" for the top). One that
  // cannot be read is left out, like an unreadable directory in find.
  Result<void> directory(UniqueFd fd, const std::string& rel) {
    Result<void> out;
    (void)sys::for_each_dirent(fd.get(), [&](const char* name, unsigned char) {
      out = entry(fd.get(), name, rel);
      return bool(out);
    });
    return out;
  }

 private:
  Result<void> entry(int dfd, const char* name, const std::string& rel) {
    if (!std::strcmp(name, ".git")) return {};
    std::string child = rel.empty() ? std::string(name) : rel + "/" + name;
    if (is_skipped(child)) return {};
    struct stat st {};
    if (::fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return {};  // gone meanwhile
    if (S_ISDIR(st.st_mode)) {
      UniqueFd sub(::openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      return sub.valid() ? directory(std::move(sub), child) : Result<void>();
    }
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) return {};  // FIFOs, sockets, devices
    if (++files_ > limits_.max_entries)
      return fail(Error{
          E2BIG, "workspace index: more than " + std::to_string(limits_.max_entries) + " files"});
    file(dfd, name, std::move(child), st);
    return {};
  }

  bool is_skipped(const std::string& rel) const {
    for (const auto& s : limits_.skip)
      if (rel == s) return true;
    return false;
  }

  void file(int dfd, const char* name, std::string rel, const struct stat& st) {
    auto old = entries_.find(rel);
    if (old != entries_.end() && !old->second.racy && same_stat(old->second, st)) {
      old->second.seen = generation_;
      return;
    }
    Entry e = entry_of(st, start_ns_);
    if (S_ISLNK(st.st_mode)) hash_symlink(dfd, name, &e);
    else hash_regular(dfd, name, limits_.max_hash_bytes, start_ns_, &e);
    e.seen = generation_;
    if (old == entries_.end()) {
      found_->push_back({{FileOp::kCreate, rel, "", std::nullopt, e.version}, e.dev, e.ino});
      entries_.emplace(std::move(rel), std::move(e));
      return;
    }
    if (changed(old->second, e))
      found_->push_back({{FileOp::kModify, rel, "", old->second.version, e.version}, e.dev, e.ino});
    old->second = std::move(e);
  }

  std::unordered_map<std::string, Entry>& entries_;
  const IndexLimits& limits_;
  const std::uint64_t generation_;
  std::vector<Found>* found_;
  std::size_t files_ = 0;
  std::int64_t start_ns_ = 0;
};

// Pairs each create with a delete of the same content: the same inode first (mv), else the same
// non-empty SHA-256 (a copy and a delete, or a move across filesystems). Content is required
// even for the same inode, since a freed inode number is reused at once (rm a; echo > b).
void pair_renames(std::vector<Found>* found) {
  std::map<std::pair<dev_t, ino_t>, std::size_t> deleted_inode;
  std::multimap<std::string, std::size_t> deleted_sha;
  for (std::size_t i = 0; i < found->size(); ++i) {
    const Found& f = (*found)[i];
    if (f.change.op != FileOp::kDelete) continue;
    deleted_inode[{f.dev, f.ino}] = i;
    const FileVersion& v = *f.change.before;
    if (v.size > 0 && !v.sha256.empty()) deleted_sha.emplace(v.sha256, i);
  }
  std::vector<bool> consumed(found->size(), false);
  auto matches = [&](std::size_t i, const FileVersion& v) {
    return !consumed[i] && same_content(*(*found)[i].change.before, v);
  };
  for (Found& f : *found) {
    if (f.change.op != FileOp::kCreate) continue;
    const FileVersion& v = *f.change.after;
    std::optional<std::size_t> match;
    if (auto it = deleted_inode.find({f.dev, f.ino});
        it != deleted_inode.end() && matches(it->second, v))
      match = it->second;
    for (auto [it, end] = deleted_sha.equal_range(v.sha256); !match && it != end; ++it)
      if (matches(it->second, v)) match = it->second;
    if (!match) continue;
    consumed[*match] = true;
    f.change.op = FileOp::kRename;
    f.change.from = (*found)[*match].change.path;
    f.change.before = (*found)[*match].change.before;
  }
  std::size_t i = 0;
  std::erase_if(*found, [&](const Found&) { return consumed[i++]; });
}

// The entries of ended indexes, most recent first, for the next build of the same workspace. A
// build takes its workspace's entries out (two sessions at once never share a map); an ended
// index gives its own back, replacing what is kept for its workspace.
template <typename Key, typename Map>
class KeptIndexes {
 public:
  struct Kept {
    Key key;
    Map entries;
    std::uint64_t generation = 0;
  };
  std::optional<Kept> take(const Key& key) {
    std::lock_guard lock(mu_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->key != key) continue;
      Kept k = std::move(*it);
      count_ -= k.entries.size();
      kept_.erase(it);
      return k;
    }
    return std::nullopt;
  }
  void keep(Kept k, std::size_t cap) {
    if (k.entries.size() > cap) return;
    std::optional<Kept> old = take(k.key);  // freed outside the lock, as are the dropped ones
    std::list<Kept> dropped;
    std::lock_guard lock(mu_);
    count_ += k.entries.size();
    kept_.push_front(std::move(k));
    while (count_ > cap) {
      count_ -= kept_.back().entries.size();
      dropped.splice(dropped.end(), kept_, std::prev(kept_.end()));
    }
  }

 private:
  std::mutex mu_;
  std::list<Kept> kept_;
  std::size_t count_ = 0;
};

using Kept = KeptIndexes<std::tuple<dev_t, ino_t, std::int64_t, std::uint64_t>,
                         std::unordered_map<std::string, Entry>>;

// Never destroyed: a session may end while the process exits.
Kept& kept_indexes() {
  static Kept* kept = new Kept;
  return *kept;
}

}  // namespace

const char* file_op_name(FileOp op) {
  switch (op) {
    case FileOp::kCreate: return "create";
    case FileOp::kModify: return "modify";
    case FileOp::kDelete: return "delete";
    case FileOp::kRename: return "rename";
  }
  return "?";
}

Result<std::unique_ptr<WorkspaceIndex>> WorkspaceIndex::build(int workspace_fd,
                                                              IndexLimits limits) {
  UniqueFd fd(::fcntl(workspace_fd, F_DUPFD_CLOEXEC, 0));
  if (!fd.valid()) return fail(Error::from_errno("fcntl(F_DUPFD_CLOEXEC)", errno, "workspace"));
  std::unique_ptr<WorkspaceIndex> index(new WorkspaceIndex(std::move(fd), std::move(limits)));
  struct statx sx {};
  if (::statx(index->fd_.get(), "", AT_EMPTY_PATH, STATX_INO | STATX_BTIME, &sx) == 0)
    index->key_ = Key{makedev(sx.stx_dev_major, sx.stx_dev_minor), sx.stx_ino,
                      (sx.stx_mask & STATX_BTIME)
                          ? sx.stx_btime.tv_sec * 1000000000LL + sx.stx_btime.tv_nsec
                          : 0,
                      index->limits_.max_hash_bytes};
  if (auto k = index->key_ ? kept_indexes().take(*index->key_) : std::nullopt) {
    index->entries_ = std::move(k->entries);  // seen by an older walk: a walk updates them
    index->generation_ = k->generation;
  }
  MOAT_TRY(index->walk());
  return index;
}

WorkspaceIndex::~WorkspaceIndex() {
  if (!key_ || broken_) return;
  kept_indexes().keep({*key_, std::move(entries_), generation_}, kKeptEntries);
}

Result<std::vector<FileChange>> WorkspaceIndex::walk() {
  // A walk that failed half-way left the index half-updated: it stays failed.
  if (broken_) return fail(*broken_);
  // The fd may be O_PATH (sandbox/workspace.h): a directory to read is opened beneath it.
  UniqueFd top(::openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top.valid()) return fail(Error::from_errno("openat", errno, "workspace"));
  std::vector<Found> found;
  Walker walker(entries_, limits_, ++generation_, &found);
  if (auto r = walker.directory(std::move(top), ""); !r) {
    broken_ = r.error();
    entries_.clear();
    return fail(r.error());
  }
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.seen == generation_) {
      ++it;
      continue;
    }
    const Entry& e = it->second;
    found.push_back({{FileOp::kDelete, it->first, "", e.version, std::nullopt}, e.dev, e.ino});
    it = entries_.erase(it);
  }
  pair_renames(&found);
  std::vector<FileChange> out;
  out.reserve(found.size());
  for (Found& f : found) out.push_back(std::move(f.change));
  std::sort(out.begin(), out.end(),
            [](const FileChange& a, const FileChange& b) { return a.path < b.path; });
  return out;
}

Result<FileChanges> WorkspaceIndex::diff() {
  std::lock_guard<std::mutex> lock(mu_);
  FileChanges out;
  MOAT_ASSIGN_OR_RETURN(out.changes, walk());
  if (out.changes.size() > limits_.max_changes) {
    out.changes.resize(limits_.max_changes);
    out.truncated = true;
  }
  return out;
}

std::size_t WorkspaceIndex::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace moat::sandbox

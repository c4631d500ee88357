// sessions/tree.cc: the session tree across files: list, continue, resume, fork, labels.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <optional>

#include "base/log.h"
#include "sessions/ids.h"
#include "sessions/json_util.h"
#include "sessions/jsonl.h"
#include "sessions/store.h"

namespace moat::sessions {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> list_dir(const std::string& dir, bool want_dirs) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    const std::string full = dir + "/" + name;
    if (::stat(full.c_str(), &st) != 0) continue;
    if (want_dirs ? S_ISDIR(st.st_mode) : (S_ISREG(st.st_mode) && ends_with(name, ".jsonl")))
      out.push_back(full);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// The text of a user message entry, as a listing shows it; nullopt for any other entry.
std::optional<std::string> user_text(const Entry& e) {
  if (str_field(e, "type") != "message" || !e.contains("message")) return std::nullopt;
  const Entry& m = e["message"];
  if (str_field(m, "role") != "user" || !m.contains("content")) return std::nullopt;
  const Entry& content = m["content"];
  std::string text = content.is_string() ? content.get<std::string>() : "";
  if (content.is_array())
    for (const Entry& block : content) text += str_field(block, "text");
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text.substr(0, 80);
}

struct SessionFile {
  std::string path;
  std::string id;  // from the name <time>_<id>.jsonl
  int64_t modified_ns = 0;
};

// Session files under `sessions_dir` (only `workspace`'s when non-empty), newest mtime first.
std::vector<SessionFile> session_files(const std::string& sessions_dir,
                                       const std::string& workspace) {
  std::vector<std::string> dirs;
  if (workspace.empty()) dirs = list_dir(sessions_dir, /*want_dirs=*/true);
  else dirs.push_back(sessions_dir + "/" + workspace_slug(workspace));
  std::vector<SessionFile> out;
  for (const std::string& dir : dirs) {
    for (const std::string& file : list_dir(dir, /*want_dirs=*/false)) {
      struct stat st {};
      if (::stat(file.c_str(), &st) != 0) continue;
      const size_t us = file.rfind('_');
      const size_t slash = file.rfind('/');
      const std::string id =
          us == std::string::npos || us < slash ? "" : file.substr(us + 1, file.size() - us - 7);
      out.push_back({file, id, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const SessionFile& a, const SessionFile& b) {
    return a.modified_ns != b.modified_ns ? a.modified_ns > b.modified_ns : a.path > b.path;
  });
  return out;
}

// What a listing shows, parsing only the lines it shows: the header, the first user message
// and the session_info entries (picked out by their bytes before any parse); the entries are
// counted as whole lines. A damaged entry elsewhere is reported when the session is opened.
Result<SessionInfo> listing_of(const SessionFile& f) {
  MOAT_ASSIGN_OR_RETURN(std::string data, read_file(f.path));
  const std::vector<Line> lines = whole_lines(data);
  const Entry header = lines.empty() ? Entry() : parse_json(lines[0].text);
  if (header.is_discarded() || str_field(header, "type") != "session")
    return fail(Error::msg(f.path + ": first line is not a session header"));
  const int64_t version = int_field(header, "version", -1);
  if (version < 1 || version > kSessionFormatVersion)
    return fail(Error::msg(f.path + ": session format version " + std::to_string(version) +
                           " is not one this moat reads (1 to " +
                           std::to_string(kSessionFormatVersion) + ")"));
  SessionInfo info;
  info.path = f.path;
  info.id = str_field(header, "id");
  info.workspace = str_field(header, "workspace");
  info.created = str_field(header, "timestamp");
  info.parent_session = str_field(header, "parentSession");
  info.entries = lines.size() - 1;
  info.modified_ns = f.modified_ns;
  bool first_found = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string_view t = lines[i].text;
    const bool named = t.find("\"session_info\"") != std::string_view::npos;
    if (!named && (first_found || t.find("\"user\"") == std::string_view::npos)) continue;
    const Entry e = parse_json(t);
    if (e.is_discarded()) continue;
    if (str_field(e, "type") == "session_info") {
      info.name = str_field(e, "name");
    } else if (auto text = first_found ? std::nullopt : user_text(e)) {
      info.first_message = std::move(*text);
      first_found = true;
    }
  }
  return info;
}

// "ID is ambiguous: it matches A, B and 3 more; give more of the id": a person picks one.
std::string ambiguity(const std::string& want, const std::vector<std::string>& matches) {
  constexpr size_t kShown = 10;
  std::string list;
  for (size_t i = 0; i < matches.size() && i < kShown; ++i)
    list += (i == 0 ? "" : ", ") + matches[i];
  if (matches.size() > kShown) list += " and " + std::to_string(matches.size() - kShown) + " more";
  return want + " is ambiguous: it matches " + list + "; give more of the id";
}

// Whether `want` names `id`: a prefix of it, or with `tails`, its short form (a tail of
// kShortSessionIdLength characters or more: sessions/ids.h).
bool names_id(const std::string& want, const std::string& id, bool tails) {
  if (id.compare(0, want.size(), want) == 0) return true;
  return tails && want.size() >= kShortSessionIdLength && ends_with(id, want);
}

// Unique match of `want` among `candidates` (a prefix, or with `tails` also a short form);
// ENOENT, or an error listing the candidates when several match.
template <typename Get>
Result<size_t> unique_prefix(const std::string& want, size_t count, Get get, const char* what,
                             bool tails = false) {
  size_t found = count;
  std::vector<std::string> matches;
  for (size_t i = 0; i < count; ++i) {
    const std::string& c = get(i);
    if (c == want) return i;  // an exact match beats prefixes of longer ids
    if (!names_id(want, c, tails)) continue;
    if (std::find(matches.begin(), matches.end(), c) == matches.end()) matches.push_back(c);
    found = i;
  }
  if (matches.size() > 1) return fail(std::string(what) + " " + ambiguity(want, matches));
  if (found == count) return fail(Error::from_errno(what, ENOENT, want));
  return found;
}

// "ID[@ENTRY]" split, and the file ID names.
struct NamedSession {
  std::string id_part;
  std::string entry;  // "" without @ENTRY
  std::string path;
};

Result<NamedSession> find_named_session(const std::string& sessions_dir, const std::string& ref) {
  const size_t at = ref.find('@');
  NamedSession out;
  out.id_part = ref.substr(0, at);
  out.entry = at == std::string::npos ? "" : ref.substr(at + 1);
  if (out.id_part.empty()) return fail(Error::from_errno("session reference", EINVAL, ref));
  struct stat st {};
  if (out.id_part.find('/') != std::string::npos && ::stat(out.id_part.c_str(), &st) == 0) {
    out.path = out.id_part;
    return out;
  }
  // File names end in _<id>.jsonl, so the match needs no file to be loaded.
  const std::vector<SessionFile> files = session_files(sessions_dir, "");
  MOAT_ASSIGN_OR_RETURN(size_t i,
                        unique_prefix(
                            out.id_part, files.size(),
                            [&](size_t k) -> const std::string& { return files[k].id; }, "session",
                            /*tails=*/true));
  out.path = files[i].path;
  return out;
}

// A file found by its name must hold the session its name says.
Result<void> check_named_id(const NamedSession& named, const std::string& header_id) {
  if (named.id_part.find('/') == std::string::npos &&
      !names_id(named.id_part, header_id, /*tails=*/true))
    return fail(Error::msg(named.path + ": its header names session " + header_id +
                           ", not the one its file name says"));
  return {};
}

// The header line alone (the first line of the file), checked to be a session header.
Result<Entry> read_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  if (!in || !std::getline(in, line) || in.eof())
    return fail(Error::msg(path + ": no session header (missing, empty or torn file)"));
  Entry header = parse_json(line);
  if (header.is_discarded() || str_field(header, "type") != "session" ||
      str_field(header, "id").empty())
    return fail(Error::msg(path + ": first line is not a session header"));
  return header;
}

Result<std::string> header_session_id(const std::string& path) {
  MOAT_ASSIGN_OR_RETURN(Entry header, read_header(path));
  return str_field(header, "id");
}

}  // namespace

Result<std::vector<SessionInfo>> list_sessions(const std::string& sessions_dir,
                                               const std::string& workspace) {
  std::vector<SessionInfo> out;
  for (const SessionFile& f : session_files(sessions_dir, workspace)) {
    auto info = listing_of(f);
    if (!info) {
      MOAT_LOG_WARN("skipping %s: %s", moat::quoted(f.path).c_str(),
                    info.error().message().c_str());
      continue;
    }
    out.push_back(std::move(*info));
  }
  return out;
}

Result<std::string> find_latest_session(const std::string& sessions_dir,
                                        const std::string& workspace) {
  // Newest first, and only as many loads as it takes to find one that opens.
  for (const SessionFile& f : session_files(sessions_dir, workspace)) {
    if (SessionStore::open_read_only(f.path)) return f.path;
    MOAT_LOG_WARN("skipping unreadable session %s", moat::quoted(f.path).c_str());
  }
  return fail(Error::from_errno("no session for workspace", ENOENT, workspace));
}

Result<std::unique_ptr<SessionStore>> continue_session(const std::string& sessions_dir,
                                                       const std::string& workspace) {
  // As find_latest_session, but each file is loaded once, for writing: a resume that loaded
  // it to check it and again to write to it paid for the file twice.
  for (const SessionFile& f : session_files(sessions_dir, workspace)) {
    auto store = SessionStore::open(f.path);
    if (store) return store;
    // Another moat writing to it is not a damaged file: say so rather than skip it.
    if (store.error().code == EWOULDBLOCK) return fail(store.error());
    MOAT_LOG_WARN("skipping unreadable session %s: %s", moat::quoted(f.path).c_str(),
                  store.error().message().c_str());
  }
  return fail(Error::from_errno("no session for workspace", ENOENT, workspace));
}

Result<std::string> resolve_entry(const SessionStore& store, const std::string& name) {
  // A label names its newest target; labels win over id prefixes, being chosen by a person.
  for (const auto& [target, label] : labels_of(store))
    if (label == name) return target;
  // Ids are known from the scan at open: no entry is parsed to match one.
  MOAT_ASSIGN_OR_RETURN(
      size_t i, unique_prefix(
                    name, store.entry_count(),
                    [&](size_t k) -> const std::string& { return store.entry_id(k); }, "entry"));
  return store.entry_id(i);
}

std::vector<std::pair<std::string, std::string>> labels_of(const SessionStore& store) {
  std::vector<std::pair<std::string, std::string>> labels;
  // Only label entries are parsed; their type is known from the scan at open.
  for (size_t i = 0; i < store.entry_count(); ++i) {
    if (store.entry_type(i) != "label") continue;
    const Entry& e = store.entry(i);
    const std::string target = str_field(e, "targetId");
    const std::string label = str_field(e, "label");
    auto it = std::find_if(labels.begin(), labels.end(),
                           [&](const auto& p) { return p.first == target; });
    if (it != labels.end()) labels.erase(it);
    if (!label.empty()) labels.emplace_back(target, label);
  }
  return labels;
}

Result<SessionRef> resolve_session_ref(const std::string& sessions_dir, const std::string& ref) {
  MOAT_ASSIGN_OR_RETURN(NamedSession named, find_named_session(sessions_dir, ref));
  SessionRef out;
  out.path = named.path;
  if (named.entry.empty()) {
    // Without @ENTRY only the header is needed: the file is not loaded.
    MOAT_ASSIGN_OR_RETURN(out.session_id, header_session_id(named.path));
    MOAT_TRY(check_named_id(named, out.session_id));
    return out;
  }
  MOAT_ASSIGN_OR_RETURN(auto store, SessionStore::open_read_only(named.path));
  out.session_id = store->id();
  MOAT_TRY(check_named_id(named, out.session_id));
  MOAT_ASSIGN_OR_RETURN(out.entry_id, resolve_entry(*store, named.entry));
  return out;
}

Result<std::string> session_workspace(const std::string& path) {
  MOAT_ASSIGN_OR_RETURN(Entry header, read_header(path));
  return str_field(header, "workspace");
}

Result<std::unique_ptr<SessionStore>> resume_session(const std::string& sessions_dir,
                                                     const std::string& ref) {
  // The file is loaded once, for writing, and ENTRY resolved in that load.
  MOAT_ASSIGN_OR_RETURN(NamedSession named, find_named_session(sessions_dir, ref));
  MOAT_ASSIGN_OR_RETURN(auto store, SessionStore::open(named.path));
  MOAT_TRY(check_named_id(named, store->id()));
  if (!named.entry.empty()) {
    MOAT_ASSIGN_OR_RETURN(const std::string entry_id, resolve_entry(*store, named.entry));
    MOAT_TRY(store->set_leaf(entry_id));
  }
  return store;
}

Result<std::unique_ptr<SessionStore>> fork_session(const std::string& sessions_dir,
                                                   const std::string& ref,
                                                   const std::string& workspace) {
  // The source is loaded once, and ENTRY resolved in that load.
  MOAT_ASSIGN_OR_RETURN(NamedSession named, find_named_session(sessions_dir, ref));
  MOAT_ASSIGN_OR_RETURN(auto source, SessionStore::open_read_only(named.path));
  MOAT_TRY(check_named_id(named, source->id()));
  std::string entry_id = source->leaf();
  if (!named.entry.empty()) {
    MOAT_ASSIGN_OR_RETURN(entry_id, resolve_entry(*source, named.entry));
  }
  const std::vector<Entry> path = source->path_to(entry_id);
  MOAT_ASSIGN_OR_RETURN(auto fork, SessionStore::create(sessions_dir, workspace, source->id()));
  // Ids and timestamps are kept, so ID@ENTRY, labels and compactions mean the same entry in
  // the fork as in its parent.
  for (const Entry& e : path) MOAT_TRY(fork->append_copy(e));
  MOAT_TRY(fork->sync());
  return fork;
}

}  // namespace moat::sessions

// agent/cli_sessions.cc: `moat sessions list|show|tree|label|export` and `moat audit
// verify|show|export`.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "agent/cli.h"
#include "agent/events.h"
#include "agent/visible.h"
#include "base/log.h"
#include "base/timestamps.h"
#include "sandbox/moatd_config.h"
#include "sessions/audit.h"
#include "sessions/audit_access.h"
#include "sessions/audit_key.h"
#include "sessions/audit_verify.h"
#include "sessions/render_audit.h"
#include "sessions/render_session.h"
#include "sessions/ids.h"
#include "sessions/json_util.h"
#include "sessions/store.h"

namespace moat::agent {
namespace {

struct SessionsOptions {
  std::string dir;        // --dir, else default_sessions_dir()
  std::string workspace;  // --workspace, else the current directory
  bool all = false;
  std::string ref;  // ID[@ENTRY]
  bool html = false;
  bool json = false;   // --json: one JSON object per line (docs/events.md)
  std::string output;  // -o FILE, else stdout
};

struct AuditOptions {
  std::vector<std::string> files;  // files, or directories searched for *.jsonl
  std::string sessions_dir;        // where --session looks for a moat session id
  bool allow_open = false;
  std::string key;                  // a public key file to check checkpoints against
  sessions::AuditShowOptions show;  // --tree, --json and the filter
  bool html = false;
  std::string output;
};

std::string current_dir() {
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) == nullptr) return ".";
  return buf;
}

int report(const Error& e) {
  std::fprintf(stderr, "moat: %s\n", e.message().c_str());
  return kExitUsage;
}

// Writes `text` to `output`, or to stdout (a person's view: untrusted text in it has its
// control characters made visible); kExitDone or kExitUsage.
int emit(const std::string& text, const std::string& output) {
  if (output.empty()) {
    const std::string shown = visible(text);
    std::fwrite(shown.data(), 1, shown.size(), stdout);
    return kExitDone;
  }
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.good()) return report(Error::from_errno("write", EIO, output));
  std::fprintf(stderr, "wrote %s\n", output.c_str());
  return kExitDone;
}

std::string sessions_dir(const SessionsOptions& o) {
  return o.dir.empty() ? sessions::default_sessions_dir() : o.dir;
}

// When the session file was last written: what `list` sorts by, newest first.
std::string modified_text(const sessions::SessionInfo& s) {
  return format_utc({static_cast<time_t>(s.modified_ns / 1000000000),
                     static_cast<long>(s.modified_ns % 1000000000)},
                    0)
             .substr(0, 19) +
         "Z";
}

nlohmann::json session_info_json(const sessions::SessionInfo& s, const std::string& short_id) {
  return {{"id", s.id},
          {"short_id", short_id},
          {"modified", modified_text(s)},
          {"path", s.path},
          {"workspace", s.workspace},
          {"created", s.created},
          {"name", s.name},
          {"first_message", s.first_message},
          {"entries", s.entries},
          {"parent_session",
           s.parent_session.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.parent_session)}};
}

int run_list(const SessionsOptions& o) {
  const std::string ws = o.all ? "" : (o.workspace.empty() ? current_dir() : o.workspace);
  auto list = sessions::list_sessions(sessions_dir(o), ws);
  if (!list) return report(list.error());
  std::vector<std::string> ids;
  for (const auto& s : *list) ids.push_back(s.id);
  const std::vector<std::string> short_ids = sessions::short_session_ids(ids);
  std::string out;
  for (size_t i = 0; i < list->size(); ++i) {
    const sessions::SessionInfo& s = (*list)[i];
    if (o.json) {
      out += json_line(session_info_json(s, short_ids[i])) + "\n";
      continue;
    }
    // The short id (what --resume and `sessions show` take) and the time the list sorts by.
    out += short_ids[i] + "  " + modified_text(s) + "  " + std::to_string(s.entries) +
           " entries  " + moat::quoted(s.name.empty() ? s.first_message : s.name) +
           (s.parent_session.empty() ? "" : "  (fork of " + s.parent_session + ")") + "\n";
    if (o.all) out += "    " + moat::quoted(s.workspace) + "\n";
  }
  std::fputs(visible(out).c_str(), stdout);
  if (list->empty())
    std::fprintf(stderr, "no sessions%s\n", ws.empty() ? "" : (" for " + ws).c_str());
  return kExitDone;
}

// The moatd sessions (the audit logs' ids) a moat session ran under, one per run of it, as its
// tools_change entries name them.
std::vector<std::string> audit_ids(const sessions::SessionStore& store) {
  std::vector<std::string> out;
  for (size_t i = 0; i < store.entry_count(); ++i) {
    if (store.entry_type(i) != "tools_change") continue;
    const std::string audit = sessions::str_field(store.entry(i), "moatd_session");
    if (!audit.empty() && std::find(out.begin(), out.end(), audit) == out.end())
      out.push_back(audit);
  }
  return out;
}

// Loads the session and the path a ref names: the entry's path, else the newest leaf's.
struct Loaded {
  std::unique_ptr<sessions::SessionStore> store;
  std::vector<sessions::Entry> path;
};
// Without a ref: the newest session of this workspace (as `run --continue` picks), else the
// newest of all.
Result<std::string> newest_session(const SessionsOptions& o) {
  if (auto path = sessions::find_latest_session(sessions_dir(o), current_dir())) return path;
  MOAT_ASSIGN_OR_RETURN(const std::vector<sessions::SessionInfo> all,
                        sessions::list_sessions(sessions_dir(o)));
  if (all.empty())
    return fail(Error::msg("no sessions in " + sessions_dir(o) +
                           " (give a session id, or --dir the sessions directory)"));
  return all.front().path;
}

Result<Loaded> load_ref(const SessionsOptions& o) {
  sessions::SessionRef ref;
  if (o.ref.empty()) {
    MOAT_ASSIGN_OR_RETURN(ref.path, newest_session(o));
  } else {
    MOAT_ASSIGN_OR_RETURN(ref, sessions::resolve_session_ref(sessions_dir(o), o.ref));
  }
  Loaded l;
  MOAT_ASSIGN_OR_RETURN(l.store, sessions::SessionStore::open_read_only(ref.path));
  l.path = ref.entry_id.empty() ? l.store->path_to_leaf() : l.store->path_to(ref.entry_id);
  return l;
}

int run_show(const SessionsOptions& o) {
  auto l = load_ref(o);
  if (!l) return report(l.error());
  if (o.json) {
    std::string out = json_line(l->store->header()) + "\n";
    for (const auto& e : l->path) out += json_line(e) + "\n";
    std::fputs(out.c_str(), stdout);
    return kExitDone;
  }
  std::string audits;  // `moat audit show --session ID` shows these logs
  for (const std::string& a : audit_ids(*l->store)) audits += "audit " + a + "\n";
  return emit("session " + l->store->id() + "\nfile " + l->store->path() + "\nworkspace " +
                  moat::quoted(sessions::str_field(l->store->header(), "workspace")) + "\n" +
                  audits + "\n" + sessions::render_transcript(l->path),
              "");
}

int run_tree(const SessionsOptions& o) {
  auto l = load_ref(o);
  if (!l) return report(l.error());
  return emit(sessions::render_tree(*l->store), "");
}

int run_export(const SessionsOptions& o) {
  if (!o.html) return report(Error::msg("export: only --html is supported; pass --html"));
  auto l = load_ref(o);
  if (!l) return report(l.error());
  return emit(sessions::session_html(*l->store, l->path), o.output);
}

// The entry a label without @ENTRY names: the newest message on the current path. The leaf
// itself may be an earlier label or a session name, and a label of a label names nothing a
// person can resume from.
std::string newest_message(const sessions::SessionStore& store) {
  const std::vector<const sessions::Entry*> path = store.path_refs(store.leaf());
  std::string fallback;  // the newest entry that is not itself a name, when no message is
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const std::string type = sessions::str_field(**it, "type");
    if (type == "message") return sessions::str_field(**it, "id");
    if (fallback.empty() && type != "label" && type != "session_info")
      fallback = sessions::str_field(**it, "id");
  }
  return fallback;
}

// `moat sessions label ID[@ENTRY] NAME`: names an entry (the newest message without @ENTRY), so
// `--resume ID@NAME`, `--fork ID@NAME` and `sessions show ID@NAME` can use the name. The
// label entry is appended at the end of the file; an empty NAME removes the entry's label.
int run_label(const SessionsOptions& o, const std::string& name) {
  auto ref = sessions::resolve_session_ref(sessions_dir(o), o.ref);
  if (!ref) return report(ref.error());
  if (name.find_first_of("@/\n") != std::string::npos)
    return report(Error::msg("label " + moat::quoted(name) +
                             ": a label may not contain '@', '/' or a newline"));
  auto store = sessions::SessionStore::open(ref->path);
  if (!store) {
    if (store.error().code == EWOULDBLOCK)
      return report(Error::msg("session " + ref->session_id +
                               " is open in a running moat; label it when that run ends"));
    return report(store.error());
  }
  const std::string target = ref->entry_id.empty() ? newest_message(**store) : ref->entry_id;
  if (target.empty())
    return report(Error::msg("session " + ref->session_id + " has no entries to label"));
  if (auto a = (*store)->append({{"type", "label"}, {"targetId", target}, {"label", name}}); !a)
    return report(a.error());
  if (auto s = (*store)->sync(); !s) return report(s.error());
  std::printf("%s@%s %s\n", ref->session_id.c_str(), target.c_str(),
              name.empty() ? "unlabelled" : ("labelled " + moat::quoted(name)).c_str());
  return kExitDone;
}

// How the checkpoints of an intact log were checked, for the verify line.
std::string signature_summary(const sessions::AuditVerdict& v) {
  if (v.checkpoints == 0) return v.key_trusted ? "" : "; no signed checkpoints";
  std::string s = "; " + std::to_string(v.checkpoints) + " checkpoint" +
                  (v.checkpoints == 1 ? "" : "s") + " signed through seq " +
                  std::to_string(v.signed_through) + " by " + v.key_id;
  if (!v.key_trusted) s += " (the key the log names: pass --key to check it is yours)";
  return s;
}

// "BROKEN (missing) at seq 3, byte offset 120: record at byte 120 has seq 4, ..."
std::string broken_text(const sessions::AuditVerdict& v) {
  return "BROKEN (" + std::string(sessions::problem_name(v.problem)) + ") at seq " +
         std::to_string(v.seq) + ", byte offset " + std::to_string(v.offset) + ": " + v.detail;
}

// The raw public key --key names, or "" without --key.
Result<std::string> trusted_key(const AuditOptions& o) {
  if (o.key.empty()) return std::string();
  return sessions::read_audit_public_key(o.key);
}

int run_verify(const AuditOptions& o) {
  int rc = kExitDone;
  auto trusted = trusted_key(o);
  if (!trusted) return report(trusted.error());
  for (const auto& file : o.files) {
    auto v = sessions::verify_audit_file(file, !o.allow_open, *trusted);
    if (!v) {
      std::fprintf(stderr, "moat: %s\n", v.error().message().c_str());
      rc = kExitTaskFailed;
      continue;
    }
    // The session id and a broken record's detail come from the file: shown, never acted on.
    if (v->ok()) {
      std::fputs(visible(file + ": ok, " + std::to_string(v->records) + " records, session " +
                         v->session + ", head " + v->head + signature_summary(*v) + "\n")
                     .c_str(),
                 stdout);
    } else {
      std::fputs(visible(file + ": " + broken_text(*v) + "\n").c_str(), stdout);
      rc = kExitTaskFailed;
    }
  }
  return rc;
}

// One audit file as `show` and `export` read it: its records, and whether they verify.
struct ReadAudit {
  std::string file;
  std::vector<nlohmann::json> records;
  sessions::AuditVerdict verdict;
};

// Reads and verifies each file. A file that does not verify is still read (a reviewer wants
// to see what is there), but never silently: the warning names the file, the first bad seq
// and why, and `ok` turns false so the command exits non-zero.
Result<std::vector<ReadAudit>> read_audits(const AuditOptions& o, bool& ok) {
  MOAT_ASSIGN_OR_RETURN(const std::string trusted, trusted_key(o));
  std::vector<ReadAudit> out;
  ok = true;
  for (const auto& file : o.files) {
    ReadAudit a{file, {}, {}};
    MOAT_ASSIGN_OR_RETURN(a.records, sessions::load_audit_records(file));
    MOAT_ASSIGN_OR_RETURN(a.verdict, sessions::verify_audit_file(file, !o.allow_open, trusted));
    if (!a.verdict.ok()) {
      const bool cut = a.verdict.records < a.records.size();
      std::fprintf(stderr, "moat: warning: %s does not verify: %s%s\n", file.c_str(),
                   broken_text(a.verdict).c_str(),
                   cut ? "; the rows from there on are marked unverified" : "");
      ok = false;
    }
    out.push_back(std::move(a));
  }
  return out;
}

// The audit files `paths` name: a file as it is, a directory (an audit directory, one day's
// folder) as the *.jsonl files under it, sorted.
Result<std::vector<std::string>> audit_files(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!fs::is_directory(path, ec)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> found;
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::end(it);
         it.increment(ec))
      if (it->is_regular_file() && it->path().extension() == ".jsonl")
        found.push_back(it->path().string());
    if (ec) return fail(Error::from_errno("reading audit directory", ec.value(), path));
    if (found.empty())
      return fail(
          Error::msg("audit directory " + moat::quoted(path) + " holds no *.jsonl audit log"));
    std::sort(found.begin(), found.end());
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

// The folders `moat audit show` reads without a path: this user's audit folder, and their
// folder on the system moatd the operator configured (moatd.toml [system]: audit_dir's
// users/UID, sessions/audit_access.h), those that exist; the first when neither does (its
// error names it). A moatd.toml that does not parse is an error naming it.
Result<std::vector<std::string>> default_audit_dirs() {
  std::vector<std::string> found = {sessions::default_audit_dir(false)};
  MOAT_ASSIGN_OR_RETURN(const sandbox::MoatdConfig config,
                        sandbox::load_moatd_config(sandbox::moatd_config_path()));
  if (!config.socket.empty())
    found.push_back(sessions::user_audit_dir(
        dirs::or_default(config.audit_dir, dirs::kSystemAudit), ::getuid()));
  std::vector<std::string> present = found;
  std::erase_if(present, [](const std::string& d) { return !std::filesystem::is_directory(d); });
  return present.empty() ? std::vector<std::string>{found.front()} : present;
}

// The moatd sessions (the audit logs' ids) a moat session ran under: one per run of it,
// named by its tools_change entries. Empty when `id` names no moat session.
std::vector<std::string> audit_ids_of_session(const std::string& sessions_dir,
                                              const std::string& id) {
  auto ref = sessions::resolve_session_ref(sessions_dir, id);
  if (!ref) return {};
  auto store = sessions::SessionStore::open_read_only(ref->path);
  return store ? audit_ids(**store) : std::vector<std::string>();
}

// The audit file's session: the moatd session id its first record names.
std::string audit_file_session(const ReadAudit& a) {
  return a.records.empty() ? "" : sessions::str_field(a.records.front(), "session");
}

// Over several files the rows are one timeline: a session column, and sorted by ts (an
// RFC 3339 UTC timestamp of fixed width, so text order is time order); stable, so records of
// one instant keep their file order.
int run_audit_show(const AuditOptions& given) {
  AuditOptions o = given;
  auto paths = o.files.empty() ? default_audit_dirs() : Result<std::vector<std::string>>(o.files);
  if (!paths) return report(paths.error());
  auto files = audit_files(*paths);
  if (!files) return report(files.error());
  o.files = std::move(*files);
  // --session may name a moat session (its id, short form or prefix): its runs' audit logs.
  const std::vector<std::string> audit_ids =
      o.show.filter.session.empty()
          ? std::vector<std::string>()
          : audit_ids_of_session(
                o.sessions_dir.empty() ? sessions::default_sessions_dir() : o.sessions_dir,
                o.show.filter.session);
  if (!audit_ids.empty()) o.show.filter.session.clear();
  bool ok = true;
  auto audits = read_audits(o, ok);
  if (!audits) return report(audits.error());
  if (!audit_ids.empty())
    std::erase_if(*audits, [&](const ReadAudit& a) {
      return std::find(audit_ids.begin(), audit_ids.end(), audit_file_session(a)) ==
             audit_ids.end();
    });
  sessions::AuditShowOptions show = o.show;
  show.session_column = !show.json && audits->size() > 1;
  std::vector<sessions::AuditRow> rows;
  for (const auto& a : *audits) {
    const size_t verified = a.verdict.ok() ? a.records.size() : a.verdict.records;
    for (auto& row : sessions::audit_rows(a.records, verified, show))
      rows.push_back(std::move(row));
  }
  if (audits->size() > 1)
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.ts < b.ts; });
  // Plain ASCII JSON, or the text with its control characters made visible.
  std::string out;
  for (const auto& row : rows)
    out +=
        (show.json ? json_line(nlohmann::json::parse(row.text, nullptr, false)) : row.text) + "\n";
  std::fputs(show.json ? out.c_str() : visible(out).c_str(), stdout);
  return ok ? kExitDone : kExitTaskFailed;
}

int run_audit_export(const AuditOptions& o) {
  if (!o.html) return report(Error::msg("export: only --html is supported; pass --html"));
  if (o.files.size() != 1) return report(Error::msg("export: give exactly one audit file"));
  bool ok = true;
  auto audits = read_audits(o, ok);
  if (!audits) return report(audits.error());
  const ReadAudit& a = audits->front();
  const int rc = emit(sessions::audit_html(a.records, a.verdict, a.file), o.output);
  return rc != kExitDone ? rc : ok ? kExitDone : kExitTaskFailed;
}

void add_sessions_group(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<SessionsOptions>();
  auto* group = app.add_subcommand("sessions", "List, show and export sessions");
  group->require_subcommand(1);
  set_group_exit_codes(*group);
  group->add_option("--dir", opts->dir,
                    "Sessions directory (default: $MOAT_SESSIONS_DIR, "
                    "$XDG_STATE_HOME/moat/sessions)");
  auto* list = group->add_subcommand("list", "Sessions of this workspace, newest first");
  list->add_option("--workspace,-C", opts->workspace,
                   "Workspace directory (default: the current one)");
  set_exit_codes(*list, {kExitDone, kExitUsage});
  list->add_flag("--all", opts->all, "Sessions of every workspace");
  list->add_flag("--json", opts->json, "One JSON object per session (docs/events.md)");
  list->callback([opts, &exit_code] { exit_code = run_list(*opts); });
  auto* show = group->add_subcommand("show", "Print a session's current path (or up to ENTRY)");
  show->add_option("ref", opts->ref,
                   "ID[@ENTRY]: session id, its short form or a prefix; entry id, prefix or "
                   "label (default: the newest session)");
  set_exit_codes(*show, {kExitDone, kExitUsage});
  show->add_flag("--json", opts->json,
                 "The header and each entry on the path, one JSON object per line");
  show->callback([opts, &exit_code] { exit_code = run_show(*opts); });
  auto* tree = group->add_subcommand("tree", "Print a session's tree of branches");
  set_exit_codes(*tree, {kExitDone, kExitUsage});
  tree->add_option("ref", opts->ref,
                   "session id, its short form or a prefix (default: the newest session)");
  tree->callback([opts, &exit_code] { exit_code = run_tree(*opts); });
  auto* label = group->add_subcommand("label", "Name an entry, for --resume/--fork ID@NAME");
  set_exit_codes(*label, {kExitDone, kExitUsage});
  auto label_name = std::make_shared<std::string>();
  label->add_option("ref", opts->ref, "ID[@ENTRY]: the entry (default: the newest)")->required();
  label->add_option("name", *label_name, "The label (\"\" removes it)")->required();
  label->callback([opts, label_name, &exit_code] { exit_code = run_label(*opts, *label_name); });
  auto* exp = group->add_subcommand("export", "Export a session's path as a page");
  set_exit_codes(*exp, {kExitDone, kExitUsage});
  exp->add_option("ref", opts->ref, "ID[@ENTRY]")->required();
  exp->add_flag("--html", opts->html, "Self-contained HTML")->required();
  exp->add_option("-o,--output", opts->output, "Output file (default: stdout)");
  exp->callback([opts, &exit_code] { exit_code = run_export(*opts); });
}

// verify, show and export check a log the same way.
void add_read_verify_options(CLI::App& cmd, AuditOptions& opts) {
  // Their own words for 1: no task runs here (run_verify, read_audits).
  cmd.footer(
      "Exit codes: 0 every file verifies, 1 a file does not verify (a broken chain or "
      "signature, no session.end without --allow-open; for verify also a file it cannot "
      "read), 2 usage or configuration error (bad options, an unreadable --key).");
  cmd.add_flag("--allow-open", opts.allow_open,
               "Accept a log without session.end (a session still running)");
  cmd.add_option("--key", opts.key,
                 "moatd's public key (audit-key.pub): every checkpoint must verify under "
                 "it, and a finished log must end in one")
      ->check(CLI::ExistingFile);
}

void add_audit_group(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<AuditOptions>();
  auto* group = app.add_subcommand("audit", "Verify, show and export audit logs");
  group->require_subcommand(1);
  set_group_exit_codes(*group);
  auto* verify = group->add_subcommand(
      "verify",
      "Walk the hash chain; report the first broken record by seq and byte offset "
      "(exit 1 if any file is broken)");
  verify->add_option("files", opts->files, "Audit files")->required()->check(CLI::ExistingFile);
  add_read_verify_options(*verify, *opts);
  verify->callback([opts, &exit_code] { exit_code = run_verify(*opts); });
  auto* show = group->add_subcommand(
      "show", "Print a readable timeline (warns and exits 1 if a file does not verify)");
  show->add_option("files", opts->files,
                   "Audit files or directories (default: the audit directory, "
                   "$XDG_STATE_HOME/moat/audit, and your folder on the system moatd when "
                   "/etc/moat/moatd.toml configures one)")
      ->check(CLI::ExistingPath);
  show->add_option("--session", opts->show.filter.session,
                   "Only this session: a moat session's id, short form or prefix (`moat "
                   "sessions list`: the logs of its runs), or an audit log's session id or prefix");
  show->add_option("--sessions-dir", opts->sessions_dir,
                   "Where --session looks for moat sessions (default: $MOAT_SESSIONS_DIR, "
                   "$XDG_STATE_HOME/moat/sessions)");
  show->add_option("--type", opts->show.filter.type,
                   "Only this record type (decision, call, exec, ...)");
  show->add_option("--decision", opts->show.filter.decision, "Only decisions with this result")
      ->check(CLI::IsMember({"allow", "ask", "deny"}));
  show->add_flag("--tree", opts->show.tree,
                 "Draw each call's programs as a tree under it (parent, argv, decision, exit)");
  show->add_flag("--json", opts->show.json, "Print the records themselves, one JSON per line")
      ->excludes("--tree");
  add_read_verify_options(*show, *opts);
  show->callback([opts, &exit_code] { exit_code = run_audit_show(*opts); });
  auto* exp = group->add_subcommand(
      "export",
      "Render one session's audit log as a timeline page (warns and exits 1 if it does not "
      "verify)");
  exp->add_option("files", opts->files, "Audit file")->required()->check(CLI::ExistingFile);
  exp->add_flag("--html", opts->html, "Self-contained HTML")->required();
  exp->add_option("-o,--output", opts->output, "Output file (default: stdout)");
  add_read_verify_options(*exp, *opts);
  exp->callback([opts, &exit_code] { exit_code = run_audit_export(*opts); });
}

}  // namespace

void add_sessions_commands(CLI::App& app, int& exit_code) {
  add_sessions_group(app, exit_code);
  add_audit_group(app, exit_code);
}

}  // namespace moat::agent

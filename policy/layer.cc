// policy/layer.cc: reads the layers from disk. The system layer is the organisation's
// lock, so anything wrong with it (ownership, a parse error) stops the load instead of
// being skipped (POLICY.md lesson 5).
#include "policy/layer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/moat_dirs.h"
#include "base/sys.h"
#include "base/unique_fd.h"
#include "policy/digest.h"
#include "policy/file_limits.h"
#include "policy/globs.h"
#include "policy/mcp_import.h"
#include "policy/parse_cache.h"
#include "policy/paths.h"
#include "policy/toml_load.h"

namespace moat::policy {
namespace {

Result<std::string> read_file(const std::string& path) {
  MOAT_ASSIGN_OR_RETURN(UniqueFd fd, sys::open_path(path, O_RDONLY | O_NOCTTY | O_NOFOLLOW));
  return read_policy_text(fd.get(), path);
}

// *.toml in `dir`, sorted by name (00-org.toml before 10-team.toml); a missing dir is empty.
Result<std::vector<std::string>> toml_files(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) return out;
    return fail(Error::from_errno("opendir", errno, dir));
  }
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".toml") == 0 && name[0] != '.')
      out.push_back(dir + "/" + name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// `path` as moatd's working directory resolves it: a layer's file (session.start's layers, every
// rule's file:line) must name the same file wherever the log is read (issue 27 item 21; a
// relative --user-policy-dir or --policy was recorded relative).
std::string absolute_file(const std::string& path) {
  if (!path.empty() && path[0] == '/') return lexical_absolute(path, "/");
  char cwd[PATH_MAX];
  return lexical_absolute(path, ::getcwd(cwd, sizeof cwd) != nullptr ? cwd : "/");
}

// Read and parsed again only when the file changed since its last parse (parse_cache.h).
Result<PolicyFile> parse_file(const std::string& path, bool strict,
                              std::vector<std::string>* notices, bool repository = false) {
  ParseOptions po;
  po.file = absolute_file(path);
  po.unknown_keys_are_errors = strict;
  po.repository = repository;
  auto parse = [&po, &path](std::string_view text) -> Result<ParsedFile> {
    ParsedFile out;
    MOAT_ASSIGN_OR_RETURN(out.file, parse_policy_text(text, po, &out.notices));
    out.file.sha256 = sha256_hex(text);
    if (out.file.layer.name.empty()) out.file.layer.name = std::string(base_name(path));
    return out;
  };
  const std::string key = std::string(strict ? "strict" : "lenient") +
                          (repository ? ",repository" : "");
  MOAT_ASSIGN_OR_RETURN(ParsedFile parsed, parse_file_cached(po.file, key, parse));
  if (notices != nullptr)
    notices->insert(notices->end(), parsed.notices.begin(), parsed.notices.end());
  return std::move(parsed.file);
}

// The built-in default's parse: its text is compiled in, so it is parsed once per process.
Result<PolicyFile> builtin_default_file() {
  static const Result<PolicyFile> parsed = [] {
    ParseOptions po;
    po.file = kBuiltinDefaultFile;
    auto p = parse_policy_text(builtin_default_policy_text(), po, nullptr);
    if (!p) return p;
    p->sha256 = sha256_hex(builtin_default_policy_text());
    p->layer.name = p->layer.name.empty() ? "default" : p->layer.name;
    return p;
  }();
  return parsed;
}

Result<void> load_dir(const std::string& dir, const std::string& kind, bool strict,
                      std::vector<LoadedLayer>& out, std::vector<std::string>* notices) {
  MOAT_ASSIGN_OR_RETURN(std::vector<std::string> files, toml_files(dir));
  for (const auto& f : files) {
    MOAT_ASSIGN_OR_RETURN(PolicyFile p, parse_file(f, strict, notices));
    out.push_back({kind, std::move(p)});
  }
  return {};
}

std::string pin_path(const std::string& workspace, const std::string& trust_dir) {
  return trust_dir + "/" + sha256_hex(workspace_root(workspace)) + ".pin";
}

Result<void> make_dirs(const std::string& dir) {
  std::string partial;
  for (auto part : glob::split_path(dir)) {
    partial += "/" + std::string(part);
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      return fail(Error::from_errno("mkdir", errno, partial));
  }
  return {};
}

// Sandboxed code can write inside the workspace; a pin it could write is no pin.
bool trust_dir_in_workspace(const std::string& workspace, const std::string& trust_dir) {
  return is_under(canonical_path(trust_dir, "/"), workspace_root(workspace));
}

// The project layer as it is loaded: .moat/policy.toml (if present) with the servers of the
// imported .mcp.json files appended. The hash of what was read must be the pinned one: a swap
// between the trust check and these reads would otherwise load unaccepted text.
Result<PolicyFile> read_project_files(const ProjectTrust& t, bool strict,
                                      std::vector<std::string>* notices) {
  PolicyFile p;
  std::vector<std::pair<std::string, std::string>> hashes;
  if (!t.policy_sha256.empty()) {
    MOAT_ASSIGN_OR_RETURN(p, parse_file(t.file, strict, notices, /*repository=*/true));
    hashes.emplace_back(".moat/policy.toml", p.sha256);
  }
  for (const auto& file : t.imports) {
    MOAT_ASSIGN_OR_RETURN(std::string text, read_file(file));
    MOAT_ASSIGN_OR_RETURN(std::vector<McpServerDecl> servers, import_mcp_json(text, file, notices));
    hashes.emplace_back(file.substr(t.root.size() + 1), sha256_hex(text));
    if (p.file.empty()) {
      p.file = file;
      p.layer.name = std::string(base_name(file));
    }
    p.mcp.server.insert(p.mcp.server.end(), servers.begin(), servers.end());
  }
  p.sha256 = project_content_hash(hashes);
  if (p.sha256 != t.sha256) return fail(t.file + ":1:1: changed while it was being loaded");
  if (p.mcp.server.size() > kMaxMcpServers)
    return fail(t.file + ":1:1: the project declares more than " + std::to_string(kMaxMcpServers) +
                " MCP servers");
  return p;
}

Result<void> load_project(const LoadOptions& o, bool strict, std::vector<LoadedLayer>& out,
                          std::vector<std::string>* notices, ProjectTrust* report) {
  if (o.workspace.empty()) return {};
  const std::string trust_dir = o.trust_dir.empty() ? default_trust_dir() : o.trust_dir;
  MOAT_ASSIGN_OR_RETURN(ProjectTrust t, project_trust(o.workspace, trust_dir));
  if (t.state == TrustState::kNoProjectPolicy) return {};
  if (o.trust_project && t.state != TrustState::kTrusted) {
    MOAT_TRY(pin_project(o.workspace, trust_dir, t.sha256));
    t.state = TrustState::kTrusted;
    t.pinned = t.sha256;
  }
  if (t.state == TrustState::kTrusted && trust_dir_in_workspace(o.workspace, trust_dir))
    t.skipped = "the trust directory " + trust_dir + " is inside the workspace";
  else if (t.state != TrustState::kTrusted)
    t.skipped = t.state == TrustState::kChanged ? "it changed since it was trusted"
                                                : "the workspace is not trusted";
  if (!t.skipped.empty()) {
    if (notices != nullptr)
      notices->push_back(project_files(t) + ": project policy not loaded: " + t.skipped + " (sha256 " +
                         t.sha256 + ")");
    if (report != nullptr) *report = t;
    return {};
  }
  MOAT_ASSIGN_OR_RETURN(PolicyFile p, read_project_files(t, strict, notices));
  out.push_back({"project", std::move(p)});
  t.loaded = true;
  if (report != nullptr) *report = t;
  return {};
}

}  // namespace

void parse_builtin_default() { (void)builtin_default_file(); }

// The policy file's own SHA-256 when it is the only project file (a pin written before the
// imports existed stays valid), else one over each present file's name and SHA-256.
std::string project_content_hash(const std::vector<std::pair<std::string, std::string>>& files) {
  if (files.size() == 1 && files[0].first == ".moat/policy.toml") return files[0].second;
  std::string all;
  for (const auto& [name, sha] : files) all += name + '\0' + sha + '\n';
  return sha256_hex(all);
}

std::string project_files(const ProjectTrust& t) {
  std::string out = t.policy_sha256.empty() ? "" : t.file;
  for (const auto& f : t.imports) out += (out.empty() ? "" : ", ") + f;
  return out;
}

std::string default_trust_dir() { return dirs::trust(); }

const char* trust_state_name(TrustState s) {
  switch (s) {
    case TrustState::kTrusted: return "trusted";
    case TrustState::kUntrusted: return "untrusted";
    case TrustState::kChanged: return "changed";
    default: return "none";
  }
}

std::string default_user_dir() { return dirs::user_policy(); }

Result<void> check_root_owned(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return fail(Error::from_errno("lstat", errno, path));
  if (S_ISLNK(st.st_mode)) return fail(path + ": a symlink; the system policy must be a real file");
  if (st.st_uid != 0)
    return fail(path + ": owned by uid " + std::to_string(st.st_uid) +
                "; the system policy must be owned by root");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return fail(path + ": writable by group or others; the system policy must not be");
  return {};
}

Result<ProjectTrust> project_trust(const std::string& workspace, const std::string& trust_dir) {
  ProjectTrust t;
  t.root = workspace_root(workspace);
  t.file = lexical_absolute(".moat/policy.toml", t.root);
  std::vector<std::pair<std::string, std::string>> hashes;
  struct stat st;
  if (::stat(t.file.c_str(), &st) == 0) {
    MOAT_ASSIGN_OR_RETURN(std::string text, read_file(t.file));
    t.policy_sha256 = sha256_hex(text);
    hashes.emplace_back(".moat/policy.toml", t.policy_sha256);
  }
  for (const char* name : kMcpImportFiles) {
    const std::string file = lexical_absolute(name, t.root);
    if (::lstat(file.c_str(), &st) != 0) continue;
    MOAT_ASSIGN_OR_RETURN(std::string text, read_file(file));
    t.imports.push_back(file);
    hashes.emplace_back(name, sha256_hex(text));
  }
  if (hashes.empty()) return t;
  t.sha256 = project_content_hash(hashes);
  std::ifstream pin(pin_path(workspace, trust_dir));
  std::string line;
  if (pin && std::getline(pin, line)) t.pinned = line.substr(0, line.find(' '));
  t.state = t.pinned.empty()       ? TrustState::kUntrusted
            : t.pinned == t.sha256 ? TrustState::kTrusted
                                   : TrustState::kChanged;
  return t;
}

Result<void> pin_project(const std::string& workspace, const std::string& trust_dir,
                         const std::string& sha256) {
  if (trust_dir_in_workspace(workspace, trust_dir))
    return fail("the trust directory " + trust_dir +
                " is inside the workspace; sandboxed code could write its pins");
  MOAT_TRY(make_dirs(trust_dir));
  const std::string path = pin_path(workspace, trust_dir);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << sha256 << "  " << workspace_root(workspace) << "\n";
    if (!out) return fail(Error::from_errno("write", errno, tmp));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return fail(Error::from_errno("rename", errno, path));
  return {};
}

Result<void> revoke_project(const std::string& workspace, const std::string& trust_dir) {
  const std::string path = pin_path(workspace, trust_dir);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return fail(Error::from_errno("unlink", errno, path));
  return {};
}

Result<std::vector<LoadedLayer>> load_layers(const LoadOptions& o,
                                             std::vector<std::string>* notices,
                                             ProjectTrust* project) {
  std::vector<LoadedLayer> layers;
  // System layer: ownership of the directory and of every file first, then parse.
  MOAT_ASSIGN_OR_RETURN(std::vector<std::string> system_files, toml_files(o.system_dir));
  if (!system_files.empty()) MOAT_TRY(check_root_owned(o.system_dir));
  for (const auto& f : system_files) MOAT_TRY(check_root_owned(f));
  MOAT_TRY(load_dir(o.system_dir, "system", true, layers, notices));
  // The built-in default is the policy of a person's own machine; an organisation's
  // system layer replaces it (otherwise its asks could never be loosened by anyone).
  if (o.use_builtin_default && layers.empty()) {
    MOAT_ASSIGN_OR_RETURN(PolicyFile p, builtin_default_file());
    layers.insert(layers.begin(), LoadedLayer{"builtin", std::move(p)});
  }
  bool strict = true;
  for (const auto& l : layers)
    if (l.kind == "system" && l.file.constraints && l.file.constraints->unknown_keys == "warn")
      strict = false;
  MOAT_TRY(load_dir(o.user_dir.empty() ? default_user_dir() : o.user_dir, "user", strict, layers,
                    notices));
  MOAT_TRY(load_project(o, strict, layers, notices, project));
  for (const auto& f : o.extra_files) {
    MOAT_ASSIGN_OR_RETURN(PolicyFile p, parse_file(f, strict, notices));
    layers.push_back({"cli", std::move(p)});
  }
  return layers;
}

}  // namespace moat::policy

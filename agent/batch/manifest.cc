// agent/batch/manifest.cc: a batch manifest's TOML to items: defaults at the top, one
// [[repo]] per item (a path or a url, and a ref), each of which may override task, model,
// check and the limits.
#include "agent/batch/manifest.h"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "agent/batch/repo_url.h"
#include "policy/toml_reader.h"

namespace moat::agent::batch {
namespace {

namespace fs = std::filesystem;
using policy::TomlReader;

// What the top level and each [[repo]] may both say.
const policy::Strings kItemKeys = {"task",       "model",    "check",    "max_turns",
                                   "max_tokens", "max_cost", "max_wall", "check_timeout"};

policy::Strings with(policy::Strings keys, std::initializer_list<const char*> more) {
  for (const char* k : more) keys.emplace_back(k);
  return keys;
}

std::string absolute_from(const std::string& dir, const std::string& path) {
  return fs::path(path).is_absolute() ? path : (fs::path(dir) / path).lexically_normal().string();
}

std::string key_of(const std::string& table, const char* name) {
  return table.empty() ? name : table + "." + name;
}

// Reads the keys of kItemKeys that `t` holds into `item` (over what it already has).
Result<void> read_item_keys(TomlReader& r, const toml::table& t, const std::string& table,
                            const std::string& dir, Item& item) {
  struct Text {
    const char* name;
    std::string* out;
  };
  for (const Text& k :
       {Text{"task", &item.task}, Text{"model", &item.model}, Text{"check", &item.check}}) {
    if (const auto* n = t.get(k.name)) {
      MOAT_ASSIGN_OR_RETURN(*k.out, r.string(*n, key_of(table, k.name)));
    }
  }
  // A replay script is a file next to the manifest, like the repositories.
  if (item.model.rfind("replay:", 0) == 0 && t.get("model") != nullptr)
    item.model = "replay:" + absolute_from(dir, item.model.substr(7));
  ItemLimits& l = item.limits;
  if (const auto* n = t.get("max_turns")) {
    MOAT_ASSIGN_OR_RETURN(std::int64_t v, r.integer(*n, key_of(table, "max_turns"), 1, 100000));
    l.max_turns = static_cast<int>(v);
  }
  if (const auto* n = t.get("max_tokens")) {
    MOAT_ASSIGN_OR_RETURN(l.max_tokens, r.integer(*n, key_of(table, "max_tokens"), 1, 1LL << 40));
  }
  if (const auto* n = t.get("max_cost")) {
    MOAT_ASSIGN_OR_RETURN(l.max_cost, r.number(*n, key_of(table, "max_cost"), 0.0001, 1e6));
  }
  if (const auto* n = t.get("max_wall")) {
    MOAT_ASSIGN_OR_RETURN(l.max_wall_s, r.quantity(*n, key_of(table, "max_wall"), true));
  }
  if (const auto* n = t.get("check_timeout")) {
    MOAT_ASSIGN_OR_RETURN(l.check_timeout_s, r.quantity(*n, key_of(table, "check_timeout"), true));
  }
  return {};
}

bool is_id_char(unsigned char c) { return std::isalnum(c) || c == '.' || c == '_' || c == '-'; }

Result<void> check_id(TomlReader& r, const toml::node& at, const std::string& key,
                      const std::string& id) {
  bool ok = !id.empty() && id.size() <= 128 && id[0] != '.';
  for (unsigned char c : id) ok = ok && is_id_char(c);
  if (ok) return {};
  return r.error_at(at.source(), key,
                    "\"" + id +
                        "\" cannot name an item: expected 1 to 128 of A-Z a-z 0-9 . _ - (not "
                        "starting with '.'); give the repo an id = \"...\"");
}

// Where the item's repository comes from: path (relative to the manifest) or url, and ref.
// Returns the node an id derived from it is blamed on.
Result<const toml::node*> read_source(TomlReader& r, const toml::table& t, const std::string& key,
                                      const std::string& dir, Item& item) {
  const toml::node* url = t.get("url");
  if (url != nullptr && t.get("path") != nullptr)
    return r.error_at(url->source(), key + ".url",
                      "give path = \"...\" (a local repository) or url = \"...\", not both");
  if (const auto* n = t.get("ref")) {
    MOAT_ASSIGN_OR_RETURN(item.ref, r.string(*n, key + ".ref"));
    if (auto ok = check_ref(item.ref); !ok)
      return r.error_at(n->source(), key + ".ref", ok.error().message());
  }
  if (url != nullptr) {
    MOAT_ASSIGN_OR_RETURN(item.url, r.string(*url, key + ".url"));
    auto parsed = parse_repo_url(item.url);
    if (!parsed) return r.error_at(url->source(), key + ".url", parsed.error().message());
    item.id = default_url_id(*parsed);
    return url;
  }
  MOAT_ASSIGN_OR_RETURN(const toml::node* path, r.required(t, "path", key));
  MOAT_ASSIGN_OR_RETURN(std::string p, r.string(*path, key + ".path"));
  item.path = absolute_from(dir, p);
  item.id = fs::path(item.path).filename().string();
  return path;
}

// One [[repo]] table: the defaults, then its own keys.
Result<Item> read_repo(TomlReader& r, const toml::table& t, const std::string& key,
                       const std::string& dir, const Item& defaults) {
  MOAT_TRY(r.check_keys(t, with(kItemKeys, {"id", "path", "url", "ref"}), key));
  Item item = defaults;
  item.line = static_cast<int>(t.source().begin.line);
  MOAT_ASSIGN_OR_RETURN(const toml::node* id_at, read_source(r, t, key, dir, item));
  MOAT_TRY(read_item_keys(r, t, key, dir, item));
  if (const auto* n = t.get("id")) {
    MOAT_ASSIGN_OR_RETURN(item.id, r.string(*n, key + ".id"));
    id_at = n;
  }
  MOAT_TRY(check_id(r, *id_at, key + ".id", item.id));
  if (item.task.empty())
    return r.error_at(t.source(), key + ".task", "no task: give task = \"...\" here or at the top");
  if (item.model.empty())
    return r.error_at(t.source(), key + ".model",
                      "no model: give model = \"replay:FILE\" or \"provider/model\" here or at "
                      "the top");
  return item;
}

Result<void> read_repos(TomlReader& r, const toml::table& top, const std::string& dir,
                        const Item& defaults, Manifest& m) {
  MOAT_ASSIGN_OR_RETURN(const toml::node* n, r.required(top, "repo", "[[repo]]"));
  const auto* a = n->as_array();
  if (a == nullptr || a->empty())
    return r.error_at(n->source(), "repo", "expected one or more [[repo]] tables");
  std::map<std::string, int> seen;  // id -> line
  for (std::size_t i = 0; i < a->size(); ++i) {
    const std::string key = "repo[" + std::to_string(i) + "]";
    MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table((*a)[i], key));
    MOAT_ASSIGN_OR_RETURN(Item item, read_repo(r, *t, key, dir, defaults));
    if (auto [it, fresh] = seen.emplace(item.id, item.line); !fresh)
      return r.error_at(t->source(), key + ".id",
                        "\"" + item.id + "\" is already the id of the repo at line " +
                            std::to_string(it->second) +
                            "; ids must be unique (give id = \"...\")");
    m.items.push_back(std::move(item));
  }
  return {};
}

}  // namespace

Result<Manifest> parse_manifest_text(std::string_view text, const std::string& file,
                                     const std::string& dir) {
  if (text.size() > kMaxManifestBytes)
    return fail(file + ":1:1: file is larger than " + std::to_string(kMaxManifestBytes) + " bytes");
  MOAT_ASSIGN_OR_RETURN(toml::table top, policy::parse_toml_text(text, file));
  TomlReader r(file, /*unknown_keys_are_errors=*/true, nullptr);
  MOAT_TRY(r.check_keys(top, with(kItemKeys, {"policy", "max_total_cost", "repo"}), ""));
  Manifest m;
  m.file = file;
  Item defaults;
  MOAT_TRY(read_item_keys(r, top, "", dir, defaults));
  if (const auto* n = top.get("policy")) {
    MOAT_ASSIGN_OR_RETURN(policy::Strings files, r.strings(*n, "policy"));
    for (const auto& f : files) m.policy_files.push_back(absolute_from(dir, f));
  }
  if (const auto* n = top.get("max_total_cost")) {
    MOAT_ASSIGN_OR_RETURN(m.max_total_cost, r.number(*n, "max_total_cost", 0.0001, 1e9));
  }
  MOAT_TRY(read_repos(r, top, dir, defaults, m));
  return m;
}

Result<Manifest> load_manifest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(Error::from_errno("open", errno, "manifest " + path));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string dir = fs::absolute(fs::path(path)).parent_path().string();
  return parse_manifest_text(ss.str(), path, dir);
}

bool in_shard(const std::string& id, unsigned index, unsigned count) {
  // FNV-1a: fixed by its definition, unlike std::hash, so every machine agrees.
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ULL;
  return h % count == index;
}

Result<std::pair<unsigned, unsigned>> parse_shard(std::string_view text) {
  unsigned i = 0, n = 0;
  char extra = 0;
  const std::string s(text);
  if (std::sscanf(s.c_str(), "%u/%u%c", &i, &n, &extra) != 2 || n == 0 || i >= n || n > 100000 ||
      s.find_first_not_of("0123456789/") != std::string::npos)
    return fail("--shard \"" + s +
                "\": expected I/N with 0 <= I < N <= 100000 (0-based, as JOB_COMPLETION_INDEX "
                "and a Slurm array 0-(N-1) count)");
  return std::make_pair(i, n);
}

}  // namespace moat::agent::batch

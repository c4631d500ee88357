// sandbox/moatd_config.cc: reading moatd.toml (see moatd_config.h).
#include "sandbox/moatd_config.h"

#include <fcntl.h>

#include <cerrno>
#include <limits>

#include "base/sys.h"
#include "policy/file_limits.h"
#include "policy/toml_reader.h"

namespace moat::sandbox {
namespace {

using policy::TomlReader;

constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();

// [system] `key`, when present: an absolute path.
Result<void> read_absolute(TomlReader& r, const toml::table& t, const char* key, std::string& out) {
  const toml::node* n = t.get(key);
  if (n == nullptr) return {};
  const std::string name = std::string("system.") + key;
  MOAT_ASSIGN_OR_RETURN(out, r.string(*n, name));
  if (out.empty() || out.front() != '/')
    return r.error_at(n->source(), name, "expected an absolute path, got \"" + out + "\"");
  return {};
}

Result<void> read_system(TomlReader& r, const toml::table& t, MoatdConfig& c) {
  MOAT_TRY(r.check_keys(t, {"socket", "audit_dir"}, "system"));
  MOAT_TRY(read_absolute(r, t, "socket", c.socket));
  return read_absolute(r, t, "audit_dir", c.audit_dir);
}

Result<void> read_quota(TomlReader& r, const toml::table& t, UserQuota& q) {
  MOAT_TRY(r.check_keys(t, {"sessions", "memory", "pids", "audit_bytes_per_day"}, "quota"));
  if (const toml::node* n = t.get("sessions")) {
    MOAT_ASSIGN_OR_RETURN(std::int64_t v, r.integer(*n, "quota.sessions", 1, kMaxInt));
    q.sessions = static_cast<std::uint64_t>(v);
  }
  if (const toml::node* n = t.get("audit_bytes_per_day")) {
    MOAT_ASSIGN_OR_RETURN(std::int64_t v,
                          r.quantity(*n, "quota.audit_bytes_per_day", /*duration=*/false));
    q.audit_bytes_per_day = static_cast<std::uint64_t>(v);
  }
  if (const toml::node* n = t.get("memory")) {
    MOAT_ASSIGN_OR_RETURN(std::int64_t v, r.quantity(*n, "quota.memory", /*duration=*/false));
    q.memory_bytes = static_cast<std::uint64_t>(v);
  }
  if (const toml::node* n = t.get("pids")) {
    MOAT_ASSIGN_OR_RETURN(std::int64_t v, r.integer(*n, "quota.pids", 1, kMaxInt));
    q.pids = static_cast<std::uint64_t>(v);
  }
  return {};
}

}  // namespace

Result<MoatdConfig> parse_moatd_config(std::string_view text, const std::string& file) {
  MOAT_ASSIGN_OR_RETURN(toml::table top, policy::parse_toml_text(text, file));
  TomlReader r(file, /*unknown_keys_are_errors=*/true, nullptr);
  MOAT_TRY(r.check_keys(top, {"system", "quota"}, ""));
  MoatdConfig c;
  c.file = file;
  if (const toml::node* n = top.get("system")) {
    MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table(*n, "system"));
    MOAT_TRY(read_system(r, *t, c));
  }
  if (const toml::node* n = top.get("quota")) {
    MOAT_ASSIGN_OR_RETURN(const toml::table* t, r.table(*n, "quota"));
    MOAT_TRY(read_quota(r, *t, c.quota));
  }
  return c;
}

Result<MoatdConfig> load_moatd_config(const std::string& path) {
  auto fd = sys::open_path(path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
  if (!fd && fd.error().code == ENOENT) return MoatdConfig{};
  if (!fd) return fail(fd.error());
  MOAT_ASSIGN_OR_RETURN(std::string text, sys::read_to_end(fd->get(), policy::kMaxPolicyFileBytes));
  return parse_moatd_config(text, path);
}

Result<std::string> configured_system_socket() {
  MOAT_ASSIGN_OR_RETURN(MoatdConfig config, load_moatd_config(moatd_config_path()));
  return config.socket;
}

}  // namespace moat::sandbox

// sandbox/session_description.cc: a session's description to JSON, and the init's from kReady.
// The keys are the ones the session's hand-built JSON always had (nlohmann sorts an object's
// keys, so session.start's bytes follow).
#include "sandbox/session_description.h"

#include "base/byte_strings.h"
#include "base/json_field.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

template <typename T>
void put(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

constexpr std::string_view kWhat = "session init's description";

Error bad(const std::string& field, const char* type) { return field_error(kWhat, field, type); }

template <typename T>
Result<std::optional<T>> opt(const json& j, const char* key, bool (json::*is)() const,
                             const char* type) {
  return optional_field<T>(j, key, is, type, kWhat);
}

Result<SkippedLayers> skipped_from(const json& j) {
  SkippedLayers out;
  auto it = j.find("skipped");
  if (it == j.end()) return out;
  if (!it->is_object()) return fail(bad("skipped", "an object"));
  for (const auto& [layer, why] : it->items()) {
    if (!why.is_string()) return fail(bad("skipped." + layer, "a string"));
    out[layer] = why.get<std::string>();
  }
  return out;
}

}  // namespace

json to_json(const InitLayers& l) {
  json j = json::object();
  put(j, "seccomp", l.seccomp);
  put(j, "exec_watch", l.exec_watch);
  put(j, "landlock", l.landlock);
  put(j, "landlock_abi", l.landlock_abi);
  put(j, "landlock_scoped", l.landlock_scoped);
  if (!l.skipped.empty()) j["skipped"] = l.skipped;
  return j;
}

json to_json(const SessionDescription& d) {
  json j = to_json(d.layers);
  for (const std::string& ns : d.namespaces) j[ns] = true;
  j["rootless"] = d.rootless;
  j["uid_map"] = d.uid_map;
  j["idmap"] = d.idmap;
  j["cgroup"] = d.cgroup;
  put(j, "cgroup_dirs", d.cgroup_dirs);
  j["skipped"] = d.layers.skipped;  // always there, {} when nothing was skipped
  if (d.pooled) j["pooled"] = true;
  return j;
}

Result<InitLayers> init_layers_from_text(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return fail(Error{0, std::string(kWhat) + ": not a JSON object"});
  j = decode_byte_strings(std::move(j));
  InitLayers l;
  const char* kBool = "a boolean";
  MOAT_ASSIGN_OR_RETURN(l.seccomp, (opt<bool>(j, "seccomp", &json::is_boolean, kBool)));
  MOAT_ASSIGN_OR_RETURN(l.exec_watch, (opt<bool>(j, "exec_watch", &json::is_boolean, kBool)));
  MOAT_ASSIGN_OR_RETURN(l.landlock, (opt<bool>(j, "landlock", &json::is_boolean, kBool)));
  MOAT_ASSIGN_OR_RETURN(l.landlock_abi,
                        (opt<int>(j, "landlock_abi", &json::is_number_integer, "an integer")));
  MOAT_ASSIGN_OR_RETURN(l.landlock_scoped,
                        (opt<bool>(j, "landlock_scoped", &json::is_boolean, kBool)));
  MOAT_ASSIGN_OR_RETURN(l.skipped, skipped_from(j));
  return l;
}

}  // namespace moat::sandbox

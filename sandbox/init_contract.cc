// sandbox/init_contract.cc: the moatd <-> init records' encoders and decoders (see
// init_contract.h).
#include "sandbox/init_contract.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/byte_strings.h"
#include "base/sys.h"

namespace moat::sandbox {
namespace {

using json = nlohmann::json;

struct KindName {
  WorkerKind kind;
  const char* name;
};
constexpr KindName kKindNames[] = {{WorkerKind::kExec, "exec"},
                                   {WorkerKind::kHandler, "handler"},
                                   {WorkerKind::kCreateFile, "create"}};

const char* kind_name(WorkerKind kind) {
  for (const KindName& k : kKindNames)
    if (k.kind == kind) return k.name;
  return "";
}

Error field_error(const char* field, const char* accepted) {
  return Error::msg(std::string("call request field '") + field + "' must be " + accepted);
}

Result<WorkerKind> decode_kind(const json& m) {
  auto it = m.find("kind");
  if (it != m.end() && it->is_string())
    for (const KindName& k : kKindNames)
      if (*it == k.name) return k.kind;
  return fail(field_error("kind", "\"exec\", \"handler\" or \"create\""));
}

Result<std::string> optional_string(const json& m, const char* field) {
  auto it = m.find(field);
  if (it == m.end()) return std::string();
  if (!it->is_string()) return fail(field_error(field, "a string"));
  return it->get<std::string>();
}

Result<std::vector<std::string>> decode_argv(const json& m) {
  auto it = m.find("argv");
  if (it == m.end()) return std::vector<std::string>{};
  if (!it->is_array()) return fail(field_error("argv", "an array of strings"));
  std::vector<std::string> argv;
  for (const json& w : *it) {
    if (!w.is_string()) return fail(field_error("argv", "an array of strings"));
    argv.push_back(w.get<std::string>());
  }
  return argv;
}

Result<std::map<std::string, std::string>> decode_env(const json& m) {
  std::map<std::string, std::string> env;
  auto it = m.find("env");
  if (it == m.end()) return env;
  if (!it->is_object()) return fail(field_error("env", "an object of string values"));
  for (const auto& [name, value] : it->items()) {
    if (!value.is_string()) return fail(field_error("env", "an object of string values"));
    env[name] = value.get<std::string>();
  }
  return env;
}

Result<bool> decode_terminal(const json& m) {
  auto it = m.find("terminal");
  if (it == m.end()) return false;
  if (!it->is_boolean()) return fail(field_error("terminal", "true or false"));
  return it->get<bool>();
}

// The keys of "limits", each with its field of CallLimits.
struct LimitKey {
  const char* name;
  std::uint64_t CallLimits::* field;
};
constexpr LimitKey kLimitKeys[] = {{"cpu_time_s", &CallLimits::cpu_time_s},
                                   {"memory_bytes", &CallLimits::memory_bytes},
                                   {"pids", &CallLimits::pids},
                                   {"file_size", &CallLimits::file_size},
                                   {"open_files", &CallLimits::open_files}};

json encode_limits(const CallLimits& l) {
  json m = json::object();
  for (const LimitKey& k : kLimitKeys)
    if (l.*k.field) m[k.name] = l.*k.field;
  return m;
}

Result<CallLimits> decode_limits(const json& m) {
  CallLimits l;
  auto it = m.find("limits");
  if (it == m.end()) return l;
  if (!it->is_object()) return fail(field_error("limits", "an object of positive integers"));
  for (const auto& [name, value] : it->items()) {
    const LimitKey* key = nullptr;
    for (const LimitKey& k : kLimitKeys)
      if (name == k.name) key = &k;
    if (key == nullptr)
      return fail(Error::msg("call request field 'limits' has the key '" + name +
                             "'; accepted: cpu_time_s, memory_bytes, pids, file_size, "
                             "open_files"));
    if (!value.is_number_unsigned() || value.get<std::uint64_t>() == 0)
      return fail(Error::msg("call request field 'limits." + name +
                             "' must be a positive integer"));
    l.*key->field = value.get<std::uint64_t>();
  }
  return l;
}

}  // namespace

std::string placeholder_message(const Placeholder& p) {
  std::uint64_t ids[2] = {static_cast<std::uint64_t>(p.dev), static_cast<std::uint64_t>(p.ino)};
  std::string msg(1, ctl_byte(CtlMsg::kPlaceholder));
  msg.append(reinterpret_cast<const char*>(ids), sizeof ids);
  return msg + p.relative;
}

std::optional<Placeholder> parse_placeholder_message(std::string_view msg) {
  std::uint64_t ids[2];
  if (msg.size() <= 1 + sizeof ids || msg[0] != ctl_byte(CtlMsg::kPlaceholder)) return std::nullopt;
  std::memcpy(ids, msg.data() + 1, sizeof ids);
  return Placeholder{std::string(msg.substr(1 + sizeof ids)), static_cast<dev_t>(ids[0]),
                     static_cast<ino_t>(ids[1])};
}

std::string CallRequest::encode() const {
  json m = {{"kind", kind_name(kind)}};
  if (kind == WorkerKind::kExec) {
    m["argv"] = argv;
    m["cwd"] = cwd;
    m["env"] = env;
    if (terminal) m["terminal"] = true;
    if (limits != CallLimits{}) m["limits"] = encode_limits(limits);
  }
  if (kind == WorkerKind::kCreateFile) m["path"] = path;
  if (!skip.empty()) m["skip"] = skip;
  return dump_lossless(m);
}

Result<CallRequest> CallRequest::decode(std::string_view text) {
  json m = json::parse(text, nullptr, false);
  if (m.is_discarded() || !m.is_object()) return fail("call request: not a JSON object");
  m = decode_byte_strings(std::move(m));
  CallRequest r;
  MOAT_ASSIGN_OR_RETURN(r.kind, decode_kind(m));
  MOAT_ASSIGN_OR_RETURN(r.argv, decode_argv(m));
  if (r.kind == WorkerKind::kExec && r.argv.empty())
    return fail(field_error("argv", "a non-empty array of strings for an exec"));
  MOAT_ASSIGN_OR_RETURN(r.cwd, optional_string(m, "cwd"));
  MOAT_ASSIGN_OR_RETURN(r.env, decode_env(m));
  MOAT_ASSIGN_OR_RETURN(r.terminal, decode_terminal(m));
  MOAT_ASSIGN_OR_RETURN(r.limits, decode_limits(m));
  MOAT_ASSIGN_OR_RETURN(r.path, optional_string(m, "path"));
  MOAT_ASSIGN_OR_RETURN(r.skip, optional_string(m, "skip"));
  return r;
}

Result<void> send_call_request(int channel, const CallRequest& request) {
  const std::string frame = request.encode();
  const std::uint32_t len = static_cast<std::uint32_t>(frame.size());
  MOAT_TRY(sys::write_all(channel, &len, sizeof len));
  return sys::write_all(channel, frame.data(), frame.size());
}

Result<CallRequest> read_call_request(int channel) {
  std::uint32_t len = 0;
  auto got = sys::read_exact(channel, &len, sizeof len, false);
  if (!got) return fail(got.error().with_context("call request: length"));
  if (len > kMaxCallRequestBytes)
    return fail("call request: " + std::to_string(len) + " bytes; the limit is " +
                std::to_string(kMaxCallRequestBytes));
  std::string frame(len, '\0');
  if (auto body = sys::read_exact(channel, frame.data(), len, false); !body)
    return fail(body.error().with_context("call request"));
  return CallRequest::decode(frame);
}

}  // namespace moat::sandbox

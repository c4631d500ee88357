// sandbox/protocol.cc: frame encoding, incremental decoding, reading, and each message's
// encoder and decoder.
#include "sandbox/protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <type_traits>
#include <utility>

#include "base/check.h"
#include "base/json_depth.h"
#include "base/workspace_path.h"

namespace moat::sandbox {
namespace {

using nlohmann::json;

// One required field: its name and the JSON type it must have.
struct Field {
  const char* name;
  json::value_t type;
};

const char* type_name(json::value_t t) {
  switch (t) {
    case json::value_t::string: return "a string";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::number_unsigned:
    case json::value_t::number_integer: return "an integer";
    case json::value_t::boolean: return "a boolean";
    default: return "a value";
  }
}

bool has_type(const json& v, json::value_t want) {
  if (want == json::value_t::number_unsigned || want == json::value_t::number_integer)
    return v.is_number_integer();
  return v.type() == want;
}

Result<void> require_fields(const json& m, const std::string& type,
                            std::initializer_list<Field> fields) {
  for (const Field& f : fields) {
    auto it = m.find(f.name);
    if (it == m.end())
      return fail("'" + type + "' frame is missing the field '" + f.name + "' (" +
                  type_name(f.type) + ")");
    if (!has_type(*it, f.type))
      return fail("'" + type + "' frame field '" + f.name + "' must be " + type_name(f.type));
  }
  return {};
}

Result<std::string> frame_type(const json& m) {
  auto it = m.find("type");
  if (it == m.end() || !it->is_string())
    return fail(std::string("frame has no string field 'type'"));
  return it->get<std::string>();
}

constexpr auto kStr = json::value_t::string;
constexpr auto kObj = json::value_t::object;
constexpr auto kInt = json::value_t::number_integer;
constexpr auto kArr = json::value_t::array;
constexpr auto kBool = json::value_t::boolean;

// A string field's length in bytes, checked against its bound (the field's presence and
// type were checked before). The message names the field and the bound, never the value.
Result<void> require_at_most(const json& m, const std::string& what, const char* field,
                             std::size_t max) {
  auto it = m.find(field);
  if (it == m.end() || !it->is_string()) return {};
  const std::size_t n = it->get_ref<const std::string&>().size();
  if (n > max)
    return fail(what + " field '" + field + "' is " + std::to_string(n) +
                " bytes long; the limit is " + std::to_string(max));
  return {};
}

}  // namespace

std::string cut_utf8(std::string s, std::size_t max) {
  if (s.size() <= max) return s;
  // s[n] is the first byte dropped: back up while it continues a sequence.
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  return s + "...";
}

Result<std::string> try_encode_frame(const nlohmann::json& message) {
  // error_handler replace: a tool's output may hold invalid UTF-8; it must not throw here.
  std::string payload = message.dump(-1, ' ', false, json::error_handler_t::replace);
  if (payload.size() > kMaxFrameBytes)
    return fail("a frame of " + std::to_string(payload.size()) + " bytes exceeds the " +
                std::to_string(kMaxFrameBytes) + "-byte limit");
  const auto n = static_cast<std::uint32_t>(payload.size());
  std::string out;
  out.reserve(4 + payload.size());
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out += payload;
  return out;
}

std::string encode_frame(const nlohmann::json& message) {
  auto frame = try_encode_frame(message);
  MOAT_CHECK(frame.has_value());
  return std::move(*frame);
}

nlohmann::json error_frame(std::string message, const std::string& code, const std::string& id) {
  return ErrorMsg{std::move(message), code, id}.to_json();
}

Result<void> send_frame(int fd, const nlohmann::json& message) {
  MOAT_ASSIGN_OR_RETURN(const std::string frame, try_encode_frame(message));
  std::size_t off = 0;
  while (off < frame.size()) {
    const ssize_t n = ::send(fd, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::from_errno("send", errno, "frame"));
    off += static_cast<std::size_t>(n);
  }
  return {};
}

namespace {

// A buffer at most this large is kept between frames; a larger one (a large frame's) is
// given back once empty, so an idle connection costs moatd no more than this.
constexpr std::size_t kKeptBufferBytes = 256u << 10;

std::uint32_t announced_length(const char* p4) {
  const auto* p = reinterpret_cast<const unsigned char*>(p4);
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

}  // namespace

void FrameDecoder::feed(std::string_view bytes) {
  if (error_) return;
  // Compact before growing so a long-lived connection does not keep consumed bytes.
  if (pos_ > 0 && pos_ == buf_.size()) {
    if (buf_.capacity() > kKeptBufferBytes) std::string().swap(buf_);
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > (1u << 20)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  // Room for the frame being read, exactly: growing by doubling held up to twice a large
  // frame, and each step's copy left freed memory behind. An announcement over the limit
  // reserves nothing (next() refuses it).
  const std::size_t have = buf_.size() - pos_;
  if (have + bytes.size() >= 4) {
    char head[4];
    for (std::size_t i = 0; i < 4; ++i)
      head[i] = i < have ? buf_[pos_ + i] : bytes[i - have];
    const std::uint32_t n = announced_length(head);
    if (n <= max_frame_ && buf_.capacity() < pos_ + 4 + n)
      buf_.reserve(std::max(pos_ + 4 + std::size_t{n}, buf_.size() + bytes.size()));
  }
  buf_.append(bytes);
  peak_held_ = std::max(peak_held_, buf_.capacity());
}

bool FrameDecoder::holds_frame() const {
  return buffered() >= 4 && buffered() >= 4 + std::size_t{announced_length(buf_.data() + pos_)};
}

Result<std::optional<nlohmann::json>> FrameDecoder::next() {
  if (error_) return fail(*error_);
  if (pos_ > 0 && pos_ == buf_.size()) {  // every frame taken: an idle connection holds little
    if (buf_.capacity() > kKeptBufferBytes) std::string().swap(buf_);
    buf_.clear();
    pos_ = 0;
  }
  if (buffered() < 4) return std::optional<json>{};
  const std::uint32_t n = announced_length(buf_.data() + pos_);
  // Checked before waiting for the payload: a peer announcing 4 GiB gets its error at once
  // instead of making us buffer it.
  if (n > max_frame_) {
    error_ = Error::msg("frame of " + std::to_string(n) + " bytes exceeds the " +
                        std::to_string(max_frame_) + "-byte limit" +
                        (max_frame_ < kMaxFrameBytes ? " of a frame before 'hello'" : ""));
    return fail(*error_);
  }
  if (buffered() < 4 + std::size_t{n}) return std::optional<json>{};
  std::string_view payload(buf_.data() + pos_ + 4, n);
  pos_ += 4 + n;
  ++frames_;
  last_payload_ = n;
  if (json_nests_deeper_than(payload, static_cast<std::size_t>(kMaxJsonDepth))) {
    error_ = Error::msg("frame nests arrays and objects deeper than " +
                        std::to_string(kMaxJsonDepth) + " levels");
    return fail(*error_);
  }
  json parsed = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    // Re-parse with exceptions only to get the byte position for the message.
    std::string why = "malformed JSON";
    try {
      json reparsed = json::parse(payload);
      (void)reparsed;
    } catch (const json::exception& e) {
      // Not only parse_error: a number too large for a double (659e659) is out_of_range, and
      // an exception that escaped here would end moatd for every client (fuzz_protocol found
      // it).
      why = std::string("malformed JSON: ") + e.what();
    }
    // The parser's message quotes the token it stopped in, which may be most of the frame.
    error_ = Error::msg(cut_utf8(why, 512));
    return fail(*error_);
  }
  if (!parsed.is_object()) {
    error_ = Error::msg("frame is not a JSON object");
    return fail(*error_);
  }
  return std::optional<json>{std::move(parsed)};
}

namespace {

// A string field the message may carry: its value when present as a string, else `def`.
std::string string_or(const json& m, const char* field, std::string def = "") {
  auto it = m.find(field);
  return it != m.end() && it->is_string() ? it->get<std::string>() : def;
}

// An optional field, when present, must have its type (the frames moatd sends: the client
// uses their values, and a wrong one would otherwise throw there).
Result<void> optional_fields(const json& m, const std::string& type,
                             std::initializer_list<Field> fields) {
  for (const Field& f : fields) {
    auto it = m.find(f.name);
    if (it != m.end() && !has_type(*it, f.type))
      return fail("'" + type + "' frame field '" + f.name + "' must be " + type_name(f.type));
  }
  return {};
}

std::string frame_what(const char* type) { return std::string("'") + type + "' frame"; }

// One row per message a side may receive, in the order of its variant (and of its enum):
// the type's name and its decoder. Unknown types are refused naming every row.
template <typename Frame>
struct Row {
  const char* type;
  Result<Frame> (*decode)(const json& m, std::size_t payload_bytes);
};

template <typename Frame, typename Msg>
Result<Frame> decode_as(const json& m, std::size_t payload_bytes) {
  Result<Msg> msg = [&] {
    if constexpr (std::is_same_v<Msg, AnswerMsg>) return Msg::from_json(m, payload_bytes);
    else return Msg::from_json(m);
  }();
  if (!msg) return fail(msg.error());
  // Built in place and then filled: GCC 12 reports a vector in a moved-from alternative as
  // maybe used uninitialised (a false positive of -Wmaybe-uninitialized) otherwise.
  Result<Frame> frame(Frame(std::in_place_type<Msg>));
  std::get<Msg>(*frame) = std::move(*msg);
  return frame;
}

template <typename Frame, std::size_t... I>
constexpr auto rows_of(std::index_sequence<I...>) {
  return std::array<Row<Frame>, sizeof...(I)>{
      Row<Frame>{std::variant_alternative_t<I, Frame>::kType,
                 &decode_as<Frame, std::variant_alternative_t<I, Frame>>}...};
}

template <typename Frame>
Result<Frame> decode_frame(const json& m, std::size_t payload_bytes, const char* sender) {
  static constexpr auto kRows =
      rows_of<Frame>(std::make_index_sequence<std::variant_size_v<Frame>>());
  MOAT_ASSIGN_OR_RETURN(std::string type, frame_type(m));
  std::string names;
  for (const Row<Frame>& row : kRows) {
    if (type == row.type) return row.decode(m, payload_bytes);
    names += (names.empty() ? "" : ", ") + std::string(row.type);
  }
  return fail("unknown frame type '" + type.substr(0, 64) + "' (" + sender + " may send " + names +
              ")");
}

// The enums name the variants' alternatives by index.
static_assert(std::variant_size_v<ClientFrame> == std::size_t(ClientMessage::kExec) + 1);
static_assert(
    std::is_same_v<std::variant_alternative_t<std::size_t(ClientMessage::kAnswer), ClientFrame>,
                   AnswerMsg>);
static_assert(std::variant_size_v<ServerFrame> == std::size_t(ServerMessage::kMcpStatus) + 1);
static_assert(
    std::is_same_v<std::variant_alternative_t<std::size_t(ServerMessage::kError), ServerFrame>,
                   ErrorMsg>);

}  // namespace

// Client -> moatd.

json HelloMsg::to_json() const {
  json m = {
      {"type", kType}, {"version", version}, {"workspace", workspace}, {"headless", headless}};
  if (!client.empty()) m["client"] = client;
  if (network != NetworkRequest::kAsPolicyGrants) m["network"] = network == NetworkRequest::kOn;
  if (typed_exec) m["typed_exec"] = true;
  if (!binds.empty()) {
    json list = json::array();
    for (const BindMount& b : binds)
      list.push_back({{"source", b.source}, {"target", b.target}, {"writable", b.writable}});
    m["binds"] = std::move(list);
  }
  if (!env.empty()) m["env"] = env;
  return m;
}

namespace {

// One of hello.binds' paths: the text moatd will walk, so nothing that a rename could point
// elsewhere ("..", "."), and nothing longer than the kernel takes.
Result<std::string> bind_path(const json& b, const char* field) {
  auto it = b.find(field);
  if (it == b.end() || !it->is_string())
    return fail(std::string("'hello' frame field 'binds' needs a string '") + field +
                "' in each entry");
  const std::string& p = it->get_ref<const std::string&>();
  if (p.size() > kMaxPathBytes)
    return fail(std::string("'hello' frame field 'binds': a '") + field + "' is " +
                std::to_string(p.size()) + " bytes long; the limit is " +
                std::to_string(kMaxPathBytes));
  if (!is_normalized_absolute(p))
    return fail(std::string("'hello' frame field 'binds': each '") + field +
                "' must be an absolute path without '.', '..', '//', a trailing '/' or a NUL "
                "byte (\"/\" itself is refused)");
  return p;
}

Result<std::vector<BindMount>> hello_binds(const json& m) {
  std::vector<BindMount> binds;
  auto it = m.find("binds");
  if (it == m.end()) return binds;
  if (it->size() > kMaxBinds)
    return fail("'hello' frame field 'binds' holds " + std::to_string(it->size()) +
                " entries; the limit is " + std::to_string(kMaxBinds));
  for (const json& b : *it) {
    if (!b.is_object()) return fail(std::string("'hello' frame field 'binds' must hold objects"));
    BindMount bind;
    MOAT_ASSIGN_OR_RETURN(bind.source, bind_path(b, "source"));
    MOAT_ASSIGN_OR_RETURN(bind.target, bind_path(b, "target"));
    if (auto w = b.find("writable"); w != b.end()) {
      if (!w->is_boolean())
        return fail(std::string("'hello' frame field 'binds': 'writable' must be a boolean"));
      bind.writable = w->get<bool>();
    }
    binds.push_back(std::move(bind));
  }
  return binds;
}

// hello.env: an object of at most kMaxExecEnv variable names to strings without a NUL byte,
// names and values together at most kMaxHelloEnvBytes.
Result<std::map<std::string, std::string>> hello_env(const json& m) {
  std::map<std::string, std::string> env;
  auto it = m.find("env");
  if (it == m.end()) return env;
  const std::string what = "'hello' frame field 'env'";
  if (!it->is_object() || it->size() > kMaxExecEnv)
    return fail(what + " must be an object of at most " + std::to_string(kMaxExecEnv) +
                " variables");
  std::size_t bytes = 0;
  for (const auto& [name, value] : it->items()) {
    if (!is_env_name(name) || name.size() > kMaxToolNameBytes)
      return fail(what + ": \"" + name.substr(0, 64) +
                  "\" is not a variable name ([A-Za-z_][A-Za-z0-9_]*, at most 128 bytes)");
    if (!value.is_string()) return fail(what + ": the value of " + name + " must be a string");
    const std::string& v = value.get_ref<const std::string&>();
    if (v.find('\0') != std::string::npos)
      return fail(what + ": the value of " + name + " holds a NUL byte");
    bytes += name.size() + v.size();
    if (bytes > kMaxHelloEnvBytes)
      return fail(what + ": names and values come to more than " +
                  std::to_string(kMaxHelloEnvBytes) + " bytes");
    env[name] = v;
  }
  return env;
}

}  // namespace

Result<HelloMsg> HelloMsg::from_json(const json& m) {
  MOAT_TRY(require_fields(m, kType, {{"version", kInt}, {"workspace", kStr}}));
  MOAT_TRY(optional_fields(m, kType,
                           {{"network", kBool}, {"binds", kArr}, {"typed_exec", kBool}}));
  MOAT_TRY(require_at_most(m, frame_what(kType), "workspace", kMaxPathBytes));
  MOAT_TRY(require_at_most(m, frame_what(kType), "client", kMaxToolNameBytes));
  HelloMsg h;
  h.workspace = m.at("workspace").get<std::string>();
  // The path would end at the NUL in every system call: the workspace checked would not
  // be the one named.
  if (h.workspace.find('\0') != std::string::npos)
    return fail(std::string("'hello' frame field 'workspace' holds a NUL byte"));
  h.version = m.at("version").get<std::int64_t>();
  if (auto it = m.find("headless"); it != m.end() && it->is_boolean()) h.headless = it->get<bool>();
  h.client = string_or(m, "client");
  MOAT_ASSIGN_OR_RETURN(h.env, hello_env(m));
  if (auto it = m.find("network"); it != m.end())
    h.network = it->get<bool>() ? NetworkRequest::kOn : NetworkRequest::kOff;
  MOAT_ASSIGN_OR_RETURN(h.binds, hello_binds(m));
  h.typed_exec = m.value("typed_exec", false);
  return h;
}

json CallMsg::to_json() const {
  return {{"type", kType}, {"id", id}, {"tool", tool}, {"arguments", arguments}};
}

Result<CallMsg> CallMsg::from_json(const json& m) {
  MOAT_TRY(require_fields(m, kType, {{"id", kStr}, {"tool", kStr}, {"arguments", kObj}}));
  CallMsg c;
  c.id = m.at("id").get<std::string>();
  if (c.id.empty() || c.id.size() > kMaxCallIdBytes)
    return fail("'call' frame field 'id' must be 1 to " + std::to_string(kMaxCallIdBytes) +
                " characters");
  MOAT_TRY(require_at_most(m, frame_what(kType), "tool", kMaxToolNameBytes));
  // The arguments every tool echoes into replies, asks and the audit log.
  const json& args = m.at("arguments");
  MOAT_TRY(require_at_most(args, "'call' frame's arguments", "path", kMaxPathBytes));
  MOAT_TRY(require_at_most(args, "'call' frame's arguments", "command", kMaxCommandBytes));
  c.tool = m.at("tool").get<std::string>();
  c.arguments = args;
  return c;
}

json ExecMsg::to_json() const {
  json m = {{"type", kType}, {"id", id}, {"argv", argv}};
  if (!cwd.empty()) m["cwd"] = cwd;
  if (!env.empty()) m["env"] = env;
  if (timeout_s > 0) m["timeout"] = timeout_s;
  return m;
}

bool is_env_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

namespace {

Result<std::vector<std::string>> exec_argv(const json& words, std::size_t* bytes) {
  if (words.empty() || words.size() > kMaxExecArgs)
    return fail("'exec' frame field 'argv' must hold 1 to " + std::to_string(kMaxExecArgs) +
                " words");
  std::vector<std::string> argv;
  for (const json& w : words) {
    if (!w.is_string()) return fail(std::string("'exec' frame field 'argv' must hold strings"));
    argv.push_back(w.get<std::string>());
    *bytes += argv.back().size();
    if (argv.back().find('\0') != std::string::npos)
      return fail(std::string("'exec' frame field 'argv' holds a NUL byte"));
  }
  return argv;
}

Result<std::map<std::string, std::string>> exec_env(const json& m, std::size_t* bytes) {
  std::map<std::string, std::string> env;
  auto it = m.find("env");
  if (it == m.end()) return env;
  if (!it->is_object() || it->size() > kMaxExecEnv)
    return fail("'exec' frame field 'env' must be an object of at most " +
                std::to_string(kMaxExecEnv) + " string values");
  for (const auto& [name, value] : it->items()) {
    if (!value.is_string() || !is_env_name(name) || name.size() > kMaxToolNameBytes)
      return fail(
          std::string("'exec' frame field 'env' must map variable names ([A-Za-z_]"
                      "[A-Za-z0-9_]*, at most 128 bytes) to strings"));
    const std::string v = value.get<std::string>();
    if (v.find('\0') != std::string::npos)
      return fail(std::string("'exec' frame field 'env' holds a NUL byte"));
    *bytes += name.size() + v.size();
    env[name] = v;
  }
  return env;
}

}  // namespace

Result<ExecMsg> ExecMsg::from_json(const json& m) {
  MOAT_TRY(require_fields(m, kType, {{"id", kStr}, {"argv", kArr}}));
  MOAT_TRY(optional_fields(m, kType, {{"cwd", kStr}}));
  ExecMsg e;
  e.id = m.at("id").get<std::string>();
  if (e.id.empty() || e.id.size() > kMaxCallIdBytes)
    return fail("'exec' frame field 'id' must be 1 to " + std::to_string(kMaxCallIdBytes) +
                " characters");
  MOAT_TRY(require_at_most(m, frame_what(kType), "cwd", kMaxPathBytes));
  std::size_t bytes = 0;
  MOAT_ASSIGN_OR_RETURN(e.argv, exec_argv(m.at("argv"), &bytes));
  MOAT_ASSIGN_OR_RETURN(e.env, exec_env(m, &bytes));
  if (bytes > kMaxCommandBytes)
    return fail("'exec' frame's argv and env are " + std::to_string(bytes) +
                " bytes long; the limit is " + std::to_string(kMaxCommandBytes));
  e.cwd = string_or(m, "cwd");
  if (e.cwd.find('\0') != std::string::npos)
    return fail(std::string("'exec' frame field 'cwd' holds a NUL byte"));
  if (auto it = m.find("timeout"); it != m.end()) {
    if (!it->is_number() || it->get<double>() < 0 || !std::isfinite(it->get<double>()))
      return fail(std::string("'exec' frame field 'timeout' must be a number of seconds >= 0"));
    e.timeout_s = it->get<double>();
  }
  return e;
}

json CancelMsg::to_json() const { return {{"type", kType}, {"id", id}}; }

Result<CancelMsg> CancelMsg::from_json(const json& m) {
  MOAT_TRY(require_fields(m, kType, {{"id", kStr}}));
  MOAT_TRY(require_at_most(m, frame_what(kType), "id", kMaxCallIdBytes));
  return CancelMsg{m.at("id").get<std::string>()};
}

json AnswerMsg::to_json() const {
  return {{"type", kType},
          {"ask", ask},
          {"decision", allow ? "allow" : "deny"},
          {"scope", for_session ? "session" : "once"}};
}

Result<AnswerMsg> AnswerMsg::from_json(const json& m, std::size_t payload_bytes) {
  if (payload_bytes > kMaxAnswerBytes)
    return fail("'answer' frame of " + std::to_string(payload_bytes) + " bytes exceeds the " +
                std::to_string(kMaxAnswerBytes) + "-byte limit");
  MOAT_TRY(require_fields(m, kType, {{"ask", kStr}, {"decision", kStr}}));
  MOAT_TRY(require_at_most(m, frame_what(kType), "ask", kMaxAskIdBytes));
  const std::string d = m.at("decision").get<std::string>();
  if (d != "allow" && d != "deny")
    return fail(std::string("'answer' frame field 'decision' must be \"allow\" or \"deny\""));
  if (m.contains("scope") && m["scope"] != "once" && m["scope"] != "session")
    return fail(std::string("'answer' frame field 'scope' must be \"once\" or \"session\""));
  return AnswerMsg{m.at("ask").get<std::string>(), d == "allow",
                   string_or(m, "scope", "once") == "session"};
}

json ByeMsg::to_json() const { return {{"type", kType}}; }

Result<ByeMsg> ByeMsg::from_json(const json&) { return ByeMsg{}; }

json ConsoleMsg::to_json() const {
  return {{"type", kType}, {"session", session}, {"token", token}};
}

Result<ConsoleMsg> ConsoleMsg::from_json(const json& m) {
  MOAT_TRY(require_fields(m, kType, {{"session", kStr}, {"token", kStr}}));
  MOAT_TRY(require_at_most(m, frame_what(kType), "session", kMaxConsoleFieldBytes));
  MOAT_TRY(require_at_most(m, frame_what(kType), "token", kMaxConsoleFieldBytes));
  return ConsoleMsg{m.at("session").get<std::string>(), m.at("token").get<std::string>()};
}

// moatd -> client.

json McpServerStatus::to_json() const {
  json list = json::array();
  for (const Tool& t : tools) list.push_back({{"name", t.name}, {"decision", t.decision}});
  return {{"name", name},
          {"state", state},
          {"error", cut_utf8(error, kMaxErrorMessageBytes - 3)},  // with its "..."
          {"log", log},
          {"tools", list},
          {"restarts", restarts},
          {"max_restarts", max_restarts},
          {"tools_changed", tools_changed}};
}

namespace {

// McpServerStatus's state and restart counts: one of kMcpStates, 0 <= restarts <=
// max_restarts <= kMaxMcpRestartsShown.
Result<void> check_mcp_state(const json& j, const std::string& where, McpServerStatus& s) {
  MOAT_TRY(optional_fields(j, where, {{"restarts", kInt}, {"max_restarts", kInt},
                                      {"tools_changed", kBool}}));
  if (std::find(std::begin(kMcpStates), std::end(kMcpStates), s.state) == std::end(kMcpStates))
    return fail("'" + where +
                "' frame field 'state' must be one of \"started\", \"not started\", \"ended\", "
                "\"restarting\", \"failed\"");
  const auto count = [&](const char* field, int& out) -> Result<void> {
    const std::int64_t n = j.value(field, std::int64_t{0});
    if (n < 0 || n > kMaxMcpRestartsShown)
      return fail("'" + where + "' frame field '" + field + "' must be 0 to " +
                  std::to_string(kMaxMcpRestartsShown));
    out = static_cast<int>(n);
    return {};
  };
  MOAT_TRY(count("restarts", s.restarts));
  MOAT_TRY(count("max_restarts", s.max_restarts));
  if (s.restarts > s.max_restarts)
    return fail("'" + where + "' frame field 'restarts' must be at most its 'max_restarts'");
  s.tools_changed = j.value("tools_changed", false);
  return {};
}

}  // namespace

Result<McpServerStatus> McpServerStatus::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) return fail(where + " must be an object");
  MOAT_TRY(require_fields(j, where, {{"name", kStr}, {"state", kStr}}));
  MOAT_TRY(optional_fields(j, where, {{"error", kStr}, {"log", kStr}, {"tools", kArr}}));
  MOAT_TRY(require_at_most(j, where, "name", kMaxToolNameBytes));
  MOAT_TRY(require_at_most(j, where, "state", kMaxToolNameBytes));
  MOAT_TRY(require_at_most(j, where, "error", kMaxErrorMessageBytes));
  MOAT_TRY(require_at_most(j, where, "log", kMaxPathBytes));
  McpServerStatus s{j.at("name").get<std::string>(), j.at("state").get<std::string>(),
                    string_or(j, "error"), string_or(j, "log"), {}};
  MOAT_TRY(check_mcp_state(j, where, s));
  const json tools = j.value("tools", json::array());
  if (tools.size() > kMaxMcpStatusTools)
    return fail(where + " field 'tools' holds " + std::to_string(tools.size()) +
                " entries; the limit is " + std::to_string(kMaxMcpStatusTools));
  for (const json& t : tools) {
    const std::string at = where + ".tools[" + std::to_string(s.tools.size()) + "]";
    if (!t.is_object()) return fail(at + " must be an object");
    MOAT_TRY(require_fields(t, at, {{"name", kStr}, {"decision", kStr}}));
    MOAT_TRY(require_at_most(t, at, "name", kMaxToolNameBytes));
    MOAT_TRY(require_at_most(t, at, "decision", kMaxToolNameBytes));
    s.tools.push_back({t.at("name").get<std::string>(), t.at("decision").get<std::string>()});
  }
  return s;
}

json McpStatusMsg::to_json() const { return {{"type", kType}, {"server", server.to_json()}}; }

Result<McpStatusMsg> McpStatusMsg::from_json(const json& m) {
  MOAT_TRY(require_fields(m, kType, {{"server", kObj}}));
  MOAT_ASSIGN_OR_RETURN(McpServerStatus s,
                        McpServerStatus::from_json(m.at("server"), "mcp_status.server"));
  return McpStatusMsg{std::move(s)};
}

json WelcomeMsg::to_json() const {
  json specs = json::array();
  for (const tools::ToolSpec& t : tools) specs.push_back(t.to_json());
  json m = {{"type", kType},      {"version", version},     {"session", session},
            {"tools", specs},     {"workspace", workspace}, {"audit", audit},
            {"sandbox", sandbox}, {"policy", policy}};
  if (!console_token.empty()) m["console_token"] = console_token;
  if (!mcp_servers.empty()) {
    m["mcp_servers"] = json::array();
    for (const McpServerStatus& s : mcp_servers) m["mcp_servers"].push_back(s.to_json());
  }
  return m;
}

namespace {

// welcome.mcp_servers, each entry checked (McpServerStatus::from_json).
Result<std::vector<McpServerStatus>> welcome_mcp_servers(const json& m) {
  std::vector<McpServerStatus> out;
  const json list = m.value("mcp_servers", json::array());
  if (list.size() > kMaxMcpStatusServers)
    return fail("'welcome' frame field 'mcp_servers' holds " + std::to_string(list.size()) +
                " entries; the limit is " + std::to_string(kMaxMcpStatusServers));
  for (const json& j : list) {
    MOAT_ASSIGN_OR_RETURN(McpServerStatus s,
                          McpServerStatus::from_json(
                              j, "welcome.mcp_servers[" + std::to_string(out.size()) + "]"));
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

Result<WelcomeMsg> WelcomeMsg::from_json(const json& m) {
  MOAT_TRY(require_fields(m, kType, {{"version", kInt}, {"session", kStr}, {"tools", kArr}}));
  MOAT_TRY(optional_fields(m, kType,
                           {{"workspace", kStr},
                            {"audit", kStr},
                            {"console_token", kStr},
                            {"mcp_servers", kArr}}));
  WelcomeMsg w;
  w.version = m.at("version").get<std::int64_t>();
  w.session = m.at("session").get<std::string>();
  for (const json& t : m.at("tools"))
    if (auto spec = tools::ToolSpec::from_json(t)) w.tools.push_back(std::move(*spec));
  w.workspace = string_or(m, "workspace");
  w.audit = string_or(m, "audit");
  if (auto it = m.find("sandbox"); it != m.end()) w.sandbox = *it;
  if (auto it = m.find("policy"); it != m.end() && it->is_object()) w.policy = *it;
  w.console_token = string_or(m, "console_token");
  MOAT_ASSIGN_OR_RETURN(w.mcp_servers, welcome_mcp_servers(m));
  return w;
}

json ResultMsg::to_json() const {
  json m = result.to_json();
  m["type"] = kType;
  m["id"] = id;
  return m;
}

Result<ResultMsg> ResultMsg::from_json(const json& m) {
  MOAT_TRY(require_fields(m, kType, {{"id", kStr}, {"isError", kBool}, {"content", kArr}}));
  return ResultMsg{m.at("id").get<std::string>(), tools::ToolResult::from_json(m)};
}

json ProgressMsg::to_json() const {
  json m = {{"type", kType}, {"id", id}, {"chunk", chunk}};
  if (!decided.is_null()) m["decided"] = decided;
  return m;
}

Result<ProgressMsg> ProgressMsg::from_json(const json& m) {
  MOAT_TRY(require_fields(m, kType, {{"id", kStr}, {"chunk", kStr}}));
  ProgressMsg p{m.at("id").get<std::string>(), m.at("chunk").get<std::string>()};
  if (auto d = m.find("decided"); d != m.end() && !d->is_null()) {
    if (!d->is_object()) return fail(std::string("progress.decided: an object is accepted"));
    p.decided = *d;
  }
  return p;
}

json AskMsg::to_json() const {
  return {{"type", kType}, {"id", id}, {"ask", ask}, {"question", question}, {"rule", rule}};
}

Result<AskMsg> AskMsg::from_json(const json& m) {
  MOAT_TRY(require_fields(m, kType, {{"id", kStr}, {"ask", kStr}, {"question", kStr}}));
  AskMsg a{m.at("id").get<std::string>(), m.at("ask").get<std::string>(),
           m.at("question").get<std::string>(), json()};
  if (auto it = m.find("rule"); it != m.end()) a.rule = *it;
  return a;
}

json ErrorMsg::to_json() const {
  json e = {{"type", kType}, {"message", cut_utf8(message, kMaxErrorMessageBytes)}, {"code", code}};
  if (!id.empty()) e["id"] = cut_utf8(id, kMaxCallIdBytes);
  return e;
}

Result<ErrorMsg> ErrorMsg::from_json(const json& m) {
  MOAT_TRY(require_fields(m, kType, {{"message", kStr}}));
  MOAT_TRY(optional_fields(m, kType, {{"code", kStr}, {"id", kStr}}));
  return ErrorMsg{m.at("message").get<std::string>(), string_or(m, "code", "protocol"),
                  string_or(m, "id")};
}

std::string version_refusal(std::int64_t asked) {
  return "protocol version " + std::to_string(asked) + " is not supported (this moatd speaks " +
         std::to_string(kMinProtocolVersion) + " to " + std::to_string(kProtocolVersion) + ")";
}

namespace {

// A version-1 moatd's answers to a version-2 hello with an exec behind it, word for word (they
// may not change: they are how a moatd not yet upgraded says no). Its version check said
// "protocol version 2 is not supported (this moatd speaks 1)"; one older than the pipelining
// (328fedc) refused fds before its welcome; one of 328fedc to 24d6d8a fds in a read that held
// part of the hello only.
constexpr std::string_view kV1VersionRefusal = "protocol version 2 is not supported";
constexpr std::string_view kV1FdsRefusals[] = {
    "file descriptors before 'hello' (only an exec frame carries them",
    "file descriptors before a whole 'hello' (only an exec frame carries them",
};

}  // namespace

bool is_pipelining_refused(const ErrorMsg& e) {
  if (e.code != "protocol") return false;
  auto starts = [&](std::string_view with) { return e.message.rfind(with, 0) == 0; };
  return starts(kV1VersionRefusal) || starts(kV1FdsRefusals[0]) || starts(kV1FdsRefusals[1]);
}

json AttachedMsg::to_json() const { return {{"type", kType}, {"session", session}}; }

Result<AttachedMsg> AttachedMsg::from_json(const json& m) {
  MOAT_TRY(require_fields(m, kType, {{"session", kStr}}));
  return AttachedMsg{m.at("session").get<std::string>()};
}

Result<ClientFrame> decode_client_frame(const json& m, std::size_t payload_bytes) {
  return decode_frame<ClientFrame>(m, payload_bytes, "a client");
}

Result<ServerFrame> decode_server_frame(const json& m) {
  return decode_frame<ServerFrame>(m, 0, "a server");
}

Result<ClientMessage> validate_client_message(const json& m, std::size_t payload_bytes) {
  MOAT_ASSIGN_OR_RETURN(ClientFrame frame, decode_client_frame(m, payload_bytes));
  return static_cast<ClientMessage>(frame.index());
}

Result<ServerMessage> validate_server_message(const json& m) {
  MOAT_ASSIGN_OR_RETURN(ServerFrame frame, decode_server_frame(m));
  return static_cast<ServerMessage>(frame.index());
}

Result<std::optional<json>> FrameReader::read() {
  for (;;) {
    MOAT_ASSIGN_OR_RETURN(std::optional<json> frame, decoder_.next());
    if (frame) return frame;
    if (!fill()) return std::optional<json>{};
  }
}

bool FrameReader::fill() {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    return true;
  }
}

Result<std::optional<ServerFrame>> read_server_frame(FrameReader& reader) {
  MOAT_ASSIGN_OR_RETURN(std::optional<json> frame, reader.read());
  if (!frame) return std::optional<ServerFrame>{};
  MOAT_ASSIGN_OR_RETURN(ServerFrame decoded, decode_server_frame(*frame));
  return std::optional<ServerFrame>{std::move(decoded)};
}

}  // namespace moat::sandbox

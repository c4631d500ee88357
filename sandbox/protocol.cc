// sandbox/protocol.cc: frame encoding, incremental decoding and message validation.
#include "sandbox/protocol.h"

#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "base/check.h"

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
    case json::value_t::string:
      return "a string";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::number_unsigned:
    case json::value_t::number_integer:
      return "an integer";
    case json::value_t::boolean:
      return "a boolean";
    default:
      return "a value";
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

// Checked on the raw payload before parsing: deeper nesting than kMaxJsonDepth is refused
// without building anything. Brackets inside strings do not count.
bool nests_too_deep(std::string_view payload) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : payload) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
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
  json e = {{"type", "error"}, {"message", cut_utf8(std::move(message), kMaxErrorMessageBytes)},
            {"code", code}};
  if (!id.empty()) e["id"] = cut_utf8(id, kMaxCallIdBytes);
  return e;
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

void FrameDecoder::feed(std::string_view bytes) {
  if (error_) return;
  // Compact before growing so a long-lived connection does not keep consumed bytes.
  if (pos_ > 0 && pos_ == buf_.size()) {
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > (1u << 20)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  buf_.append(bytes);
}

Result<std::optional<nlohmann::json>> FrameDecoder::next() {
  if (error_) return fail(*error_);
  if (buffered() < 4) return std::optional<json>{};
  const auto* p = reinterpret_cast<const unsigned char*>(buf_.data() + pos_);
  const std::uint32_t n = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
                          (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
  // Checked before waiting for the payload: a peer announcing 4 GiB gets its error at once
  // instead of making us buffer it.
  if (n > kMaxFrameBytes) {
    error_ = Error::msg("frame of " + std::to_string(n) + " bytes exceeds the " +
                        std::to_string(kMaxFrameBytes) + "-byte limit");
    return fail(*error_);
  }
  if (buffered() < 4 + std::size_t{n}) return std::optional<json>{};
  std::string_view payload(buf_.data() + pos_ + 4, n);
  pos_ += 4 + n;
  ++frames_;
  last_payload_ = n;
  if (nests_too_deep(payload)) {
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

Result<ClientMessage> validate_client_message(const nlohmann::json& m, std::size_t payload_bytes) {
  MOAT_ASSIGN_OR_RETURN(std::string type, frame_type(m));
  if (type == "hello") {
    MOAT_TRY(require_fields(m, type, {{"version", kInt}, {"workspace", kStr}}));
    MOAT_TRY(require_at_most(m, "'" + type + "' frame", "workspace", kMaxPathBytes));
    MOAT_TRY(require_at_most(m, "'" + type + "' frame", "client", kMaxToolNameBytes));
    // The path would end at the NUL in every system call: the workspace checked would not
    // be the one named.
    if (m["workspace"].get_ref<const std::string&>().find('\0') != std::string::npos)
      return fail(std::string("'hello' frame field 'workspace' holds a NUL byte"));
    return ClientMessage::kHello;
  }
  if (type == "call") {
    MOAT_TRY(require_fields(m, type, {{"id", kStr}, {"tool", kStr}, {"arguments", kObj}}));
    if (m["id"].get_ref<const std::string&>().empty() || m["id"].get<std::string>().size() > kMaxCallIdBytes)
      return fail("'call' frame field 'id' must be 1 to " + std::to_string(kMaxCallIdBytes) +
                  " characters");
    MOAT_TRY(require_at_most(m, "'" + type + "' frame", "tool", kMaxToolNameBytes));
    // The arguments every tool echoes into replies, asks and the audit log.
    MOAT_TRY(require_at_most(m["arguments"], "'call' frame's arguments", "path", kMaxPathBytes));
    MOAT_TRY(require_at_most(m["arguments"], "'call' frame's arguments", "command",
                             kMaxCommandBytes));
    return ClientMessage::kCall;
  }
  if (type == "cancel") {
    MOAT_TRY(require_fields(m, type, {{"id", kStr}}));
    MOAT_TRY(require_at_most(m, "'" + type + "' frame", "id", kMaxCallIdBytes));
    return ClientMessage::kCancel;
  }
  if (type == "answer") {
    if (payload_bytes > kMaxAnswerBytes)
      return fail("'answer' frame of " + std::to_string(payload_bytes) +
                  " bytes exceeds the " + std::to_string(kMaxAnswerBytes) + "-byte limit");
    MOAT_TRY(require_fields(m, type, {{"ask", kStr}, {"decision", kStr}}));
    MOAT_TRY(require_at_most(m, "'" + type + "' frame", "ask", kMaxAskIdBytes));
    const std::string d = m["decision"].get<std::string>();
    if (d != "allow" && d != "deny")
      return fail(std::string("'answer' frame field 'decision' must be \"allow\" or \"deny\""));
    if (m.contains("scope") && m["scope"] != "once" && m["scope"] != "session")
      return fail(std::string("'answer' frame field 'scope' must be \"once\" or \"session\""));
    return ClientMessage::kAnswer;
  }
  if (type == "bye") return ClientMessage::kBye;
  if (type == "console") {
    MOAT_TRY(require_fields(m, type, {{"session", kStr}, {"token", kStr}}));
    MOAT_TRY(require_at_most(m, "'console' frame", "session", kMaxConsoleFieldBytes));
    MOAT_TRY(require_at_most(m, "'console' frame", "token", kMaxConsoleFieldBytes));
    return ClientMessage::kConsole;
  }
  return fail("unknown frame type '" + type.substr(0, 64) +
              "' (a client may send hello, call, cancel, answer, bye, console)");
}

Result<ServerMessage> validate_server_message(const nlohmann::json& m) {
  MOAT_ASSIGN_OR_RETURN(std::string type, frame_type(m));
  if (type == "welcome") {
    MOAT_TRY(require_fields(m, type, {{"version", kInt}, {"session", kStr}, {"tools", kArr}}));
    return ServerMessage::kWelcome;
  }
  if (type == "result") {
    MOAT_TRY(require_fields(m, type, {{"id", kStr}, {"isError", kBool}, {"content", kArr}}));
    return ServerMessage::kResult;
  }
  if (type == "progress") {
    MOAT_TRY(require_fields(m, type, {{"id", kStr}, {"chunk", kStr}}));
    return ServerMessage::kProgress;
  }
  if (type == "ask") {
    MOAT_TRY(require_fields(m, type, {{"id", kStr}, {"ask", kStr}, {"question", kStr}}));
    return ServerMessage::kAsk;
  }
  if (type == "error") {
    MOAT_TRY(require_fields(m, type, {{"message", kStr}}));
    return ServerMessage::kError;
  }
  if (type == "bye") return ServerMessage::kBye;
  if (type == "attached") {
    MOAT_TRY(require_fields(m, type, {{"session", kStr}}));
    return ServerMessage::kAttached;
  }
  return fail("unknown frame type '" + type.substr(0, 64) +
              "' (a server may send welcome, result, progress, ask, error, bye, attached)");
}

}  // namespace moat::sandbox

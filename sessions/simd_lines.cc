// sessions/simd_lines.cc: session lines through simdjson, converted to nlohmann on demand.
#include "sessions/simd_lines.h"

#include "sessions/message_dom.h"
#include "sessions/simd_errors.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace moat::sessions {
namespace {

std::string_view string_or_empty(simdjson::dom::element e) {
  std::string_view s;
  return e.get_string().get(s) == simdjson::SUCCESS ? s : std::string_view();
}

}  // namespace

void Unmap::operator()(char* p) const {
  if (p != nullptr) ::munmap(p, length);
}

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// A zeroed buffer of at least `capacity` bytes plus simdjson's padding.
Result<PaddedText> padded_buffer(size_t capacity) {
  const size_t unit = capacity >= kHugePage ? kHugePage : 4096;
  const size_t length = (capacity + simdjson::SIMDJSON_PADDING + unit - 1) / unit * unit;
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return fail(Error::from_errno("mmap", errno));
  // Only a hint: without transparent huge pages the buffer still works, just slower.
  if (unit == kHugePage) (void)::madvise(p, length, MADV_HUGEPAGE);
  PaddedText text;
  text.bytes = std::unique_ptr<char, Unmap>(static_cast<char*>(p), Unmap{length});
  return text;
}

}  // namespace

Result<PaddedText> read_padded(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail(Error::from_errno("fstat", errno));
  // The size is a first guess: the file may grow while it is read (a memfd reports 0 too).
  size_t capacity = static_cast<size_t>(st.st_size) + 4096;
  MOAT_ASSIGN_OR_RETURN(PaddedText text, padded_buffer(capacity));
  for (;;) {
    if (text.size == capacity) {
      capacity *= 2;
      MOAT_ASSIGN_OR_RETURN(PaddedText bigger, padded_buffer(capacity));
      std::memcpy(bigger.bytes.get(), text.bytes.get(), text.size);
      bigger.size = text.size;
      text = std::move(bigger);
    }
    const ssize_t n = ::read(fd, text.bytes.get() + text.size, capacity - text.size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Error::from_errno("reading the session file", errno));
    if (n == 0) break;
    text.size += static_cast<size_t>(n);
  }
  return text;  // the padding after the bytes is the mapping's zeroes
}

Result<std::string_view> PaddedArena::add(std::string_view bytes) {
  if (chunks_.empty() || chunks_.back().size + bytes.size() > capacity_) {
    capacity_ = std::max(kChunk, bytes.size());
    MOAT_ASSIGN_OR_RETURN(PaddedText chunk, padded_buffer(capacity_));
    chunks_.push_back(std::move(chunk));
  }
  PaddedText& chunk = chunks_.back();
  char* at = chunk.bytes.get() + chunk.size;
  std::memcpy(at, bytes.data(), bytes.size());
  chunk.size += bytes.size();
  return std::string_view(at, bytes.size());
}

struct LineParser::Impl {
  simdjson::dom::parser parser;
};

LineParser::LineParser() : impl_(std::make_unique<Impl>()) {}
LineParser::~LineParser() = default;

Result<LineKeys> LineParser::scan(std::string_view line) {
  simdjson::dom::element doc;
  // false: the text lies in a PaddedText, so simdjson may read past its end without a copy.
  if (auto err = impl_->parser.parse(line.data(), line.size(), false).get(doc))
    return fail(Error::msg(std::string("not valid JSON (") + simd_error_message(err) + ")"));
  simdjson::dom::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS)
    return fail(Error::msg("not a JSON object"));
  LineKeys keys;
  // One pass over the members; of two equal keys the last wins, as in parse().
  for (simdjson::dom::key_value_pair field : object) {
    if (field.key == "type") keys.type = string_or_empty(field.value);
    else if (field.key == "id") keys.id = string_or_empty(field.value);
    else if (field.key == "parentId") keys.parent_id = string_or_empty(field.value);
    else if (field.key == "message") {
      keys.has_message = true;
      keys.tool_calls = tool_call_role(field.value);
    }
  }
  return keys;
}

Result<nlohmann::json> LineParser::parse(std::string_view line) {
  simdjson::dom::element doc;
  if (auto err = impl_->parser.parse(line.data(), line.size(), false).get(doc))
    return fail(Error::msg(simd_error_message(err)));
  return to_nlohmann(doc);
}

Result<std::optional<nlohmann::json>> LineParser::parse_member(std::string_view line,
                                                               std::string_view key) {
  simdjson::dom::element doc;
  if (auto err = impl_->parser.parse(line.data(), line.size(), false).get(doc))
    return fail(Error::msg(simd_error_message(err)));
  simdjson::dom::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) return std::optional<nlohmann::json>();
  // The last of two equal keys, as nlohmann's parser keeps it.
  std::optional<nlohmann::json> member;
  for (simdjson::dom::key_value_pair field : object)
    if (field.key == key) member = to_nlohmann(field.value);
  return member;
}

}  // namespace moat::sessions

// agent/batch/repo_url.cc: a url repo's text to its parts, and what is refused with why: other
// schemes (moatd's proxy carries HTTP; file:// and local paths are `path =`), credentials (they
// would be written into every log), anything git or a shell could read as more than a URL.
#include "agent/batch/repo_url.h"

#include <cctype>

namespace moat::agent::batch {
namespace {

// Long enough for any hosting service's repository address.
constexpr std::size_t kMaxUrlBytes = 2048;
constexpr std::size_t kMaxRefBytes = 256;

constexpr const char* kAccepted =
    "; accepted: https://HOST[:PORT]/PATH or http://HOST[:PORT]/PATH, cloned through moatd's "
    "network proxy as the policy's [[network]] rules allow";

bool is_host_char(unsigned char c) { return std::isalnum(c) || c == '.' || c == '-'; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Failure refused(std::string_view text, const std::string& why) {
  return fail("\"" + std::string(text) + "\": " + why);
}

// A text with no scheme: a local path, or scp-like ssh (user@host:path).
Failure no_scheme(std::string_view text) {
  const auto colon = text.find(':'), slash = text.find('/');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon < slash))
    return refused(text,
                   "looks like an ssh address (HOST:PATH); ssh cannot pass moatd's HTTP proxy "
                   "and would need your keys in the sandbox" +
                       std::string(kAccepted));
  return refused(text, "a local path: give it as path = \"...\" instead of url");
}

Failure other_scheme(std::string_view text, const std::string& scheme) {
  if (scheme == "file")
    return refused(text,
                   "file:// names a local repository: give it as path = \"...\" (moat makes the "
                   "item's copy of a local repository itself)");
  return refused(text, scheme + ":// cannot pass moatd's network proxy, which carries HTTP only" +
                           std::string(kAccepted));
}

Result<void> check_authority(std::string_view text, std::string_view authority, RepoUrl& url) {
  if (authority.find('@') != std::string_view::npos)
    return refused(text,
                   "a URL with a user or a password in it is refused: it would be written to "
                   "results.jsonl, the report, the audit logs and the clone's command line; "
                   "clone a private repository yourself and give its path = \"...\"");
  const auto colon = authority.find(':');
  const std::string_view host = authority.substr(0, colon);
  bool ok = !host.empty() && host.size() <= 253 && host.front() != '.' && host.front() != '-';
  for (unsigned char c : host) ok = ok && is_host_char(c);
  if (!ok)
    return refused(text, "the host must be a name or an IPv4 address (A-Z a-z 0-9 . -)" +
                             std::string(kAccepted));
  url.host = lower(host);
  url.port = url.scheme == "https" ? 443 : 80;
  if (colon == std::string_view::npos) return {};
  const std::string_view port = authority.substr(colon + 1);
  int value = 0;
  ok = !port.empty() && port.size() <= 5;
  for (unsigned char c : port) {
    ok = ok && std::isdigit(c);
    value = value * 10 + (c - '0');
  }
  if (!ok || value < 1 || value > 65535)
    return refused(text, "the port must be a number from 1 to 65535");
  url.port = value;
  return {};
}

}  // namespace

Result<RepoUrl> parse_repo_url(std::string_view text) {
  if (text.empty()) return fail("an empty url" + std::string(kAccepted));
  if (text.size() > kMaxUrlBytes)
    return fail("a url longer than " + std::to_string(kMaxUrlBytes) + " bytes");
  for (unsigned char c : text)
    if (c <= ' ' || c == 0x7f || c == '\\' || c == '?' || c == '#' || c == '\'' || c == '"')
      return refused(text,
                     "a url may not hold spaces, control characters, quotes, '\\', '?' or '#'");
  const auto sep = text.find("://");
  if (sep == std::string_view::npos) return no_scheme(text);
  RepoUrl url;
  url.text = std::string(text);
  url.scheme = lower(text.substr(0, sep));
  if (url.scheme != "https" && url.scheme != "http") return other_scheme(text, url.scheme);
  const std::string_view rest = text.substr(sep + 3);
  const auto slash = rest.find('/');
  MOAT_TRY(check_authority(text, rest.substr(0, slash), url));
  if (slash == std::string_view::npos || rest.size() == slash + 1)
    return refused(text, "no repository path after the host" + std::string(kAccepted));
  url.path = std::string(rest.substr(slash));
  return url;
}

std::string default_url_id(const RepoUrl& url) {
  std::string p = url.path;
  while (!p.empty() && p.back() == '/') p.pop_back();
  std::string name = p.substr(p.rfind('/') + 1);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".git") == 0)
    name.resize(name.size() - 4);
  return name;
}

Result<void> check_ref(std::string_view ref) {
  bool ok = !ref.empty() && ref.size() <= kMaxRefBytes && ref.front() != '-' &&
            ref.front() != '/' && ref.back() != '/' && ref.find("..") == std::string_view::npos &&
            ref.find("//") == std::string_view::npos;
  for (unsigned char c : ref)
    ok = ok && (std::isalnum(c) || c == '.' || c == '_' || c == '-' || c == '/');
  if (ok) return {};
  return fail("\"" + std::string(ref) +
              "\" is not a ref moat accepts: a branch, tag or commit name of 1 to " +
              std::to_string(kMaxRefBytes) +
              " of A-Z a-z 0-9 . _ - / (not starting with '-' or '/', no '..')");
}

}  // namespace moat::agent::batch

// agent/trust_prompt.cc: the trust-on-first-use question for the project policy layer
// (POLICY.md lesson 4, Gemini CLI's trusted folders): asked again whenever the file changes.
#include "agent/trust_prompt.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "policy/layer.h"

namespace moat::agent {
namespace {

// One line from `fd`, without its newline; false at end of input before any byte.
bool read_answer(int fd, std::string& line) {
  line.clear();
  char c;
  for (;;) {
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return !line.empty();
    if (c == '\n') return true;
    line += c;
  }
}

bool is_yes(const std::string& answer) {
  std::string a;
  for (char c : answer)
    if (c != ' ' && c != '\t' && c != '\r')
      a += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return a == "y" || a == "yes";
}

std::string why_asked(const policy::ProjectTrust& t) {
  if (t.state == policy::TrustState::kChanged)
    return "it changed since you trusted it (pinned sha256 " + t.pinned + ")";
  return "it is not trusted yet";
}

}  // namespace

void settle_project_trust(const std::string& workspace, bool headless, int in_fd) {
  const std::string trust_dir = policy::default_trust_dir();
  auto t = policy::project_trust(workspace, trust_dir);
  if (!t) {
    std::fprintf(stderr, "moat: project policy: %s; it will not be loaded\n",
                 t.error().message().c_str());
    return;
  }
  if (t->state == policy::TrustState::kNoProjectPolicy || t->state == policy::TrustState::kTrusted)
    return;
  if (headless) {
    std::fprintf(stderr,
                 "moat: warning: project policy %s is skipped: %s, and headless runs never trust "
                 "implicitly (sha256 %s). To trust it: moat policy trust --workspace %s\n",
                 policy::project_files(*t).c_str(), why_asked(*t).c_str(), t->sha256.c_str(), workspace.c_str());
    return;
  }
  const bool one = t->imports.size() + (t->policy_sha256.empty() ? 0 : 1) == 1;
  std::fprintf(stderr,
               "moat: this workspace has a project policy, and %s:\n"
               "  %s  %s\n  sha256  %s\n"
               "Its rules and MCP servers join this session's policy (its denies and asks apply; "
               "its allows can loosen what the default asks about). Trust %s? [y/N] ",
               why_asked(*t).c_str(), one ? "file " : "files", policy::project_files(*t).c_str(),
               t->sha256.c_str(), one ? "this file" : "these files");
  std::fflush(stderr);
  std::string answer;
  if (!read_answer(in_fd, answer) || !is_yes(answer)) {
    std::fprintf(stderr, "moat: not trusted; the project policy is not loaded in this session\n");
    return;
  }
  if (auto r = policy::pin_project(workspace, trust_dir, t->sha256); !r) {
    std::fprintf(stderr, "moat: could not pin the project policy: %s; it is not loaded\n",
                 r.error().message().c_str());
    return;
  }
  std::fprintf(stderr, "moat: trusted; pinned sha256 %s in %s\n", t->sha256.c_str(),
               trust_dir.c_str());
}

}  // namespace moat::agent

// sandbox/git_identity.cc: reading the person's git identity on the host (see git_identity.h).
#include "sandbox/git_identity.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "base/sys.h"

namespace moat::sandbox {
namespace {

constexpr int kWaitMs = 5000;

// `git config --global -z --get-regexp ^user\.(name|email)$`'s output (each entry "key\nvalue\0"):
// one spawn for both keys, a hello's largest single cost after the sandbox. "" on any failure.
std::string global_identity(const std::string& home) {
  auto out = sys::make_pipe();
  if (!out) return "";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out->second.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addchdir_np(&actions, "/");  // no repository's config is read
  const std::string home_env = "HOME=" + home;
  char* argv[] = {const_cast<char*>("git"),          const_cast<char*>("config"),
                  const_cast<char*>("--global"),     const_cast<char*>("-z"),
                  const_cast<char*>("--get-regexp"), const_cast<char*>("^user\\.(name|email)$"),
                  nullptr};
  char* envp[] = {const_cast<char*>(home_env.c_str()),
                  const_cast<char*>("PATH=/usr/local/bin:/usr/bin:/bin"), nullptr};
  pid_t pid = -1;
  const int err = posix_spawn(&pid, "/usr/bin/git", &actions, nullptr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return "";
  out->second.reset();
  pollfd p{out->first.get(), POLLIN, 0};
  const bool answered = ::poll(&p, 1, kWaitMs) > 0;
  if (!answered) ::kill(pid, SIGKILL);
  auto text = answered ? sys::read_to_end(out->first.get(), 8192) : Result<std::string>("");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!text || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return "";
  return *text;
}

// The value of `key` in that output: its last entry, as `git config --get` gives it; "" when
// unset or when it holds a control character.
std::string value_of(const std::string& entries, const std::string& key) {
  std::string value;
  for (std::size_t at = 0; at < entries.size();) {
    std::size_t end = entries.find('\0', at);
    if (end == std::string::npos) end = entries.size();
    const std::string entry = entries.substr(at, end - at);
    if (entry.rfind(key + "\n", 0) == 0) value = entry.substr(key.size() + 1);
    at = end + 1;
  }
  for (unsigned char c : value)
    if (c < 0x20 || c == 0x7f) return "";
  return value;
}

// git-config(1): a value in double quotes, with `"` and `\` escaped.
std::string quoted_value(const std::string& v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

GitIdentity read_git_identity(const std::string& home) {
  if (home.empty() || home[0] != '/') return {};
  const std::string entries = global_identity(home);
  return {value_of(entries, "user.name"), value_of(entries, "user.email")};
}

std::string gitconfig_text(const GitIdentity& identity) {
  if (identity.name.empty() && identity.email.empty()) return "";
  std::string out = "[user]\n";
  if (!identity.name.empty()) out += "\tname = " + quoted_value(identity.name) + "\n";
  if (!identity.email.empty()) out += "\temail = " + quoted_value(identity.email) + "\n";
  return out;
}

}  // namespace moat::sandbox

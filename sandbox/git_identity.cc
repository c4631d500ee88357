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

// One `git config --global --get KEY`'s value without its newline; "" on any failure.
std::string global_value(const std::string& home, const char* key) {
  auto out = sys::make_pipe();
  if (!out) return "";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out->second.get(), STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addchdir_np(&actions, "/");  // no repository's config is read
  const std::string home_env = "HOME=" + home;
  char* argv[] = {const_cast<char*>("git"), const_cast<char*>("config"),
                  const_cast<char*>("--global"), const_cast<char*>("--get"),
                  const_cast<char*>(key), nullptr};
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
  auto text = answered ? sys::read_to_end(out->first.get(), 4096) : Result<std::string>("");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!text || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return "";
  std::string v = *text;
  if (!v.empty() && v.back() == '\n') v.pop_back();
  for (unsigned char c : v)
    if (c < 0x20 || c == 0x7f) return "";
  return v;
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
  return {global_value(home, "user.name"), global_value(home, "user.email")};
}

std::string gitconfig_text(const GitIdentity& identity) {
  if (identity.name.empty() && identity.email.empty()) return "";
  std::string out = "[user]\n";
  if (!identity.name.empty()) out += "\tname = " + quoted_value(identity.name) + "\n";
  if (!identity.email.empty()) out += "\temail = " + quoted_value(identity.email) + "\n";
  return out;
}

}  // namespace moat::sandbox

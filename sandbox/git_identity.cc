// sandbox/git_identity.cc: reading the person's git identity on the host (see git_identity.h).
#include "sandbox/git_identity.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <array>
#include <cctype>
#include <cerrno>
#include <ctime>
#include <system_error>
#include <thread>

#include "base/sys.h"

namespace moat::sandbox {
namespace {

constexpr int kWaitMs = 5000;
constexpr std::size_t kMaxConfigFile = 1 << 20;

// The files git's --global level reads with only HOME set (git-config(1) FILES).
std::string config_path(const std::string& home, int i) {
  return home + (i == 0 ? "/.gitconfig" : "/.config/git/config");
}

// The stamp of `path` as git would open it (symlinks followed). When it is absent, its nearest
// existing directory's (present false): a file that comes and goes there while git runs changes
// that. nullopt when stat fails for another reason than absence (then nothing is kept).
std::optional<ConfigFileStamp> stamp_of(std::string path) {
  struct stat st {};
  bool present = true;
  while (::stat(path.c_str(), &st) != 0) {
    if (errno != ENOENT || path.size() <= 1) return std::nullopt;
    present = false;
    path.resize(std::max<std::size_t>(path.rfind('/'), 1));
  }
  return ConfigFileStamp{present, policy::stamp_of(st)};
}

// Whether `path` may include another file: any "include" in it (case-insensitive), so an
// [include] or [includeIf "..."] section however it is spelled; true when it cannot be read.
bool may_include(const std::string& path) {
  auto fd = sys::open_path(path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
  if (!fd) return fd.error().code != ENOENT;
  auto text = sys::read_to_end(fd->get(), kMaxConfigFile);
  if (!text) return true;
  std::transform(text->begin(), text->end(), text->begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text->find("include") != std::string::npos;
}

// `git config --global -z --get-regexp ^user\.(name|email)$`'s output: one spawn for both keys.
// nullopt on any failure.
std::optional<std::string> run_git(const std::string& git, const std::string& home) {
  auto out = sys::make_pipe();
  if (!out) return std::nullopt;
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
  const int err = posix_spawn(&pid, git.c_str(), &actions, nullptr, argv, envp);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) return std::nullopt;
  out->second.reset();
  pollfd p{out->first.get(), POLLIN, 0};
  const bool answered = ::poll(&p, 1, kWaitMs) > 0;
  auto text = answered ? sys::read_to_end(out->first.get(), 8192) : Result<std::string>("");
  // Past 8 KiB git may be blocked writing the rest into the full pipe: it ends, not waited for.
  if (!answered || !text) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!text || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return *text;
}

// The value of `key` in git's output (each entry "key\nvalue\0"): its last entry, as
// `git config --get` gives it; "" when unset or when it holds a control character.
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

std::int64_t now_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

// How long after its last change a file's next change is sure to get another ctime: longer
// than its filesystem's timestamp granularity plus the kernel's clock tick (<= 10 ms). A ctime
// whose ns are not whole milliseconds is from a filesystem that stamps finer than 1 ms (tmpfs,
// ext4, xfs, btrfs): `fine` (100 ms) settles it. Any other may stamp in whole seconds (FAT in 2):
// 3 s.
std::int64_t settle_ns(const ConfigFileStamp& stamp, std::chrono::nanoseconds fine) {
  if (stamp.stat.ctime_ns % 1000000 != 0) return fine.count();
  return std::chrono::nanoseconds(std::chrono::seconds(3)).count();
}

// Whether an answer read after `stamps` were taken at `started` may be kept: both files settled
// then, and neither includes another file (whose stamp is not taken).
bool may_keep(const std::string& home, const std::array<ConfigFileStamp, 2>& stamps,
              std::int64_t started, std::chrono::nanoseconds fine) {
  for (int i = 0; i < 2; ++i)
    if (stamps[i].stat.ctime_ns >= started - settle_ns(stamps[i], fine) ||
        (stamps[i].present && may_include(config_path(home, i))))
      return false;
  return true;
}

}  // namespace

GitIdentityReader::GitIdentityReader(std::string git, std::chrono::nanoseconds settle)
    : git_(std::move(git)), settle_(settle) {}

// The stamps are taken before git runs: a write after them changes one (a settled file's next
// change gets a later ctime whatever the filesystem's timestamp granularity), so a kept answer
// is never older than the files it is kept for.
GitIdentity GitIdentityReader::read(const std::string& home) {
  if (home.empty() || home[0] != '/') return {};
  const std::int64_t started = now_ns();
  const auto first = stamp_of(config_path(home, 0));
  const auto second = stamp_of(config_path(home, 1));
  const bool stamped = first && second;
  {
    std::lock_guard lock(mu_);
    if (stamped && kept_ && kept_->home == home && kept_->stamps[0] == *first &&
        kept_->stamps[1] == *second)
      return kept_->identity;
  }
  const auto entries = run_git(git_, home);
  if (!entries) return {};
  const GitIdentity identity{value_of(*entries, "user.name"), value_of(*entries, "user.email")};
  if (!stamped || !may_keep(home, {*first, *second}, started, settle_)) return identity;
  std::lock_guard lock(mu_);
  kept_ = Kept{home, {*first, *second}, identity};
  return identity;
}

GitIdentity read_git_identity(const std::string& home) {
  // Never destroyed: a read ahead's thread may still use it while moatd exits.
  static GitIdentityReader& reader = *new GitIdentityReader;
  return reader.read(home);
}

std::future<GitIdentity> read_git_identity_ahead(const std::string& home) {
  static std::atomic<int> running{0};
  if (running.fetch_add(1) >= kMaxGitReadsAhead) {
    --running;
    return {};
  }
  // A packaged_task's future, unlike std::async's, does not wait for its thread when dropped.
  std::packaged_task<GitIdentity()> task([home] {
    GitIdentity identity = read_git_identity(home);
    --running;
    return identity;
  });
  std::future<GitIdentity> identity = task.get_future();
  try {
    std::thread(std::move(task)).detach();
  } catch (const std::system_error&) {
    --running;  // the task never ran
    return {};
  }
  return identity;
}

std::string gitconfig_text(const GitIdentity& identity) {
  if (identity.name.empty() && identity.email.empty()) return "";
  std::string out = "[user]\n";
  if (!identity.name.empty()) out += "\tname = " + quoted_value(identity.name) + "\n";
  if (!identity.email.empty()) out += "\temail = " + quoted_value(identity.email) + "\n";
  return out;
}

}  // namespace moat::sandbox

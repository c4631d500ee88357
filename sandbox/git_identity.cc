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

#include "base/moat_dirs.h"
#include "base/random.h"
#include "base/sys.h"
#include "sandbox/sys.h"

namespace moat::sandbox {
namespace {

constexpr int kWaitMs = 5000;
constexpr std::size_t kMaxConfigFile = 1 << 20;
// The kept file: its first line, and its size at most (git's answer is taken up to 8 KiB).
constexpr const char* kKeptFileMagic = "moat-git-identity/1";
constexpr std::size_t kMaxKeptFile = 16 << 10;

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

// The kept file's lines before the answer: what it is, the home and both stamps, one a line.
// "" when the home holds a newline (such an answer is not written).
std::string kept_file_key(const std::string& home, const std::array<ConfigFileStamp, 2>& stamps) {
  if (home.find('\n') != std::string::npos) return "";
  std::string key = std::string(kKeptFileMagic) + "\n" + home + "\n";
  for (const ConfigFileStamp& s : stamps)
    key += std::to_string(s.present) + " " + std::to_string(s.stat.dev) + " " +
           std::to_string(s.stat.ino) + " " + std::to_string(s.stat.size) + " " +
           std::to_string(s.stat.mtime_ns) + " " + std::to_string(s.stat.ctime_ns) + "\n";
  return key;
}

bool has_control_char(const std::string& v) {
  return std::any_of(v.begin(), v.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

// The answer in the kept file at `path` when it was kept for `key` (the same home and stamps),
// else nullopt: a file that is missing, a symlink, not regular, not this uid's, writable by
// another user, larger than any answer, or not exactly the key, a name and an email.
std::optional<GitIdentity> read_kept_file(const std::string& path, const std::string& key) {
  auto fd = sys::open_path(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      (st.st_mode & 077) != 0)
    return std::nullopt;
  auto text = sys::read_to_end(fd->get(), kMaxKeptFile);
  if (!text || text->compare(0, key.size(), key) != 0) return std::nullopt;
  const std::string answer = text->substr(key.size());  // "<name>\n<email>\n"
  if (std::count(answer.begin(), answer.end(), '\n') != 2 || answer.back() != '\n')
    return std::nullopt;
  const std::size_t name_end = answer.find('\n');
  GitIdentity kept{answer.substr(0, name_end),
                   answer.substr(name_end + 1, answer.size() - name_end - 2)};
  if (has_control_char(kept.name) || has_control_char(kept.email)) return std::nullopt;
  return kept;
}

// Writes `text` to `path` whole or not at all: a new 0600 file beside it, renamed over it. Its
// directory (moat's state directory) is made 0700 when missing. Failures leave the answer
// unkept: the next process runs git.
void write_kept_file(const std::string& path, const std::string& text) {
  auto suffix = random_hex(8);
  if (!suffix || !sys::make_dirs(path.substr(0, path.rfind('/')), 0700)) return;
  const std::string tmp = path + ".tmp-" + *suffix;
  auto fd = sys::open_path(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  if (!fd) return;
  const bool written = sys::write_all(fd->get(), text.data(), text.size()).has_value();
  fd->reset();
  if (!written || ::rename(tmp.c_str(), path.c_str()) != 0) ::unlink(tmp.c_str());
}

}  // namespace

GitIdentityReader::GitIdentityReader(std::string git, std::chrono::nanoseconds settle,
                                     std::string kept_file)
    : git_(std::move(git)), settle_(settle), kept_file_(std::move(kept_file)) {}

// The stamps are taken before git runs: a write after them changes one (a settled file's next
// change gets a later ctime whatever the filesystem's timestamp granularity), so a kept answer
// is never older than the files it is kept for.
GitIdentity GitIdentityReader::read(const std::string& home) {
  if (home.empty() || home[0] != '/') return {};
  const std::int64_t started = now_ns();
  const auto first = stamp_of(config_path(home, 0));
  const auto second = stamp_of(config_path(home, 1));
  const bool stamped = first && second;
  // Neither file is there: git has nothing to give (its --global level reads only these).
  if (stamped && !first->present && !second->present) return {};
  {
    std::lock_guard lock(mu_);
    if (stamped && kept_ && kept_->home == home && kept_->stamps[0] == *first &&
        kept_->stamps[1] == *second)
      return kept_->identity;
  }
  const std::string key =
      stamped && !kept_file_.empty() ? kept_file_key(home, {*first, *second}) : "";
  if (!key.empty())
    if (auto kept = read_kept_file(kept_file_, key)) {
      std::lock_guard lock(mu_);
      kept_ = Kept{home, {*first, *second}, *kept};
      return *kept;
    }
  const auto entries = run_git(git_, home);
  if (!entries) return {};
  const GitIdentity identity{value_of(*entries, "user.name"), value_of(*entries, "user.email")};
  if (!stamped || !may_keep(home, {*first, *second}, started, settle_)) return identity;
  if (!key.empty()) write_kept_file(kept_file_, key + identity.name + "\n" + identity.email + "\n");
  std::lock_guard lock(mu_);
  kept_ = Kept{home, {*first, *second}, identity};
  return identity;
}

std::string git_identity_kept_file() { return dirs::state() + "/git-identity"; }

GitIdentity read_git_identity(const std::string& home) {
  // Never destroyed: a read ahead's thread may still use it while moatd exits.
  static GitIdentityReader& reader =
      *new GitIdentityReader("/usr/bin/git", policy::kSettledAfter, git_identity_kept_file());
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

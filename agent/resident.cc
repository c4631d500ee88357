// agent/resident.cc: choosing a moatd, and the person's resident one (resident.h).
#include "agent/resident.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "base/sys.h"
#include "base/ticks.h"
#include "sandbox/moatd_config.h"

namespace moat::agent {
namespace {

std::string octal_mode(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

// Why `st` is not a resident moatd's directory; "" when it is one.
std::string refusal(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "is a symlink";
  if (!S_ISDIR(st.st_mode)) return "is not a directory";
  if (st.st_uid != ::geteuid())
    return "is owned by uid " + std::to_string(st.st_uid) + ", not " +
           std::to_string(::geteuid());
  if ((st.st_mode & 077) != 0) return "has mode " + octal_mode(st.st_mode) + ", not 0700";
  return {};
}

// Fails, naming `what` and `path` and what is accepted, unless `path` is a directory (not a
// symlink) of this uid with mode 0700.
Result<void> check_own_dir(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return fail(Error::from_errno("lstat", errno, path));
  if (std::string why = refusal(st); !why.empty())
    return fail(Error{EPERM, what + " " + path + " " + why +
                                 " (accepted: a directory of this uid with mode 0700)"});
  return {};
}

// Tries the socket once: connected, or the connect's error (ENOENT, ECONNREFUSED: none answers).
Result<std::unique_ptr<MoatdClient>> try_connect(const std::string& dir) {
  return MoatdClient::connect(dir + "/moatd.sock");
}

// The moatd just started accepts within kResidentStart; until then its socket is missing or
// refuses (ENOENT, ECONNREFUSED).
Result<std::unique_ptr<MoatdClient>> await_started(const std::string& dir) {
  const auto deadline = std::chrono::steady_clock::now() + ticks::kResidentStartTimeout;
  for (;;) {
    auto c = try_connect(dir);
    if (c || std::chrono::steady_clock::now() >= deadline) return c;
    std::this_thread::sleep_for(ticks::kResidentStart);
  }
}

}  // namespace

Result<MoatdChoice> choose_moatd(bool private_flag, const std::string& connect,
                                 bool private_only) {
  if (private_flag) return MoatdChoice{MoatdWay::kPrivate, {}};
  if (!connect.empty()) return MoatdChoice{MoatdWay::kConnect, connect};
  if (private_only) return MoatdChoice{MoatdWay::kPrivate, {}};
  MOAT_ASSIGN_OR_RETURN(std::string system, sandbox::configured_system_socket());
  if (!system.empty()) return MoatdChoice{MoatdWay::kSystem, system};
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] == '/') return MoatdChoice{MoatdWay::kResident, runtime};
  return MoatdChoice{MoatdWay::kPrivate, {}};
}

Result<std::string> resident_dir(const std::string& runtime_dir) {
  // The runtime directory first: one another uid may write lets them swap `moat` for a
  // symlink to a directory of theirs after it was checked (`su` keeps the caller's).
  MOAT_TRY(check_own_dir(runtime_dir, "$XDG_RUNTIME_DIR"));
  const std::string dir = runtime_dir + "/moat";
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return fail(Error::from_errno("mkdir", errno, dir));
  MOAT_TRY(check_own_dir(dir, "resident moatd directory"));
  return dir;
}

Result<std::unique_ptr<MoatdClient>> connect_resident(const std::string& dir) {
  if (auto c = try_connect(dir)) return c;
  const std::string lock_path = dir + "/moatd.lock";
  MOAT_ASSIGN_OR_RETURN(UniqueFd lock,
                        sys::open_path(lock_path, O_RDWR | O_CREAT | O_NOFOLLOW, 0600));
  // Held until this function returns: a second `moat` waits here, then finds this one's moatd.
  if (::flock(lock.get(), LOCK_EX) != 0) return fail(Error::from_errno("flock", errno, lock_path));
  if (auto c = try_connect(dir)) return c;
  const std::string socket = dir + "/moatd.sock";
  MOAT_TRY(MoatdClient::start_detached({"--socket", socket, "--owner-only", "--typed-exec",
                                        "--idle-exit", std::to_string(kResidentIdleExitS)},
                                       dir + "/moatd.log"));
  auto c = await_started(dir);
  if (!c)
    return fail("the resident moatd started at " + socket + " did not answer (" +
                c.error().message() + "); its log: " + dir + "/moatd.log");
  return c;
}

}  // namespace moat::agent

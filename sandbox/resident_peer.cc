// sandbox/resident_peer.cc: a resident moatd's checks of its client (resident_peer.h).
#include "sandbox/resident_peer.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

#include "base/log.h"
#include "base/sys.h"

namespace moat::sandbox {
namespace {

// The number after `key` at the start of a line of a /proc status-like text.
Result<long> field(std::string_view text, std::string_view key) {
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.substr(0, key.size()) != key) continue;
    line.remove_prefix(key.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    long v = 0;
    auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), v);
    if (ec == std::errc() && p != line.data()) return v;
    break;
  }
  return fail(Error{0, "no '" + std::string(key) + "' line"});
}

std::string read_text(const std::string& path) {
  auto text = sys::read_file(path);
  return text ? std::move(*text) : std::string();
}

// The pid a pidfd names in this process's pid namespace ("Pid:" in its fdinfo; -1 once it
// has exited).
Result<long> pid_of(int pidfd) {
  return field(read_text("/proc/self/fdinfo/" + std::to_string(pidfd)), "Pid:");
}

Result<PeerConfinement> confinement_of(int pidfd) {
  MOAT_ASSIGN_OR_RETURN(long pid, pid_of(pidfd));
  if (pid <= 0) return fail(Error{ESRCH, "the peer has exited"});
  const std::string status = read_text("/proc/" + std::to_string(pid) + "/status");
  MOAT_ASSIGN_OR_RETURN(PeerConfinement c, parse_confinement(status));
  // After the read: the pidfd's process is still alive, so `pid` was not reused meanwhile
  // and the status read was its own.
  if (::syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) != 0)
    return fail(Error::from_errno("pidfd_send_signal", errno, "0"));
  return c;
}

}  // namespace

Result<PeerConfinement> parse_confinement(std::string_view status) {
  MOAT_ASSIGN_OR_RETURN(long nnp, field(status, "NoNewPrivs:"));
  MOAT_ASSIGN_OR_RETURN(long seccomp, field(status, "Seccomp:"));
  return PeerConfinement{nnp != 0, static_cast<int>(seccomp)};
}

bool is_persons_peer(int sock, uid_t own_uid) {
  auto cred = peer_credentials(sock);
  if (!cred || cred->uid != own_uid) return false;
  auto pidfd = sys::peer_pidfd(sock);
  if (!pidfd) {
    MOAT_LOG_WARN("%s: exec frames judged as an agent's", pidfd.error().message().c_str());
    return false;
  }
  auto c = confinement_of(pidfd->get());
  if (!c) {
    MOAT_LOG_WARN("peer pid %d: %s: exec frames judged as an agent's", cred->pid,
                  c.error().message().c_str());
    return false;
  }
  return !c->no_new_privs && c->seccomp == 0;
}

Result<SupervisorOptions> options_for_peer(const SupervisorOptions& options, int sock,
                                           const PeerCred& peer) {
  if (options.owner_only && peer.uid != ::geteuid())
    return fail(Error{EACCES, "this moatd (--owner-only) serves uid " +
                                  std::to_string(::geteuid()) + " only; the client runs as uid " +
                                  std::to_string(peer.uid) + " (use your own moatd, or --private)"});
  if (!options.typed_exec_by_peer) return options;
  SupervisorOptions own = options;
  own.typed_exec = is_persons_peer(sock, ::geteuid());
  return own;
}

}  // namespace moat::sandbox

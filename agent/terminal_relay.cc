// agent/terminal_relay.cc: a pty between the person's terminal and the command (see
// terminal_relay.h).
#include "agent/terminal_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/sys.h"
#include "base/ticks.h"

namespace moat::agent {
namespace {

// The terminal's modes while raw, for a signal that ends this process before finish():
// tcsetattr is async-signal-safe.
termios g_saved_modes;
std::atomic<bool> g_raw{false};

void restore_and_die(int sig) {
  if (g_raw.load()) ::tcsetattr(STDIN_FILENO, TCSADRAIN, &g_saved_modes);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

bool write_all(int fd, const char* p, ssize_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, static_cast<std::size_t>(n));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= w;
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<TerminalRelay>> TerminalRelay::open_if_terminal() {
  std::unique_ptr<TerminalRelay> r(new TerminalRelay());
  int first = -1;
  for (int fd = 0; fd < 3; ++fd) {
    r->is_tty_[fd] = ::isatty(fd) == 1;
    if (r->is_tty_[fd] && first < 0) first = fd;
  }
  if (first < 0) return std::unique_ptr<TerminalRelay>();
  r->out_fd_ = r->is_tty_[1] ? 1 : r->is_tty_[2] ? 2 : -1;
  termios modes{};
  winsize size{};
  const bool have_modes = ::tcgetattr(first, &modes) == 0;
  const bool have_size = ::ioctl(first, TIOCGWINSZ, &size) == 0;
  int master = -1, slave = -1;
  if (::openpty(&master, &slave, nullptr, have_modes ? &modes : nullptr,
                have_size ? &size : nullptr) != 0)
    return fail(Error::from_errno("openpty", errno, "the command's terminal"));
  r->master_.reset(master);
  r->slave_.reset(slave);
  ::fcntl(master, F_SETFD, FD_CLOEXEC);
  ::fcntl(slave, F_SETFD, FD_CLOEXEC);
  MOAT_ASSIGN_OR_RETURN(sys::FdPair wake, sys::make_pipe());
  r->wake_[0] = std::move(wake.first);
  r->wake_[1] = std::move(wake.second);
  return r;
}

void TerminalRelay::stdio(int (&fds)[3]) const {
  for (int fd = 0; fd < 3; ++fd) fds[fd] = is_tty_[fd] ? slave_.get() : fd;
}

Result<void> TerminalRelay::start() {
  if (is_tty_[0] && ::tcgetattr(STDIN_FILENO, &saved_) == 0) {
    termios raw = saved_;
    ::cfmakeraw(&raw);
    g_saved_modes = saved_;
    g_raw = true;
    for (int sig : {SIGTERM, SIGHUP, SIGQUIT, SIGINT}) ::signal(sig, restore_and_die);
    if (::tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) != 0)
      return fail(Error::from_errno("tcsetattr", errno, "raw mode"));
    raw_ = true;
  }
  thread_ = std::thread([this] { relay(); });
  return {};
}

// The person resized the window: the command sees it (SIGWINCH from the pty) as it would.
void TerminalRelay::copy_size() {
  const int from = is_tty_[0] ? 0 : out_fd_;
  winsize now{}, pty{};
  if (from < 0 || ::ioctl(from, TIOCGWINSZ, &now) != 0) return;
  if (::ioctl(master_.get(), TIOCGWINSZ, &pty) == 0 &&
      (now.ws_row != pty.ws_row || now.ws_col != pty.ws_col))
    ::ioctl(master_.get(), TIOCSWINSZ, &now);
}

namespace {

constexpr auto kDrain = std::chrono::seconds(2);
constexpr int kSizeTick = static_cast<int>(ticks::kTerminalSize.count());

// poll(2)'s timeout until `when` (0 once it has passed; rounded up, so it wakes after it).
int ms_until(std::chrono::steady_clock::time_point when) {
  const auto left = when - std::chrono::steady_clock::now();
  return static_cast<int>(
      std::max<std::int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(left).count()));
}

}  // namespace

void TerminalRelay::relay() {
  char buf[16384];
  std::string shown;
  bool input_open = is_tty_[0], stop_seen = false;
  auto quiet_since = std::chrono::steady_clock::now();
  for (;;) {
    if (stopping_ && !stop_seen) {
      stop_seen = true;
      quiet_since = std::chrono::steady_clock::now();
    }
    pollfd p[3] = {{master_.get(), POLLIN, 0},
                   {wake_[0].get(), POLLIN, 0},
                   {input_open ? STDIN_FILENO : -1, POLLIN, 0}};
    // Awake for the window's size (a tick: base/ticks.h), and after finish() for the drain's end.
    const int n = ::poll(p, 3, stop_seen ? ms_until(quiet_since + kDrain) : kSizeTick);
    if (n < 0 && errno != EINTR) return;
    copy_size();
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t got = ::read(master_.get(), buf, sizeof buf);
      if (got <= 0 && errno != EINTR && errno != EAGAIN) return;  // EIO: every slave closed
      if (got > 0 && out_fd_ >= 0) {
        shown.clear();
        filter_.feed(std::string_view(buf, static_cast<std::size_t>(got)), shown);
        write_all(out_fd_, shown.data(), static_cast<ssize_t>(shown.size()));
      }
      quiet_since = std::chrono::steady_clock::now();
    }
    if (p[2].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t got = ::read(STDIN_FILENO, buf, sizeof buf);
      if (got <= 0) input_open = false;
      else write_all(master_.get(), buf, got);
    }
    if (p[1].revents) {
      char c;
      (void)::read(wake_[0].get(), &c, 1);
    }
    // After finish(): whatever the pty still holds is relayed; past kDrain of quiet, give up.
    if (stop_seen && std::chrono::steady_clock::now() - quiet_since >= kDrain) return;
  }
}

void TerminalRelay::finish() {
  if (!thread_.joinable() && !raw_) return;
  slave_.reset();  // with moatd's copy gone, the master reads EIO once the pty is drained
  stopping_ = true;
  if (wake_[1].valid()) (void)!::write(wake_[1].get(), "x", 1);
  if (thread_.joinable()) thread_.join();
  if (raw_) ::tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_);
  raw_ = false;
  g_raw = false;
}

}  // namespace moat::agent

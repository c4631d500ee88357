// agent/console.cc: the console process, and the loop's side of the split (console.h).
#include "agent/console.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <utility>

#include "agent/console_modes.h"
#include "agent/visible.h"
#include "base/sys.h"
#include "base/ticks.h"
#include "sandbox/protocol.h"

namespace moat::agent {
namespace {

pid_t g_console_pid = -1;
int g_signal_fd = -1;

// Signals become bytes on a pipe the console polls (the self-pipe trick): the handler only
// writes, which is async-signal-safe.
void note_signal(int sig) {
  const unsigned char b = static_cast<unsigned char>(sig);
  (void)!::write(g_signal_fd, &b, 1);
}

// sys::FdPair with ends named for what they do: the console's plumbing reads in r and w.
struct Pipe {
  UniqueFd r, w;
};

Result<Pipe> make_pipe() {
  MOAT_ASSIGN_OR_RETURN(sys::FdPair p, sys::make_pipe());
  return Pipe{std::move(p.first), std::move(p.second)};
}

// Every fd above 2 that is a terminal (the trust prompt's, a logger's): after the split
// the loop holds none, so it can neither read the person's keys nor draw on the screen.
Result<void> close_terminal_fds_in_child() {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return fail(Error::from_errno("opendir", errno, "/proc/self/fd"));
  std::vector<int> ttys;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::atoi(e->d_name);
    if (fd > 2 && fd != ::dirfd(d) && ::isatty(fd) == 1) ttys.push_back(fd);
  }
  ::closedir(d);
  for (int fd : ttys) UniqueFd{fd}.reset();
  return {};
}

Result<void> become_loop_in_child(Pipe& in, Pipe& out, Pipe& err, ConsoleOptions& o, int dumpable) {
  // The console made the process undumpable before the fork, for itself; the loop is as
  // dumpable as it was (a later identity switch clears it anyway).
  if (::prctl(PR_SET_DUMPABLE, dumpable, 0, 0, 0) != 0)
    return fail(Error::from_errno("prctl(PR_SET_DUMPABLE)", errno));
  // A session of its own, so no controlling terminal: /dev/tty does not open, TIOCSTI (which
  // types into the person's input) needs the caller's controlling terminal, and the
  // terminal's signals (Ctrl-C, Ctrl-Z, hang-up) reach the console only.
  if (::setsid() < 0) return fail(Error::from_errno("setsid", errno));
  UniqueFd null;
  int in_fd = in.r.get();
  if (is_headless(o.mode)) {
    MOAT_ASSIGN_OR_RETURN(null, sys::open_path("/dev/null", O_RDONLY));
    in_fd = null.get();
  }
  if (::dup2(in_fd, STDIN_FILENO) < 0 || ::dup2(out.w.get(), STDOUT_FILENO) < 0 ||
      ::dup2(err.w.get(), STDERR_FILENO) < 0)
    return fail(Error::from_errno("dup2", errno, "the console's pipes"));
  in = Pipe{};
  out = Pipe{};
  err = Pipe{};
  o.channel.reset();
  MOAT_TRY(close_terminal_fds_in_child());
  // stdout is a pipe now: keep its lines coming as they are written.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  return {};
}

// The console's half of the split: it waits on its fds and signals and hands what arrives to
// the mode's front end (console_front_end.h), for which it writes to the loop, answers moatd
// and signals the loop.
class Console final : public ConsoleLink {
 public:
  Console(ConsoleWires& w, const FrontEndMaker& make)
      : loop_(w.loop),
        input_(w.input),
        to_loop_(std::move(w.to_loop)),
        loop_out_(std::move(w.loop_out)),
        loop_err_(std::move(w.loop_err)),
        channel_(std::move(w.channel)),
        signals_(std::move(w.signals)),
        front_(make(*this)) {
    // A loop that stops reading must not block the console (and with it every answer).
    if (to_loop_.valid()) ::fcntl(to_loop_.get(), F_SETFL, O_NONBLOCK);
  }
  // Serves until the loop has exited; returns its wait status.
  int run();

  bool loop_reads() const override { return to_loop_.valid(); }
  bool write_to_loop(std::string_view bytes) override;
  void end_loop_input() override { to_loop_.reset(); }
  void send_answer(const std::string& ask, bool allow, bool for_session) override;
  void drain_loop_output() override;
  void signal_loop(int sig) override { ::kill(loop_, sig); }

 private:
  void wait_once();
  void read_stdin();
  void read_channel();
  void read_signals();
  int poll_timeout_ms() const;
  // Hands on what the loop wrote (its stdout to the front end, its stderr with its controls
  // made visible); false at end of file.
  bool pump(UniqueFd& from);
  void write_pending();
  void drain_after_exit();

  pid_t loop_;
  int input_;
  UniqueFd to_loop_, loop_out_, loop_err_, channel_, signals_;
  sandbox::FrameReader channel_frames_{channel_.get()};
  std::string err_carry_;
  std::unique_ptr<ConsoleFrontEnd> front_;  // never null: one per mode (console_modes.h)
};

int Console::run() {
  front_->start();
  int status = 0;
  while (::waitpid(loop_, &status, WNOHANG) != loop_) wait_once();
  drain_after_exit();
  front_->loop_ended();
  return status;
}

// One wait and what it brought. While a question is on the screen the loop's output waits in
// its pipes: what stands above the prompt is moatd's question, not text the loop printed to
// look like one.
void Console::wait_once() {
  front_->before_wait();
  pollfd fds[6];
  int n = 0;
  auto add = [&](int fd, short events) {
    fds[n] = pollfd{fd, events, 0};
    return n++;
  };
  const bool held = front_->holds_loop_output();
  const int sig = add(signals_.get(), POLLIN);
  const int in = front_->wants_stdin() ? add(input_, POLLIN) : -1;
  const int ch = channel_.valid() ? add(channel_.get(), POLLIN) : -1;
  const int out = loop_out_.valid() && !held ? add(loop_out_.get(), POLLIN) : -1;
  const int err = loop_err_.valid() && !held ? add(loop_err_.get(), POLLIN) : -1;
  const bool pending = to_loop_.valid() && !front_->for_loop().empty();
  const int to = pending ? add(to_loop_.get(), POLLOUT) : -1;
  if (::poll(fds, static_cast<nfds_t>(n), poll_timeout_ms()) <= 0) return;
  auto ready = [&](int i) { return i >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)); };
  if (ready(sig)) read_signals();
  if (ready(ch)) read_channel();
  if (ready(in)) read_stdin();
  // A question shown in this round (read_channel above) holds the loop's output back too.
  if (ready(out) && !front_->holds_loop_output() && !pump(loop_out_)) loop_out_.reset();
  if (ready(err) && !front_->holds_loop_output() && !pump(loop_err_)) loop_err_.reset();
  if (to >= 0 && (fds[to].revents & (POLLOUT | POLLERR | POLLHUP))) write_pending();
  front_->after_round();
}

// The loop has exited; what it wrote last is still in the pipes (read without waiting: a
// process it forked may hold them open).
void Console::drain_after_exit() {
  for (UniqueFd* fd : {&loop_out_, &loop_err_})
    if (fd->valid()) ::fcntl(fd->get(), F_SETFL, O_NONBLOCK);
  while (loop_out_.valid() && pump(loop_out_)) {}
  while (loop_err_.valid() && pump(loop_err_)) {}
}

// How long poll may sleep: as the front end asks, or without a signal pipe (it could not be
// made) until the next look for the loop's exit; else until an fd or a signal wakes it.
int Console::poll_timeout_ms() const {
  std::optional<std::chrono::milliseconds> wait = front_->wake_in();
  if (!signals_.valid()) wait = wait ? std::min(*wait, ticks::kForeground) : ticks::kForeground;
  return wait ? static_cast<int>(wait->count()) : -1;
}

bool Console::pump(UniqueFd& from) {
  char buf[65536];
  ssize_t n = ::read(from.get(), buf, sizeof buf);
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) return false;
  const std::string_view bytes(buf, static_cast<std::size_t>(n));
  if (&from == &loop_out_) {
    front_->loop_output(bytes);
    return true;
  }
  const std::string shown = visible(bytes, err_carry_);
  front_->erase();
  std::fwrite(shown.data(), 1, shown.size(), stderr);
  std::fflush(stderr);
  front_->draw();
  return true;
}

// The loop's output already in its pipes, handed on without waiting for more.
void Console::drain_loop_output() {
  for (UniqueFd* fd : {&loop_out_, &loop_err_}) {
    pollfd p{fd->get(), POLLIN, 0};
    while (fd->valid() && ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)))
      if (!pump(*fd)) fd->reset();
  }
}

void Console::read_signals() {
  unsigned char sigs[64];
  const ssize_t n = ::read(signals_.get(), sigs, sizeof sigs);
  for (ssize_t i = 0; i < n; ++i) {
    if (sigs[i] == SIGINT) front_->interrupt();
    // The loop ends; moatd sees its connection close and ends the session cleanly.
    if (sigs[i] == SIGTERM || sigs[i] == SIGHUP) ::kill(loop_, SIGTERM);
  }
}

void Console::read_stdin() {
  char buf[65536];
  const ssize_t n = ::read(input_, buf, sizeof buf);
  if (n < 0 && errno == EINTR) return;
  if (n <= 0) return front_->input_ended();
  front_->input(std::string_view(buf, static_cast<std::size_t>(n)));
}

bool Console::write_to_loop(std::string_view bytes) {
  return to_loop_.valid() &&
         ::write(to_loop_.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
}

// Bytes the front end holds for the loop (--rpc's checked commands), as its pipe takes them.
void Console::write_pending() {
  const std::string_view bytes = front_->for_loop();
  const ssize_t n = ::write(to_loop_.get(), bytes.data(), bytes.size());
  if (n < 0 && errno != EAGAIN && errno != EINTR) to_loop_.reset();  // the loop has gone
  if (n > 0) front_->sent_to_loop(static_cast<std::size_t>(n));
}

void Console::send_answer(const std::string& ask, bool allow, bool for_session) {
  if (channel_.valid())
    (void)sandbox::send_message(channel_.get(), sandbox::AnswerMsg{ask, allow, for_session});
}

void Console::read_channel() {
  bool broken = !channel_frames_.fill();
  while (!broken) {
    auto frame = channel_frames_.next();
    if (!frame) broken = true;
    if (!frame || !frame->has_value()) break;
    // A frame that is not moatd's is ignored; only a broken stream ends the channel.
    auto decoded = sandbox::decode_server_frame(**frame);
    if (!decoded) continue;
    if (const auto* ask = std::get_if<sandbox::AskMsg>(&*decoded)) {
      front_->ask(ask->ask, ask->question);
    } else if (const auto* error = std::get_if<sandbox::ErrorMsg>(&*decoded)) {
      std::fprintf(stderr, "moat: moatd (console channel): %s\n", error->message.c_str());
    }
  }
  if (!broken) return;
  // moatd ended the session (or broke the channel): nothing is left to answer.
  channel_.reset();
  front_->channel_ended();
}

[[noreturn]] void run_console_in_parent(pid_t loop, ConsoleOptions& o, Pipe& in, Pipe& out,
                                        Pipe& err) {
  for (int fd : o.loop_only_fds) UniqueFd{fd}.reset();
  in.r.reset();
  out.w.reset();
  err.w.reset();
  auto sigpipe = make_pipe();
  if (!sigpipe) {
    std::fprintf(stderr, "moat: console: %s\n", sigpipe.error().message().c_str());
    ::kill(loop, SIGKILL);
  }
  g_signal_fd = sigpipe ? sigpipe->w.get() : -1;
  if (g_signal_fd >= 0) ::fcntl(g_signal_fd, F_SETFL, O_NONBLOCK);
  struct sigaction sa {};
  sa.sa_handler = note_signal;
  sa.sa_flags = SA_RESTART;
  // SIGCHLD: the loop has exited; SIGCONT: the run may be in the foreground again (both only
  // wake the poll).
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGCONT}) ::sigaction(sig, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a loop gone away is seen by waitpid, not by dying
  ConsoleWires wires{loop, STDIN_FILENO, std::move(in.w), std::move(out.r), std::move(err.r),
                     std::move(o.channel), sigpipe ? std::move(sigpipe->r) : UniqueFd()};
  // Headless, the loop's stdin is /dev/null: nothing is written to it.
  if (is_headless(o.mode)) wires.to_loop.reset();
  const std::string first_prompt = o.first_prompt;
  const RunMode mode = o.mode;
  const int status = serve_console(std::move(wires), [&](ConsoleLink& link) {
    return make_console_front_end(mode, link, first_prompt);
  });
  // The private moatd writes session.end and its last checkpoint once the loop's connection
  // has closed: the run is over when that is on disk.
  if (o.moatd_pid > 0) {
    while (::waitpid(o.moatd_pid, nullptr, 0) < 0 && errno == EINTR) {}
  }
  std::fflush(nullptr);
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

}  // namespace

int serve_console(ConsoleWires wires, const FrontEndMaker& make) {
  return Console(wires, make).run();
}

Result<void> split_console_and_loop(ConsoleOptions options) {
  MOAT_ASSIGN_OR_RETURN(Pipe in, make_pipe());
  MOAT_ASSIGN_OR_RETURN(Pipe out, make_pipe());
  MOAT_ASSIGN_OR_RETURN(Pipe err, make_pipe());
  // Undumpable before the fork, so there is no moment when a loop could reach the console's
  // memory; the child sets its own flag back.
  const int dumpable = ::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
    return fail(Error::from_errno("prctl(PR_SET_DUMPABLE)", errno, "0"));
  g_console_pid = ::getpid();
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = ::fork();
  if (pid < 0) return fail(Error::from_errno("fork", errno, "the loop process"));
  if (pid == 0) return become_loop_in_child(in, out, err, options, dumpable < 0 ? 1 : dumpable);
  run_console_in_parent(pid, options, in, out, err);
}

Result<void> die_with_console() {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
    return fail(Error::from_errno("prctl(PR_SET_PDEATHSIG)", errno));
  // The console may have died before the signal was armed.
  if (::getppid() != g_console_pid) return fail(std::string("the console process has exited"));
  return {};
}

}  // namespace moat::agent

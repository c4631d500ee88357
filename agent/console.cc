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
#include <deque>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "agent/console_question.h"
#include "agent/line_editor.h"
#include "agent/rpc_console.h"
#include "agent/terminal_repl.h"
#include "agent/terminal_view.h"
#include "agent/visible.h"
#include "base/lf_lines.h"
#include "base/sys.h"
#include "sandbox/protocol.h"

namespace moat::agent {
namespace {

constexpr std::size_t kMaxLine = 64 * 1024;  // a line without end is taken in pieces
constexpr std::size_t kMaxHeldAnswers = 16;  // a script's answers, ahead of their question
// The console's poll wakes on its fds (the loop's pipes, stdin, moatd's channel) and on its
// signals (SIGCHLD: the loop's exit; SIGCONT: `fg` or `bg`); a question's guard ends at its
// deadline. One tick is left, while the run is in a background job: a terminal's foreground
// can change without a signal to this process (tcsetpgrp by another), and the run reads its
// terminal again once it is in the foreground.
constexpr std::chrono::milliseconds kForegroundTick{100};
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

class Console {
 public:
  Console(pid_t loop, ConsoleOptions& o, Pipe& in, Pipe& out, Pipe& err, UniqueFd signals)
      : loop_(loop),
        interactive_(!is_headless(o.mode)),
        to_loop_(std::move(in.w)),
        loop_out_(std::move(out.r)),
        loop_err_(std::move(err.r)),
        channel_(std::move(o.channel)),
        signals_(std::move(signals)),
        person_(is_typed(o.mode) && ::isatty(STDIN_FILENO) == 1),
        framed_(::isatty(STDERR_FILENO) == 1) {
    if (!interactive_) to_loop_.reset();
    // A loop that stops reading must not block the console (and with it every answer).
    if (to_loop_.valid()) ::fcntl(to_loop_.get(), F_SETFL, O_NONBLOCK);
    if (o.mode == RunMode::kRpc)
      rpc_ = std::make_unique<RpcConsole>(stdout, [this](const std::string& ask, bool allow,
                                                         bool for_session) {
        if (channel_.valid())
          (void)sandbox::send_message(channel_.get(), sandbox::AnswerMsg{ask, allow, for_session});
      });
    if (is_typed(o.mode))
      view_ = std::make_unique<TerminalView>(stdout, stderr, ::isatty(STDERR_FILENO) == 1);
    if (o.mode == RunMode::kTerminal) {
      view_->set_repl();
      repl_ = true;
      editing_ = person_;
      if (!o.first_prompt.empty()) to_loop({{"type", "prompt"}, {"message", o.first_prompt}}, true);
    }
  }
  // Serves until the loop has exited; returns its wait status.
  int run();

 private:
  bool stdin_wanted() const;
  void read_stdin();
  void take_line(std::string line);
  void read_channel();
  void show_question();
  void offer_choices();
  void discard_typed_ahead();
  void take_key(std::string_view keys);
  void end_of_input();
  void keys_mode(bool single);
  void sync_edit_mode();
  void edit(std::string_view keys);
  void drain_loop_output();
  int poll_timeout_ms() const;
  void interrupt_at_prompt();
  void answer(const std::optional<std::string>& line);
  void read_signals();
  // Copies what the loop wrote to `to`, its controls made visible; false at end of file.
  bool pump(UniqueFd& from, FILE* to, std::string& carry);
  void write_to_loop();
  // A terminal session: a command for the loop (`job`: a prompt or a compaction, a turn
  // runs), and the end the person asked for.
  void to_loop(const nlohmann::json& command, bool job);
  void end_session();

  pid_t loop_;
  bool interactive_;
  UniqueFd to_loop_, loop_out_, loop_err_, channel_, signals_;
  sandbox::FrameReader channel_frames_{channel_.get()};
  std::deque<std::pair<std::string, std::string>> asks_;  // ask id, question; front is shown
  bool shown_ = false;
  // A person at a terminal (stdin is one): an answer counts only once its question's choices
  // are shown, kAnswerGuard after the question; keys before that are discarded. With stdin a
  // pipe, a script answers, and its answers may come ahead of their questions (held_).
  const bool person_;
  const bool framed_;  // stderr is a terminal: the question is drawn behind kQuestionMark
  std::optional<std::chrono::steady_clock::time_point> guard_until_;  // choices not yet shown
  std::deque<std::string> held_;  // a script's answers, typed before their question came
  // A person's question is answered with one key: the terminal leaves canonical mode while it
  // is shown (its modes before, to restore), so y, s or n counts without Enter.
  std::optional<termios> line_mode_;
  bool stdin_eof_ = false;
  std::string partial_;
  std::string out_carry_, err_carry_;
  std::unique_ptr<RpcConsole> rpc_;     // `--rpc`
  std::unique_ptr<TerminalView> view_;  // a terminal run: the loop's events drawn
  int interrupts_ = 0;                  // Ctrl-C: the first cancels the turn, the second quits
  bool ending_ = false;                 // Ctrl-C at the prompt: a second one ends the session
  bool repl_ = false;                   // a terminal session (agent/terminal_repl.h)
  LoopCommands commands_;
  // A person at a terminal session's prompt edits the line (agent/line_editor.h): there only
  // the terminal is non-canonical (its modes before, to restore when a turn starts, a
  // question is drawn or the session ends).
  bool editing_ = false;
  std::optional<termios> edit_mode_;
  LineEditor editor_;
};

bool Console::stdin_wanted() const {
  if (!interactive_ || stdin_eof_) return false;
  if (rpc_) return rpc_->wants_input();
  // A run in a background job must not read its terminal: the read would stop the whole
  // process with SIGTTIN. It reads once it is in the foreground again.
  return ::isatty(STDIN_FILENO) != 1 || ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
}

int Console::run() {
  int status = 0;
  for (;;) {
    if (::waitpid(loop_, &status, WNOHANG) == loop_) break;
    sync_edit_mode();
    // The question's guard is over (a poll timeout may end it: no fd signals it).
    if (guard_until_ && std::chrono::steady_clock::now() >= *guard_until_) offer_choices();
    // While a question is on the screen the loop's output waits in its pipes: what stands
    // above the prompt is moatd's question, not text the loop printed to look like one.
    pollfd fds[6];
    int n = 0;
    auto add = [&](int fd) {
      fds[n] = pollfd{fd, POLLIN, 0};
      return n++;
    };
    const int sig = add(signals_.get());
    const int in = stdin_wanted() ? add(STDIN_FILENO) : -1;
    const int ch = channel_.valid() ? add(channel_.get()) : -1;
    const int out = loop_out_.valid() && !shown_ ? add(loop_out_.get()) : -1;
    const int err = loop_err_.valid() && !shown_ ? add(loop_err_.get()) : -1;
    const bool for_loop = rpc_ && to_loop_.valid() && !rpc_->for_loop().empty();
    const int to = for_loop ? n : -1;
    if (for_loop) fds[n++] = pollfd{to_loop_.get(), POLLOUT, 0};
    if (::poll(fds, static_cast<nfds_t>(n), poll_timeout_ms()) <= 0) continue;
    auto ready = [&](int i) { return i >= 0 && (fds[i].revents & (POLLIN | POLLHUP | POLLERR)); };
    if (ready(sig)) read_signals();
    if (ready(ch)) read_channel();
    if (ready(in)) read_stdin();
    // A question shown in this round (read_channel above) holds the loop's output back too.
    if (ready(out) && !shown_ && !pump(loop_out_, stdout, out_carry_)) loop_out_.reset();
    if (ready(err) && !shown_ && !pump(loop_err_, stderr, err_carry_)) loop_err_.reset();
    if (to >= 0 && (fds[to].revents & (POLLOUT | POLLERR | POLLHUP))) write_to_loop();
    if (view_ && !shown_) view_->tick();
    if (repl_ && !view_->busy()) interrupts_ = 0;  // the turn is over: Ctrl-C counts afresh
  }
  // The loop has exited; what it wrote last is still in the pipes (read without waiting:
  // a process it forked may hold them open).
  for (UniqueFd* fd : {&loop_out_, &loop_err_})
    if (fd->valid()) ::fcntl(fd->get(), F_SETFL, O_NONBLOCK);
  while (loop_out_.valid() && pump(loop_out_, stdout, out_carry_)) {}
  while (loop_err_.valid() && pump(loop_err_, stderr, err_carry_)) {}
  if (rpc_) rpc_->loop_output_ended();
  keys_mode(false);
  editing_ = false;
  sync_edit_mode();
  if (view_) view_->feed("\n");  // a last event without its LF
  if (view_) view_->ended();
  return status;
}

// How long poll may sleep: until the question's guard ends or the next look at the foreground;
// without either, until an fd or a signal wakes it.
int Console::poll_timeout_ms() const {
  using std::chrono::milliseconds;
  std::optional<milliseconds> wait;
  auto at_most = [&](milliseconds m) { wait = wait ? std::min(*wait, m) : m; };
  if (guard_until_)
    at_most(std::max(milliseconds(0), std::chrono::ceil<milliseconds>(
                                          *guard_until_ - std::chrono::steady_clock::now())));
  // No signal pipe (it could not be made): the loop's exit is found by looking.
  const bool background = interactive_ && !rpc_ && !stdin_eof_ && ::isatty(STDIN_FILENO) == 1 &&
                          ::tcgetpgrp(STDIN_FILENO) != ::getpgrp();
  if (!signals_.valid() || background) at_most(kForegroundTick);
  return wait ? static_cast<int>(wait->count()) : -1;
}

bool Console::pump(UniqueFd& from, FILE* to, std::string& carry) {
  char buf[65536];
  ssize_t n = ::read(from.get(), buf, sizeof buf);
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) return false;
  // --rpc: the loop's events are ASCII JSON lines (json_line), passed on whole.
  if (rpc_ && to == stdout) {
    rpc_->loop_output(std::string_view(buf, static_cast<std::size_t>(n)));
    return true;
  }
  // A terminal run: the loop's stdout is its events, drawn by the view.
  if (view_ && to == stdout) {
    view_->feed(std::string_view(buf, static_cast<std::size_t>(n)));
    return true;
  }
  const std::string shown = visible(std::string_view(buf, static_cast<std::size_t>(n)), carry);
  if (view_) view_->erase();
  std::fwrite(shown.data(), 1, shown.size(), to);
  std::fflush(to);
  if (view_) view_->draw();
  return true;
}

void Console::read_signals() {
  unsigned char sigs[64];
  const ssize_t n = ::read(signals_.get(), sigs, sizeof sigs);
  for (ssize_t i = 0; i < n; ++i) {
    if (sigs[i] == SIGINT) {
      // The first Ctrl-C cancels the turn (the loop's own handler: the session and the audit
      // log end cleanly); a second one ends the loop at once. A question on the screen is
      // declined, as moatd declines it when the call is cancelled. In a terminal session no
      // turn runs at the prompt: there Ctrl-C ends the session as Ctrl-D does.
      if (view_) view_->erase();
      if (repl_ && !view_->busy() && interrupts_ == 0) {
        interrupt_at_prompt();
      } else if (++interrupts_ == 1) {
        ::kill(loop_, SIGINT);
        if (interactive_ && !rpc_)
          std::fprintf(stderr, "\nmoat: cancelling the turn (Ctrl-C again to quit)\n");
      } else {
        ::kill(loop_, SIGTERM);
      }
      while (!asks_.empty()) answer(std::nullopt);
    } else if (sigs[i] == SIGTERM || sigs[i] == SIGHUP) {
      // The loop ends; moatd sees its connection close and ends the session cleanly.
      ::kill(loop_, SIGTERM);
    }
  }
}

// Ctrl-C at the prompt drops what was typed on the line (the terminal's line discipline does);
// only a second one, before another line is typed, ends the session, so a Ctrl-C meant for a
// turn that has just ended does not end the session with it.
void Console::interrupt_at_prompt() {
  if (ending_) return end_session();
  ending_ = true;
  editor_.clear();  // as the line discipline drops the line
  std::fputc('\n', stderr);
  view_->say("moat: Ctrl-C again to end the session (or Ctrl-D, /exit)");
  view_->show_prompt();
}

// --rpc: checked commands go to the loop as its pipe takes them; once the input has ended and
// they are all written, the loop sees its end.
void Console::write_to_loop() {
  const std::string& bytes = rpc_->for_loop();
  const ssize_t n = ::write(to_loop_.get(), bytes.data(), bytes.size());
  if (n > 0) rpc_->sent_to_loop(static_cast<std::size_t>(n));
  if (n < 0 && errno != EAGAIN && errno != EINTR) to_loop_.reset();  // the loop has gone
  if (stdin_eof_ && rpc_->for_loop().empty()) to_loop_.reset();
}

void Console::read_stdin() {
  char buf[65536];
  const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
  if (n < 0 && errno == EINTR) return;
  if (rpc_) {
    if (n > 0) return rpc_->input(std::string_view(buf, static_cast<std::size_t>(n)));
    rpc_->input_ended();
    stdin_eof_ = true;
    if (rpc_->for_loop().empty()) to_loop_.reset();
    return;
  }
  if (n <= 0) return end_of_input();
  if (guard_until_) return;  // keys pressed as the question appeared were not meant for it
  if (line_mode_ && shown_) return take_key(std::string_view(buf, static_cast<std::size_t>(n)));
  if (edit_mode_) return edit(std::string_view(buf, static_cast<std::size_t>(n)));
  take_lf_lines(partial_, std::string_view(buf, static_cast<std::size_t>(n)),
                [this](std::string line) { take_line(std::move(line)); });
  if (partial_.size() >= kMaxLine) {
    take_line(partial_.substr(0, kMaxLine));
    partial_.erase(0, kMaxLine);
  }
}

// A key at a question on the screen: y, s or n (either case) answers it, echoed; any other key
// is ignored. What follows the answering key (its habitual Enter left out) was typed after the
// answer: once no question is shown it is the prompt's, and Ctrl-D in it ends the input as at
// the prompt; while the next question is shown it is dropped (typed before that question).
void Console::take_key(std::string_view keys) {
  const std::size_t at = keys.find_first_of("ysnYSN");
  if (at == std::string_view::npos) return;
  const char eof = line_mode_ ? static_cast<char>(line_mode_->c_cc[VEOF]) : '\x04';
  // Keys already at the terminal are read before it leaves non-canonical mode: the line
  // discipline would not scan them again for Enter or Ctrl-D once canonical.
  std::string after(keys.substr(at + 1));
  char more[4096];
  for (pollfd p{STDIN_FILENO, POLLIN, 0}; ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN);) {
    const ssize_t n = ::read(STDIN_FILENO, more, sizeof more);
    if (n <= 0) break;
    after.append(more, static_cast<std::size_t>(n));
  }
  std::fprintf(stderr, "%c\n", keys[at]);
  answer(std::string(1, keys[at]));
  std::string_view rest = after;
  if (!rest.empty() && (rest[0] == '\n' || rest[0] == '\r')) rest.remove_prefix(1);
  if (shown_ || rest.empty()) return;
  const std::size_t end = rest.find(eof);
  take_lf_lines(partial_, rest.substr(0, end), [this](std::string l) { take_line(std::move(l)); });
  if (end != std::string_view::npos) end_of_input();
}

void Console::end_of_input() {
  if (!partial_.empty()) take_line(std::exchange(partial_, std::string()));
  if (repl_) view_->say("");  // Ctrl-D at the prompt: what follows starts on a line of its own
  // End of input: the loop gets it too, and every question, now or later, is declined.
  stdin_eof_ = true;
  to_loop_.reset();
  while (!asks_.empty()) answer(std::nullopt);
}

void Console::take_line(std::string line) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (shown_) return answer(line);
  ending_ = false;
  if (view_ && view_->command(line)) {  // /cost, /diff, /policy, /model
    if (repl_ && !view_->busy()) view_->show_prompt();
    return;
  }
  if (repl_ && !(view_->busy() && is_answer(line))) {
    const TypedLine t = read_typed_line(line, view_->busy());
    if (t.kind == TypedLine::Kind::kLoop) {
      const std::string type = t.command.value("type", "");
      return to_loop(t.command, type == "prompt" || type == "compact");
    }
    if (t.kind == TypedLine::Kind::kSay) view_->say(t.text);
    if (t.kind == TypedLine::Kind::kEnd) return end_session();
    if (!view_->busy()) view_->show_prompt();
    return;
  }
  // Typed ahead of a question: a sentence steers the loop. A script's answer waits for its
  // question; a person's answers only a question on the screen (issue 26, item 1: a "y" typed
  // at text made to look like a question must not approve the next real one).
  if (is_answer(line)) {
    if (person_) {
      const std::string note =
          "moat: no question is waiting, so \"" + visible(line) +
          "\" was not taken as an answer (moat's own questions are highlighted; answer one "
          "once its choices are shown)";
      if (view_) view_->say(note);
      else std::fprintf(stderr, "%s\n", note.c_str());
      return;
    }
    if (held_.size() < kMaxHeldAnswers) held_.push_back(std::move(line));
    return;
  }
  if (line.find_first_not_of(" \t") == std::string::npos || !to_loop_.valid()) return;
  line += '\n';
  if (::write(to_loop_.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    std::fprintf(stderr, "moat: the agent is not reading; the message was not delivered\n");
}

void Console::to_loop(const nlohmann::json& command, bool job) {
  if (!to_loop_.valid()) return;
  const std::string line = commands_.next(command);
  if (::write(to_loop_.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    std::fprintf(stderr, "moat: the agent is not reading; the line was not delivered\n");
    return;
  }
  if (job) view_->started();
}

// The loop sees its input end, finishes what runs and exits; the session and the audit log
// are closed as at the end of any run.
void Console::end_session() {
  stdin_eof_ = true;
  to_loop_.reset();
  while (!asks_.empty()) answer(std::nullopt);
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
      if (rpc_) {
        rpc_->ask(ask->ask, ask->question);
        continue;
      }
      asks_.emplace_back(ask->ask, ask->question);
      show_question();
    } else if (const auto* error = std::get_if<sandbox::ErrorMsg>(&*decoded)) {
      std::fprintf(stderr, "moat: moatd (console channel): %s\n", error->message.c_str());
    }
  }
  if (broken) {
    // moatd ended the session (or broke the channel): nothing is left to answer.
    channel_.reset();
    asks_.clear();
    if (rpc_) rpc_->asks_gone();
    shown_ = false;
    guard_until_.reset();
    keys_mode(false);
  }
}

void Console::show_question() {
  if (shown_ || asks_.empty()) return;
  if (!interactive_) return answer(std::nullopt);
  // What the loop wrote before moatd asked (the model's text, the call's line) comes first.
  drain_loop_output();
  if (view_) view_->erase();  // the running calls are drawn again once it is answered
  const std::string lines = question_lines(asks_.front().second, framed_);
  std::fwrite(lines.data(), 1, lines.size(), stderr);
  std::fflush(stderr);
  shown_ = true;
  sync_edit_mode();  // the terminal as it was, before the question's own mode
  if (person_ && !stdin_eof_) {
    // What was typed before the question came is not its answer; nor is a key pressed as it
    // appears: the choices, and with them the answer, come after the guard (offer_choices).
    keys_mode(true);
    discard_typed_ahead();
    guard_until_ = std::chrono::steady_clock::now() + kAnswerGuard;
    return;
  }
  const std::string choices = question_choices(framed_);
  std::fwrite(choices.data(), 1, choices.size(), stderr);
  std::fflush(stderr);
  if (!held_.empty()) {
    const std::string typed = std::move(held_.front());
    held_.pop_front();
    answer(typed);
  } else if (stdin_eof_) {
    answer(std::nullopt);  // nobody is left to type
  }
}

// The guard is over: what was typed during it is dropped, and the next line answers.
void Console::offer_choices() {
  guard_until_.reset();
  discard_typed_ahead();
  const std::string choices = question_choices(framed_);
  std::fwrite(choices.data(), 1, choices.size(), stderr);
  std::fflush(stderr);
}

// The console's part of a line and the terminal's: a canonical-mode terminal holds a line
// until Enter, so a "y" typed before the question would otherwise complete as its answer.
void Console::discard_typed_ahead() {
  partial_.clear();
  editor_.clear();
  ::tcflush(STDIN_FILENO, TCIFLUSH);
}

// The loop's output already in its pipes, drawn without waiting for more.
void Console::drain_loop_output() {
  for (auto [fd, to, carry] :
       {std::tuple(&loop_out_, stdout, &out_carry_), std::tuple(&loop_err_, stderr, &err_carry_)}) {
    pollfd p{fd->get(), POLLIN, 0};
    while (fd->valid() && ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)))
      if (!pump(*fd, to, *carry)) fd->reset();
  }
}

// `single`: the terminal hands each key over as it is typed, unechoed (Ctrl-C still signals);
// otherwise the modes it had are restored (keys typed after the answer are kept). TCSAFLUSH
// drops what was typed before the switch.
// Non-canonical at the prompt only: not while a turn runs (typed lines steer it, as the line
// discipline reads them) nor while a question is shown (keys_mode), nor in the background.
void Console::sync_edit_mode() {
  const bool want = editing_ && !stdin_eof_ && !shown_ && !line_mode_ && !view_->busy();
  if (want == edit_mode_.has_value() || ::tcgetpgrp(STDIN_FILENO) != ::getpgrp()) return;
  if (!want) {
    (void)::tcsetattr(STDIN_FILENO, TCSANOW, &*edit_mode_);
    edit_mode_.reset();
    return;
  }
  termios t{};
  if (::tcgetattr(STDIN_FILENO, &t) != 0) return;
  edit_mode_ = t;
  t.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // ISIG stays: Ctrl-C is a signal
  t.c_cc[VMIN] = 1;
  t.c_cc[VTIME] = 0;
  (void)::tcsetattr(STDIN_FILENO, TCSANOW, &t);
}

// Keys at the prompt: the line is redrawn as it is edited; Enter takes it as a typed line.
void Console::edit(std::string_view keys) {
  for (const LineEditor::Step& step : editor_.feed(keys)) {
    if (step.kind == LineEditor::Step::Kind::kEnd) return end_of_input();
    std::fputc('\n', stderr);
    take_line(step.line);
  }
  if (!edit_mode_ || shown_ || view_->busy()) return;
  const std::string line = editor_.render("> ");
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
}

void Console::keys_mode(bool single) {
  if (single && !line_mode_) {
    termios t{};
    if (::tcgetattr(STDIN_FILENO, &t) != 0) return;
    line_mode_ = t;
    t.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    (void)::tcsetattr(STDIN_FILENO, TCSAFLUSH, &t);
  } else if (!single && line_mode_) {
    (void)::tcsetattr(STDIN_FILENO, TCSANOW, &*line_mode_);
    line_mode_.reset();
  }
}

void Console::answer(const std::optional<std::string>& line) {
  if (asks_.empty()) return;
  guard_until_.reset();
  keys_mode(false);
  const PersonAnswer a = parse_answer(line);
  if (view_) view_->erase();  // drawn again below the answer
  if (shown_) print_answer(a);
  if (channel_.valid())
    (void)sandbox::send_message(channel_.get(),
                                sandbox::AnswerMsg{asks_.front().first, a.allow, a.for_session});
  asks_.pop_front();
  shown_ = false;
  show_question();
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
  Console console(loop, o, in, out, err, sigpipe ? std::move(sigpipe->r) : UniqueFd());
  const int status = console.run();
  // The private moatd writes session.end and its last checkpoint once the loop's connection
  // has closed: the run is over when that is on disk.
  if (o.moatd_pid > 0) {
    while (::waitpid(o.moatd_pid, nullptr, 0) < 0 && errno == EINTR) {}
  }
  std::fflush(nullptr);
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

}  // namespace

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

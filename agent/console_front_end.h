// agent/console_front_end.h: what `moat run`'s console needs from its front end. The console
// (console.cc) keeps the processes and the pipes: it waits on stdin, moatd's console channel,
// the loop's output and its signals, and hands each front end what arrives. There is one front
// end per mode (agent/run_mode.h, agent/console_modes.h): plain (-p, --json: the loop's output
// passed on, nobody asked), RPC (agent/rpc_console.h) and terminal (typed lines and keys,
// moatd's questions drawn, the loop's events drawn: agent/console_terminal.h).
#pragma once

#include <chrono>
#include <csignal>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace moat::agent {

// What the console does for its front end.
class ConsoleLink {
 public:
  virtual ~ConsoleLink() = default;
  // The loop's stdin is open (the loop reads typed lines or commands).
  virtual bool loop_reads() const = 0;
  // Writes bytes to the loop's stdin (non-blocking): false when they did not all go.
  virtual bool write_to_loop(std::string_view bytes) = 0;
  // The loop sees its input end.
  virtual void end_loop_input() = 0;
  // Sends an answer to moatd's question over the console channel (while it is open).
  virtual void send_answer(const std::string& ask, bool allow, bool for_session) = 0;
  // The loop's output already in its pipes, handed on without waiting for more.
  virtual void drain_loop_output() = 0;
  // Sends a signal to the loop (SIGINT cancels its turn, SIGTERM ends it).
  virtual void signal_loop(int sig) = 0;
};

// A mode's front end: everything the console does differently per mode happens here.
class ConsoleFrontEnd {
 public:
  explicit ConsoleFrontEnd(ConsoleLink& link) : link_(link) {}
  virtual ~ConsoleFrontEnd() = default;

  // Before the first wait (a terminal session's first prompt goes to the loop).
  virtual void start() {}
  // Before each wait, and how long it may sleep at most (none: until an fd or a signal).
  virtual void before_wait() {}
  virtual std::optional<std::chrono::milliseconds> wake_in() const { return std::nullopt; }
  // After each round of fds: redraws what moves.
  virtual void after_round() {}

  // Whether stdin is read now.
  virtual bool wants_stdin() const { return false; }
  // stdin's bytes, and its end.
  virtual void input(std::string_view) {}
  virtual void input_ended() {}
  // Bytes waiting for the loop's stdin, written when it takes them (sent_to_loop: how many).
  virtual std::string_view for_loop() const { return {}; }
  virtual void sent_to_loop(std::size_t) {}

  // moatd asks (`ask`: its id); the channel ended, so no question is open any more.
  virtual void ask(const std::string& ask, const std::string& question) = 0;
  virtual void channel_ended() {}
  // While true the loop's output waits in its pipes (a question is on the screen).
  virtual bool holds_loop_output() const { return false; }

  // The loop's stdout: its events (its text with -p).
  virtual void loop_output(std::string_view bytes) = 0;
  // The loop has exited and all it wrote is in.
  virtual void loop_ended() {}
  // Around the loop's stderr on the terminal: what the front end keeps drawn is taken off,
  // then drawn again below it.
  virtual void erase() {}
  virtual void draw() {}

  // Ctrl-C (SIGINT reached the console).
  virtual void interrupt() { cancel_then_quit(); }

 protected:
  // The first Ctrl-C cancels the turn (the loop's own handler: the session and the audit log
  // end cleanly); a second one ends the loop at once. True for the first.
  bool cancel_then_quit() {
    const bool first = ++interrupts_ == 1;
    link_.signal_loop(first ? SIGINT : SIGTERM);
    return first;
  }
  // Ctrl-C counts afresh (a terminal session's turn is over).
  void interrupts_reset() { interrupts_ = 0; }
  int interrupts() const { return interrupts_; }

  ConsoleLink& link_;

 private:
  int interrupts_ = 0;
};

}  // namespace moat::agent

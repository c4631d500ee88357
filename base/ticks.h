// base/ticks.h: every tick left in moat, in one place, each with its reason (issue 28 point 4).
// A tick is a timed wake-up that polls for something nothing announces. Stops and deadlines
// are not ticks: a stop is a std::stop_token (a std::stop_callback wakes the waiter, an
// eventfd wakes a poll loop), a deadline is a wait until that time. A new tick needs a reason
// here: what it polls, and why no fd or callback can announce it.
#pragma once

#include <chrono>

namespace moat::ticks {

using std::chrono::milliseconds;

// sandbox/console_link.cc: a call waiting for the person's answer to a question re-checks its
// cancel, a bare flag raised by the connection's RunningCalls, the exec gate or the proxy (none
// wakes the wait). Not a thread per waiting ask that turns the flag into a stop: moatd bounds
// its threads by the calls it runs (MoatdBoundsTest.PendingAsksBeyondTheCapAreRefused...).
inline constexpr milliseconds kAskCancel{100};

// sandbox/supervisor.cc's serve_socket: moatd's stop arrives as a bare std::atomic<bool> that
// its SIGTERM/SIGINT handler stores (sandbox/moatd_main.cc) without waking the accept loop's
// poll, and a finished client's thread is joined at the next wake-up. Goes when the handler
// writes an eventfd the loop polls beside the listener.
inline constexpr milliseconds kAcceptLoop{200};

// agent/terminal_relay.cc: the person's window size, copied to the pty of a command run at a
// terminal. SIGWINCH reaches moat, whose handler is the console's; the relay polls the size
// instead of taking the signal from it.
inline constexpr milliseconds kTerminalSize{200};

// sandbox/session_exec.cc: a running exec call checks what raises no fd at this tick: the exec
// watch's CPU budget (ExecWatch::over_budget, set by the watch's thread without a wake) and a
// StopFlags flag given without its wake fd (a bare atomic a test stores). A
// call's cancel (CallCancel::raise), its exit, its output and its deadline wake the loop at once.
inline constexpr milliseconds kExecCall{50};

// agent/console.cc and console_terminal.cc: the console's poll sleeps until an fd or a signal
// wakes it, except while the run is in a background job (or the signal pipe could not be
// made): a terminal's foreground can change without a signal to this process (tcsetpgrp by
// another), and the run reads its terminal again once it is in the foreground.
inline constexpr milliseconds kForeground{100};

// agent/terminal_view.cc: the running calls' block (spinner, time, last output) is redrawn at
// most this often: output arrives as fast as a command or an MCP server's progress comes (a
// server may send 2000 messages a second), and a person reads no faster.
inline constexpr milliseconds kViewRedraw{100};

// sandbox/mcp_call.cc: an MCP server's progress notifications for a running call are forwarded
// to the agent at most this often (and the last, which says the work is done): a server may send
// 2000 a second, and the terminal view redraws no faster than kViewRedraw anyway.
inline constexpr milliseconds kProgressForward{100};

// sandbox/cgroup.cc: a session's cgroup directory is removed once the kernel has released the
// pid namespace's processes, a moment after the init is reaped (rmdir fails with EBUSY until
// then; nothing moat reads announces it on cgroup v1). Retried at this tick, 50 times at most.
inline constexpr milliseconds kCgroupRelease{10};

// sandbox/cgroup.cc: moatd's warm-up moves itself into its own cgroup again at this tick until
// the first session's attach is done (or kAttachWarmFor passed): the kernel's lock goes cold a
// grace period or two (about 20 ms here) after its last writer, and a write within 10 ms of the
// last one takes 0.15 ms, where a cold one waits 5-15 ms. Nothing announces the end of a grace
// period to user space.
inline constexpr milliseconds kCgroupKeepWarm{5};

// agent/resident.cc: a resident moatd just started is connected to at this tick until it
// accepts: it is nobody's child (a double fork detaches it), so no pipe or exit announces its
// listen(2), and an inotify watch would see the bind, not the listen that follows it.
inline constexpr milliseconds kResidentStart{2};
// Not a tick, the bound of that wait: moatd starts in tens of milliseconds.
inline constexpr milliseconds kResidentStartTimeout{5000};

}  // namespace moat::ticks

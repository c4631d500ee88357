// base/ticks.h: every tick left in moat, in one place, each with its reason (issue 28 point 4).
// A tick is a timed wake-up that polls for something nothing announces. Stops and deadlines
// are not ticks: a stop is a std::stop_token (a std::stop_callback wakes the waiter, an
// eventfd wakes a poll loop), a deadline is a wait until that time. A new tick needs a reason
// here: what it polls, and why no fd or callback can announce it.
#pragma once

#include <chrono>

namespace moat::ticks {

using std::chrono::milliseconds;

// agent/terminal_relay.cc: the person's window size, copied to the pty of a command run at a
// terminal. SIGWINCH reaches moat, whose handler is the console's; the relay polls the size
// instead of taking the signal from it.
inline constexpr milliseconds kTerminalSize{200};

// sandbox/console_link.cc: a question waiting for the person notices the call's cancel. The
// cancel is an atomic the cancel frame raises (sandbox/running_calls.h) and nothing wakes the
// question's wait with it; it goes when the running call's cancel becomes a std::stop_source.
inline constexpr milliseconds kAskCancel{100};

}  // namespace moat::ticks

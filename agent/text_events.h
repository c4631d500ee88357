// agent/text_events.h: a run's events (agent/events.h) as text: the final answer on stdout,
// progress, calls and status lines on stderr.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "agent/events.h"

namespace moat::agent {

// -p/--print, the default headless mode: stdout gets the final answer and nothing else, once
// the run has ended; everything else (earlier answers too) goes to stderr. (A run at a
// terminal writes JSON events, which the console draws: agent/terminal_view.h.)
std::unique_ptr<EventSink> text_event_sink();

// The status lines (stderr) of a note, error, gate, retry, cache_miss or result event, each
// ended by LF; "" for other events. The text is the event's: untrusted, shown as it is here
// (the console makes it visible). `said`: the message of the error event shown last; a result
// whose detail repeats it leaves it out, so a provider error is printed once.
std::string event_status_lines(const nlohmann::json& e, std::string_view said = {});

}  // namespace moat::agent

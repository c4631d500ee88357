// agent/text_events.h: a run's events (agent/events.h) as a person reads them: the answer on
// stdout, progress, calls and status lines on stderr.
#pragma once

#include <memory>

#include "agent/events.h"

namespace moat::agent {

enum class TextMode {
  // -p/--print, the default headless mode: stdout gets the final answer and nothing else,
  // once the run has ended; everything else (earlier answers too) goes to stderr.
  kPrint,
  // A person at a terminal: the model's text streams on stdout as it comes; calls and status
  // lines go to stderr, each on a line of its own.
  kTerminal,
};

std::unique_ptr<EventSink> text_event_sink(TextMode mode);

}  // namespace moat::agent

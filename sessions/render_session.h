// sessions/render_session.h: sessions for people: one-line entries, the tree, a transcript,
// and a self-contained HTML page.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sessions/store.h"

namespace moat::sessions {

// &, <, >, " and ' escaped: model and repository text must not become markup.
std::string html_escape(std::string_view text);

// "user: fix the tests", "assistant: read(src/a.cc), bash(make)", "compaction: 51234 tokens"...
// Control characters are escaped; at most `width` bytes of text.
std::string entry_summary(const Entry& entry, size_t width = 80);

// The whole tree of a session, branches indented, labels shown, the leaf marked and each
// entry on the path to it starting with "* " (the others with two spaces).
// Linear runs stay at one indentation, so a 100,000-entry chain does not drift right.
std::string render_tree(const SessionStore& store);

// The root-to-entry path as a readable transcript.
std::string render_transcript(const std::vector<Entry>& path);

// A self-contained HTML page (inline CSS, no scripts) of the root-to-entry path.
std::string session_html(const SessionStore& store, const std::vector<Entry>& path);

}  // namespace moat::sessions

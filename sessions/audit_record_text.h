// sessions/audit_record_text.h: what one audit record holds, in a person's words, for every
// record type moatd writes (docs/sessions.md, "The audit log"): `moat audit show`'s row after
// its seq, time and type columns, and the same words in the HTML page's timeline.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "sessions/audit_view.h"

namespace moat::sessions {

// The text of `record`: its first line, then (for session.start, call and session.end) lines of
// their own, each starting "\n      ", for what a line cannot hold (policy layers, files written,
// nested .git removed). With `view` (the record's log), a call names its decision's rule and
// who decided, and an exec.end or net record the program it belongs to. Control characters are
// shown as spaces. A type with no renderer of its own shows its fields as JSON, so nothing the
// log holds is dropped (issue 27 item 9).
std::string record_text(const nlohmann::json& record, const AuditView* view = nullptr);

// Whether `type` has a renderer of its own (the test over docs/sessions.md's types asks).
bool has_record_text(std::string_view type);

// "CONNECT pypi.org:443 -> 151.101.0.223  allow (org.pypi, system layer)  up 1843 B, down
// 91022 B, 412.5 ms  by c4.3 pid 41290": one net record, as a call's card lists it too.
std::string net_text(const nlohmann::json& record, const AuditView* view = nullptr);

// `s` on one line: control characters as spaces (a record must not move the reader's cursor),
// cut at `width` bytes with "...". The one home of that rule for `show` and `--tree` rows.
std::string line_text(std::string_view s, size_t width);

}  // namespace moat::sessions

// agent/line_editor.cc: the prompt's line editor (line_editor.h).
#include "agent/line_editor.h"

#include <utility>

#include "agent/visible.h"

namespace moat::agent {
namespace {

constexpr std::size_t kMaxLine = 64u << 10;  // longer input is not taken
constexpr std::size_t kMaxHistory = 1000;    // lines kept for up/down
constexpr std::size_t kMaxSequence = 16;     // an escape sequence longer is dropped

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// A CSI or SS3 sequence is complete at its final byte (0x40..0x7E).
bool complete(std::string_view seq) {
  if (seq.size() < 2) return false;
  if (seq[1] != '[' && seq[1] != 'O') return true;  // ESC and one key (Alt-x): dropped
  if (seq.size() < 3) return false;
  const char last = seq.back();
  return last >= 0x40 && last <= 0x7e;
}

// The editing keys: a control key, or an escape sequence after its ESC (xterm's and the
// VT220's; O for application cursor mode).
struct Binding {
  std::string_view keys;
  LineEditor::Edit edit;
};
using E = LineEditor::Edit;
// clang-format off
constexpr Binding kBindings[] = {
    {"\x02", E::kLeft},  {"[D", E::kLeft},  {"OD", E::kLeft},                       // Ctrl-B, left
    {"\x06", E::kRight}, {"[C", E::kRight}, {"OC", E::kRight},                      // Ctrl-F, right
    {"\x01", E::kHome},  {"[H", E::kHome},  {"OH", E::kHome},  {"[1~", E::kHome},   // Ctrl-A, Home
    {"[7~", E::kHome},
    {"\x05", E::kEnd},   {"[F", E::kEnd},   {"OF", E::kEnd},   {"[4~", E::kEnd},    // Ctrl-E, End
    {"[8~", E::kEnd},
    {"\x7f", E::kBack},  {"\x08", E::kBack},                                        // backspace
    {"[3~", E::kDelete},                                                            // Delete
    {"\x15", E::kKillBefore},                                                       // Ctrl-U
    {"\x17", E::kKillWord},                                                         // Ctrl-W
    {"\x10", E::kUp},    {"[A", E::kUp},    {"OA", E::kUp},                         // Ctrl-P, up
    {"\x0e", E::kDown},  {"[B", E::kDown},  {"OB", E::kDown},                       // Ctrl-N, down
};
// clang-format on

}  // namespace

std::vector<LineEditor::Step> LineEditor::feed(std::string_view keys) {
  std::vector<Step> steps;
  for (const char c : keys) {
    if (!escape_.empty() || c == '\x1b') {
      escape_ += c;
      if (complete(escape_)) bound(std::string_view(std::exchange(escape_, {})).substr(1));
      if (escape_.size() > kMaxSequence) escape_.clear();
      continue;
    }
    if (!key(c, steps)) break;
  }
  return steps;
}

// One key; false once the input has ended (Ctrl-D on an empty line).
bool LineEditor::key(char c, std::vector<Step>& steps) {
  if (c == '\r' || c == '\n') {
    remember();
    steps.push_back({Step::Kind::kLine, std::exchange(line_, std::string())});
    cursor_ = 0;
    return true;
  }
  if (c == '\x04' && line_.empty()) {  // Ctrl-D: the end on an empty line
    steps.push_back({Step::Kind::kEnd, ""});
    return false;
  }
  if (c == '\x04') {  // else it deletes the character under the cursor
    apply(Edit::kDelete);
    return true;
  }
  if (bound(std::string_view(&c, 1))) return true;
  // Other controls are not taken: they would act on the terminal when the line is drawn.
  if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || line_.size() >= kMaxLine) return true;
  line_.insert(cursor_, 1, c);
  ++cursor_;  // a character's next bytes follow it here
  return true;
}

// Applies the edit `keys` is bound to (kBindings); false when it is bound to none.
bool LineEditor::bound(std::string_view keys) {
  for (const Binding& b : kBindings)
    if (b.keys == keys) {
      apply(b.edit);
      return true;
    }
  return false;
}

void LineEditor::apply(Edit edit) {
  std::size_t from = cursor_;
  switch (edit) {
    case Edit::kLeft: cursor_ = char_before(cursor_); return;
    case Edit::kRight: cursor_ = char_after(cursor_); return;
    case Edit::kHome: cursor_ = 0; return;
    case Edit::kEnd: cursor_ = line_.size(); return;
    case Edit::kDelete: line_.erase(cursor_, char_after(cursor_) - cursor_); return;
    case Edit::kUp: return recall(-1);
    case Edit::kDown: return recall(+1);
    case Edit::kBack: from = char_before(cursor_); break;
    case Edit::kKillBefore: from = 0; break;
    case Edit::kKillWord:  // the word before the cursor, and the spaces after it
      while (from > 0 && line_[from - 1] == ' ') --from;
      while (from > 0 && line_[from - 1] != ' ') --from;
      break;
  }
  line_.erase(from, cursor_ - from);
  cursor_ = from;
}

// An Enter'd line joins the history (not twice in a row), and up starts from it again.
void LineEditor::remember() {
  if (!line_.empty() && (history_.empty() || history_.back() != line_)) {
    history_.push_back(line_);
    if (history_.size() > kMaxHistory) history_.erase(history_.begin());
  }
  recalled_ = history_.size();
}

void LineEditor::recall(int step) {
  if (step < 0 && recalled_ == 0) return;
  if (step > 0 && recalled_ >= history_.size()) return;
  if (recalled_ == history_.size()) typed_ = line_;
  recalled_ = step < 0 ? recalled_ - 1 : recalled_ + 1;
  line_ = recalled_ == history_.size() ? typed_ : history_[recalled_];
  cursor_ = line_.size();
}

std::size_t LineEditor::char_before(std::size_t at) const {
  if (at == 0) return 0;
  --at;
  while (at > 0 && continuation(line_[at])) --at;
  return at;
}

std::size_t LineEditor::char_after(std::size_t at) const {
  if (at >= line_.size()) return line_.size();
  ++at;
  while (at < line_.size() && continuation(line_[at])) ++at;
  return at;
}

std::string LineEditor::render(std::string_view prompt) const {
  std::string out = "\r\x1b[K" + std::string(prompt) + visible(line_);
  const std::size_t back = display_width(visible(std::string_view(line_).substr(cursor_)));
  if (back > 0) out += "\x1b[" + std::to_string(back) + "D";
  return out;
}

void LineEditor::clear() {
  line_.clear();
  escape_.clear();
  cursor_ = 0;
  recalled_ = history_.size();
}

}  // namespace moat::agent

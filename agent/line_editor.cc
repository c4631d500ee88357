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

}  // namespace

std::vector<LineEditor::Step> LineEditor::feed(std::string_view keys) {
  std::vector<Step> steps;
  for (const char c : keys) {
    if (!escape_.empty() || c == '\x1b') {
      escape_ += c;
      if (complete(escape_)) sequence(std::exchange(escape_, std::string()));
      if (escape_.size() > kMaxSequence) escape_.clear();
      continue;
    }
    if (!key(c, steps)) break;
  }
  return steps;
}

// One key; false once the input has ended (Ctrl-D on an empty line).
bool LineEditor::key(char c, std::vector<Step>& steps) {
  switch (c) {
    case '\r':
    case '\n':
      if (!line_.empty() && (history_.empty() || history_.back() != line_)) {
        history_.push_back(line_);
        if (history_.size() > kMaxHistory) history_.erase(history_.begin());
      }
      steps.push_back({Step::Kind::kLine, std::exchange(line_, std::string())});
      cursor_ = 0;
      recalled_ = history_.size();
      return true;
    case '\x04':  // Ctrl-D: the end on an empty line, else the character under the cursor
      if (line_.empty()) {
        steps.push_back({Step::Kind::kEnd, ""});
        return false;
      }
      line_.erase(cursor_, char_after(cursor_) - cursor_);
      return true;
    case '\x01': cursor_ = 0; return true;                     // Ctrl-A
    case '\x05': cursor_ = line_.size(); return true;          // Ctrl-E
    case '\x02': cursor_ = char_before(cursor_); return true;  // Ctrl-B
    case '\x06': cursor_ = char_after(cursor_); return true;   // Ctrl-F
    case '\x7f':
    case '\x08': {  // backspace
      const std::size_t from = char_before(cursor_);
      line_.erase(from, cursor_ - from);
      cursor_ = from;
      return true;
    }
    case '\x15':  // Ctrl-U: all before the cursor
      line_.erase(0, cursor_);
      cursor_ = 0;
      return true;
    case '\x17': {  // Ctrl-W: the word before the cursor, and the spaces after it
      std::size_t from = cursor_;
      while (from > 0 && line_[from - 1] == ' ') --from;
      while (from > 0 && line_[from - 1] != ' ') --from;
      line_.erase(from, cursor_ - from);
      cursor_ = from;
      return true;
    }
    case '\x10': recall(-1); return true;  // Ctrl-P
    case '\x0e': recall(+1); return true;  // Ctrl-N
    default: break;
  }
  if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || line_.size() >= kMaxLine) return true;
  line_.insert(cursor_, 1, c);
  ++cursor_;  // a character's next bytes follow it here
  return true;
}

void LineEditor::sequence(std::string_view seq) {
  const std::string_view body = seq.substr(2);
  if (body == "D") cursor_ = char_before(cursor_);
  else if (body == "C") cursor_ = char_after(cursor_);
  else if (body == "H" || body == "1~" || body == "7~") cursor_ = 0;
  else if (body == "F" || body == "4~" || body == "8~") cursor_ = line_.size();
  else if (body == "A") recall(-1);
  else if (body == "B") recall(+1);
  else if (body == "3~") line_.erase(cursor_, char_after(cursor_) - cursor_);  // Delete
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

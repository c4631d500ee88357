// agent/visible.cc: control characters shown as `cat -v` shows them (visible.h).
#include "agent/visible.h"

#include <utf8proc.h>

#include <algorithm>
#include <utility>

namespace moat::agent {
namespace {

// ^X for the C0 control c, ^? for DEL.
void append_caret(std::string& out, unsigned char c) {
  out += '^';
  out += c == 0x7f ? '?' : static_cast<char>(c + 0x40);
}

// The length of the UTF-8 character at `s` (1 for a byte that is not UTF-8) and its columns.
std::size_t next_char(std::string_view s, std::size_t* columns) {
  utf8proc_int32_t cp = 0;
  const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                  static_cast<utf8proc_ssize_t>(s.size()), &cp);
  if (n <= 0) {
    *columns = 1;
    return 1;
  }
  *columns = static_cast<std::size_t>(std::max(0, utf8proc_charwidth(cp)));
  return static_cast<std::size_t>(n);
}

}  // namespace

std::size_t display_width(std::string_view text) {
  std::size_t columns = 0;
  for (std::size_t i = 0, w = 0; i < text.size(); columns += w) i += next_char(text.substr(i), &w);
  return columns;
}

std::string Wrapper::feed(std::string_view text, std::size_t width) {
  width_ = std::max<std::size_t>(width, 8);
  std::string out;
  for (const char c : text) {
    if (c == '\n') {
      out += flush() + "\n";
      spaces_.clear();
      column_ = 0;
    } else if (c == ' ' || c == '\t') {
      if (!word_.empty()) out += flush();
      spaces_ += c;
    } else {
      word_ += c;
    }
  }
  return out;
}

// The spaces before the word and the word, on this line if they fit, else on the next one
// without the spaces.
std::string Wrapper::flush() {
  if (word_.empty()) return "";
  std::size_t after_spaces = column_;
  for (const char c : spaces_)
    after_spaces = c == '\t' ? (after_spaces / 8 + 1) * 8 : after_spaces + 1;
  std::string out;
  if (column_ > 0 && after_spaces + display_width(word_) > width_) {
    out += '\n';
    column_ = 0;
  } else {
    out += spaces_;
    column_ = after_spaces;
  }
  spaces_.clear();
  // A word longer than the line: broken where the width ends, never inside a character.
  const std::string_view word = word_;
  for (std::size_t i = 0, n = 0; i < word.size(); i += n) {
    std::size_t columns = 0;
    n = next_char(word.substr(i), &columns);
    if (column_ + columns > width_ && column_ > 0) {
      out += '\n';
      column_ = 0;
    }
    out += word.substr(i, n);
    column_ += columns;
  }
  word_.clear();
  return out;
}

std::string wrapped(std::string_view text, std::size_t width) {
  Wrapper w;
  std::string out = w.feed(text, width);
  return out + w.flush();
}

std::string visible(std::string_view bytes, std::string& carry) {
  std::string in = std::exchange(carry, std::string()) + std::string(bytes);
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    const auto c = static_cast<unsigned char>(in[i]);
    if (c == 0xc2) {
      if (i + 1 == in.size()) {
        carry = "\xc2";
        break;
      }
      const auto next = static_cast<unsigned char>(in[i + 1]);
      if (next >= 0x80 && next <= 0x9f) {
        ++i;  // a C1 control: ESC by another name (CSI is C2 9B)
        out += "M-";
        append_caret(out, static_cast<unsigned char>(next - 0x80));
        continue;
      }
    }
    if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
      append_caret(out, c);
      continue;
    }
    out += static_cast<char>(c);
  }
  return out;
}

std::string visible(std::string_view text) {
  std::string carry;
  std::string out = visible(text, carry);
  return out + carry;
}

std::string one_line(std::string s, std::size_t max) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  if (s.size() > max) s = s.substr(0, max) + "...";
  return s;
}

}  // namespace moat::agent

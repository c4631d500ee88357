// agent/visible.h: untrusted text made safe to show a person: control characters and escape
// sequences are shown, as `cat -v` shows them, instead of acted on by the terminal.
#pragma once

#include <string>
#include <string_view>

namespace moat::agent {

// Every byte a terminal would act on becomes visible text: C0 controls except \t and \n as
// ^@..^_ (ESC is ^[, CR is ^M), DEL as ^?, and C1 controls (UTF-8 C2 80..9F) as M-^@..M-^_,
// as `cat -v` shows the byte 0x80..0x9F. Other UTF-8 passes unchanged. `carry` holds a C2
// split from its next byte between calls (a stream read in pieces).
std::string visible(std::string_view bytes, std::string& carry);

// The same for one whole piece of text (a lone C2 at its end is kept: it is not a control).
std::string visible(std::string_view text);

// `s` on one line (newlines and tabs as spaces), cut at `max` bytes with "...".
std::string one_line(std::string s, std::size_t max);

// Columns a piece of UTF-8 takes on a terminal (utf8proc's character widths; a byte that is
// not UTF-8 counts one).
std::size_t display_width(std::string_view text);

// Text already made visible, wrapped for a terminal `width` columns wide as it streams in:
// lines break at spaces (the spaces at a break are dropped); a word longer than the width is
// broken where the width ends. The word being typed, and the spaces before it, are held until
// a space, a newline or flush() ends it.
class Wrapper {
 public:
  // What to write now of `text` (a stream's next piece), for a terminal `width` wide.
  std::string feed(std::string_view text, std::size_t width);
  // The word held back, written where it fits (spaces with no word after them are dropped);
  // the cursor is then at column().
  std::string flush();
  std::size_t column() const { return column_; }
  bool holding() const { return !word_.empty() || !spaces_.empty(); }
  // A newline was written around the wrapper (column 0).
  void newline() {
    column_ = 0;
    spaces_.clear();
  }

 private:
  std::string word_, spaces_;
  std::size_t column_ = 0, width_ = 80;
};

// One whole piece of text wrapped (Wrapper), for a terminal `width` wide.
std::string wrapped(std::string_view text, std::size_t width);

}  // namespace moat::agent
